"""/clusters: environments, their attributes, extensions, node assignment and tasks."""

from nailgun_host import errors, extensions
from nailgun_host.api.base import BaseHandler, query_param, set_status
from nailgun_host.db import db
from nailgun_host.db.models import Cluster, Node
from nailgun_host.objects import cluster as cluster_obj
from nailgun_host.objects import node as node_obj
from nailgun_host.objects import serializers
from nailgun_host.objects import task as task_obj

CREATE_SCHEMA = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 50},
        "release": {"type": "integer"},
        "release_id": {"type": "integer"},
        "mode": {"type": "string"},
        "net_provider": {"enum": list(cluster_obj.NET_PROVIDERS)},
        "net_segment_type": {"enum": ["vlan", "gre", "tun"]},
        "net_l23_provider": {"enum": ["ovs", "nsx"]},
        "ui_settings": {"type": "object"},
    },
}
UPDATE_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 50},
        "mode": {"type": "string"},
        "ui_settings": {"type": "object"},
        "is_customized": {"type": "boolean"},
        "status": {"enum": list(cluster_obj.STATUSES)},
    },
}
ATTRIBUTES_SCHEMA = {
    "type": "object", "required": ["editable"],
    "properties": {"editable": {"type": "object", "additionalProperties": {"type": "object"}}},
}
ASSIGNMENT_SCHEMA = {
    "type": "array", "minItems": 1,
    "items": {"type": "object", "required": ["id"], "properties": {
        "id": {"type": "integer"},
        "roles": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}},
}
UNASSIGNMENT_SCHEMA = {
    "type": "array", "minItems": 1,
    "items": {"type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}},
}
EXTENSIONS_SCHEMA = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}


def get_cluster(cluster_id):
    return BaseHandler.get_object_or_404(Cluster, cluster_id)


class ClusterCollectionHandler(BaseHandler):
    def GET(self):
        return [cluster_obj.to_dict(c) for c in db.query(Cluster).order_by(Cluster.id)]

    def POST(self):
        data = self.json_body(CREATE_SCHEMA)
        release_id = data.get("release_id", data.get("release"))
        if release_id is None:
            raise errors.InvalidData("'release_id' is a required property")
        cluster = cluster_obj.create(dict(data, release_id=release_id))
        set_status(201)
        return cluster_obj.to_dict(cluster)


class ClusterHandler(BaseHandler):
    def GET(self, cluster_id):
        return cluster_obj.to_dict(get_cluster(cluster_id))

    def PUT(self, cluster_id):
        cluster = get_cluster(cluster_id)
        return cluster_obj.to_dict(cluster_obj.update(cluster, self.json_body(UPDATE_SCHEMA)))

    def DELETE(self, cluster_id):
        cluster_obj.delete(get_cluster(cluster_id))
        set_status(204)


class ClusterAttributesHandler(BaseHandler):
    """Editable attributes only: generated ones (credentials) never leave the server."""

    def GET(self, cluster_id):
        return {"editable": get_cluster(cluster_id).editable_attributes}

    def PUT(self, cluster_id):
        cluster = get_cluster(cluster_id)
        cluster_obj.update_editable(cluster, self.json_body(ATTRIBUTES_SCHEMA)["editable"], replace=True)
        return {"editable": cluster.editable_attributes}

    def PATCH(self, cluster_id):
        cluster = get_cluster(cluster_id)
        cluster_obj.update_editable(cluster, self.json_body(ATTRIBUTES_SCHEMA)["editable"])
        return {"editable": cluster.editable_attributes}


class ClusterAttributesDefaultsHandler(BaseHandler):
    def GET(self, cluster_id):
        return {"editable": get_cluster(cluster_id).release.attributes_metadata.get("editable", {})}


class ClusterExtensionsHandler(BaseHandler):
    def GET(self, cluster_id):
        return get_cluster(cluster_id).extensions

    def PUT(self, cluster_id):
        cluster = get_cluster(cluster_id)
        names = self.json_body(EXTENSIONS_SCHEMA)
        _check_known(names)
        cluster.extensions = sorted(set(cluster.extensions) | set(names))
        return cluster.extensions

    def DELETE(self, cluster_id):
        cluster = get_cluster(cluster_id)
        names = [n for n in query_param("extension_names", "").split(",") if n]
        if not names:
            raise errors.InvalidData("Extension names are required: ?extension_names=a,b")
        _check_known(names)
        cluster.extensions = [n for n in cluster.extensions if n not in names]
        set_status(204)


