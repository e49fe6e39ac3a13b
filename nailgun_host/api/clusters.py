"""/clusters: environments, their attributes, extensions, node assignment and tasks."""
from nailgun_host import errors, extensions, policy, schemas
from nailgun_platform import secrets
from nailgun_host.api.base import (BaseHandler, CollectionHandler, ItemHandler, authorize_declassified,
                                   id_list_param, list_param, respond_with_task, set_status, shown)
from nailgun_host.objects import attributes
from nailgun_host.objects import cluster as cluster_obj
from nailgun_host.objects import node as node_obj
from nailgun_host.objects import serializers
from nailgun_host.objects import task as task_obj
from nailgun_platform.secrets import classify


class ClusterCollectionHandler(CollectionHandler):
    objects = cluster_obj
    create_schema = schemas.CLUSTER_CREATE


class ClusterHandler(ItemHandler):
    objects = cluster_obj
    #: deleting a cluster loses its credentials and configuration: administrators only
    policy_rules = {"DELETE": policy.ADMIN}
    update_schema = schemas.CLUSTER_UPDATE


class ClusterAttributesHandler(BaseHandler):
    """Editable attributes, their secret values masked for whoever may not see them; generated
    ones (credentials) only through ``/generated``."""

    request_schemas = {"PUT": schemas.ATTRIBUTES, "PATCH": schemas.ATTRIBUTES}
    policy_checks = {"GET": (policy.READ_SECRETS,), "PUT": (policy.CHANGE_SECRETS, policy.READ_SECRETS),
                     "PATCH": (policy.CHANGE_SECRETS, policy.READ_SECRETS)}

    def GET(self, cluster_id):
        return _editable(cluster_obj.get(cluster_id).editable_attributes)

    def PUT(self, cluster_id):
        cluster = cluster_obj.get(cluster_id, lock=True)
        cluster_obj.update_editable(cluster, self.body()["editable"], replace=True,
                                    authorize_declassified=authorize_declassified)
        return _editable(cluster.editable_attributes)

    def PATCH(self, cluster_id):
        cluster = cluster_obj.get(cluster_id, lock=True)
        cluster_obj.update_editable(cluster, self.body()["editable"], authorize_declassified=authorize_declassified)
        return _editable(cluster.editable_attributes)


def _editable(editable):
    return {"editable": shown(editable, secrets.attribute_secrets(editable))}


class ClusterAttributesDefaultsHandler(BaseHandler):
    policy_checks = {"GET": (policy.READ_SECRETS,)}

    def GET(self, cluster_id):
        return _editable(cluster_obj.get(cluster_id).release.attributes_metadata.get("editable", {}))


class ClusterGeneratedHandler(BaseHandler):
    """Nailgun's ClusterGeneratedData: the generated attributes (credentials) as they are, to
    identities allowed to read secrets only."""

    policy_rules = {"GET": policy.READ_SECRETS, "HEAD": policy.READ_SECRETS}

    def GET(self, cluster_id):
        return cluster_obj.get(cluster_id).generated_attributes


class ClusterExtensionsHandler(BaseHandler):
    request_schemas = {"PUT": schemas.EXTENSIONS}

    def GET(self, cluster_id):
        return cluster_obj.get(cluster_id).extensions

    def PUT(self, cluster_id):
        cluster = cluster_obj.get(cluster_id, lock=True)
        names = self.body()
        _check_known(names)
        cluster.extensions = sorted(set(cluster.extensions) | set(names))
        return cluster.extensions

    def DELETE(self, cluster_id):
        cluster = cluster_obj.get(cluster_id, lock=True)
        names = list_param("extension_names")
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


class ClusterAssignmentHandler(BaseHandler):
    """POST [{"id": node, "roles": [...]}]: nodes join the cluster with pending roles."""

    request_schemas = {"POST": schemas.ASSIGNMENT}

    def POST(self, cluster_id):
        cluster = cluster_obj.get(cluster_id, lock=True)
        data = self.body()
        for item, node in zip(data, node_obj.get_many([item["id"] for item in data], lock=True)):
            if node.cluster_id is not None:
                raise errors.InvalidData("Node {0} is already assigned to cluster {1}".format(
                    node.id, node.cluster_id))
            node_obj.assign_to_cluster([node], cluster, item.get("roles", []))
        return [node_obj.to_dict(n) for n in cluster.nodes]


class ClusterUnassignmentHandler(BaseHandler):
    request_schemas = {"POST": schemas.UNASSIGNMENT}

    def POST(self, cluster_id):
        cluster = cluster_obj.get(cluster_id, lock=True)
        nodes = node_obj.get_many([item["id"] for item in self.body()], lock=True)
        _check_in_cluster(nodes, cluster)
        for node in nodes:
            node_obj.remove_from_cluster(node)
        return {}


def _check_in_cluster(nodes, cluster):
    for node in nodes:
        if node.cluster_id != cluster.id:
            raise errors.InvalidData("Node {0} is not in cluster {1}".format(node.id, cluster.id))


def _selected_nodes(cluster, default):
    """The nodes of ``?nodes=1,2`` (all in the cluster), or the cluster's nodes ``default`` picks."""
    ids = id_list_param("nodes")
    if not ids:
        return [n for n in cluster.nodes if default(n)]
    nodes = node_obj.get_many(ids)
    _check_in_cluster(nodes, cluster)
    return nodes


class ClusterProvisionHandler(BaseHandler):
    def PUT(self, cluster_id):
        cluster = cluster_obj.get(cluster_id, lock=True)
        nodes = _selected_nodes(cluster, lambda n: n.pending_addition or n.status == "discover")
        if not nodes:
            raise errors.InvalidData("No nodes to provision in environment {0}".format(cluster.id))
        return respond_with_task(task_obj.provision(cluster, nodes))


class ClusterDeployHandler(BaseHandler):
    def PUT(self, cluster_id):
        cluster = cluster_obj.get(cluster_id, lock=True)
        nodes = _selected_nodes(cluster, lambda n: n.pending_addition or n.pending_roles
                                or n.status in ("provisioned", "error"))
        if not nodes:
            raise errors.InvalidData("No nodes to deploy in environment {0}".format(cluster.id))
        extensions.fire_for_cluster(cluster, "on_before_deployment_check", cluster, nodes)
        return respond_with_task(task_obj.deploy(cluster, nodes))


class ClusterDeploymentDefaultsHandler(BaseHandler):
    """GET the deployment info the orchestrator would get, per node, pipelines applied: clear
    for identities allowed to read secrets (it is what the deployment needs), masked for others."""

    policy_checks = {"GET": (policy.READ_SECRETS,)}

    def GET(self, cluster_id):
        cluster = cluster_obj.get(cluster_id)
        nodes = _selected_nodes(cluster, lambda n: True)
        info = serializers.deployment_info(cluster, nodes)
        editable = {"/editable" + pointer for pointer in attributes.value_secrets(cluster.editable_attributes)}
        answer = [dict(info["common"], **node) for node in info["nodes"]]
        return [shown(item, editable | classify.by_name(item, secrets.patterns())) for item in answer]