def _check_known(names):
    loaded = {e.name for e in extensions.get_all_extensions()}
    unknown = sorted(set(names) - loaded)
    if unknown:
        raise errors.InvalidData("No such extensions: {0}".format(", ".join(unknown)))


def _load_nodes(ids):
    nodes = db.query(Node).filter(Node.id.in_(ids)).all() if ids else []
    found = {n.id for n in nodes}
    missing = [i for i in ids if i not in found]
    if missing:
        raise errors.ObjectNotFound("Nodes with ids {0} were not found".format(missing))
    order = {node_id: index for index, node_id in enumerate(ids)}
    return sorted(nodes, key=lambda n: order[n.id])


class ClusterAssignmentHandler(BaseHandler):
    """POST [{"id": node, "roles": [...]}]: nodes join the cluster with pending roles."""

    def POST(self, cluster_id):
        cluster = get_cluster(cluster_id)
        data = self.json_body(ASSIGNMENT_SCHEMA)
        for item, node in zip(data, _load_nodes([item["id"] for item in data])):
            if node.cluster_id is not None:
                raise errors.InvalidData("Node {0} is already assigned to cluster {1}".format(
                    node.id, node.cluster_id))
            node_obj.assign_to_cluster([node], cluster, item.get("roles", []))
        return [node_obj.to_dict(n) for n in cluster.nodes]


class ClusterUnassignmentHandler(BaseHandler):
    def POST(self, cluster_id):
        cluster = get_cluster(cluster_id)
        nodes = _load_nodes([item["id"] for item in self.json_body(UNASSIGNMENT_SCHEMA)])
        for node in nodes:
            if node.cluster_id != cluster.id:
                raise errors.InvalidData("Node {0} is not in cluster {1}".format(node.id, cluster.id))
        for node in nodes:
            node_obj.remove_from_cluster(node)
        return {}


def _selected_nodes(cluster, default):
    raw = query_param("nodes", "")
    if not raw:
        return [n for n in cluster.nodes if default(n)]
    try:
        ids = [int(x) for x in raw.split(",") if x]
    except ValueError:
        raise errors.InvalidData("'nodes' must be a comma-separated list of node ids")
    nodes = _load_nodes(ids)
    for node in nodes:
        if node.cluster_id != cluster.id:
            raise errors.InvalidData("Node {0} is not in cluster {1}".format(node.id, cluster.id))
    return nodes


def respond_with_task(task):
    set_status(200 if task.status in ("ready", "error") else 202)
    return task_obj.to_dict(task)


class ClusterProvisionHandler(BaseHandler):
    def PUT(self, cluster_id):
        cluster = get_cluster(cluster_id)
        nodes = _selected_nodes(cluster, lambda n: n.pending_addition or n.status == "discover")
        if not nodes:
            raise errors.InvalidData("No nodes to provision in environment {0}".format(cluster.id))
        return respond_with_task(task_obj.provision(cluster, nodes))


class ClusterDeployHandler(BaseHandler):
    def PUT(self, cluster_id):
        cluster = get_cluster(cluster_id)
        nodes = _selected_nodes(cluster, lambda n: n.pending_addition or n.pending_roles
                                or n.status in ("provisioned", "error"))
        if not nodes:
            raise errors.InvalidData("No nodes to deploy in environment {0}".format(cluster.id))
        extensions.fire_for_cluster(cluster, "on_before_deployment_check", cluster, nodes)
        return respond_with_task(task_obj.deploy(cluster, nodes))


class ClusterDeploymentDefaultsHandler(BaseHandler):
    """GET the deployment info the orchestrator would get, per node, pipelines applied."""

    def GET(self, cluster_id):
        cluster = get_cluster(cluster_id)
        nodes = _selected_nodes(cluster, lambda n: True)
        info = serializers.deployment_info(cluster, nodes)
        return [dict(info["common"], **node) for node in info["nodes"]]
