"""Network configuration, VIPs and node groups of a cluster."""
from nailgun_host import errors, extensions
from nailgun_host.api.base import BaseHandler, filter_by_cluster, set_status
from nailgun_host.api.clusters import get_cluster
from nailgun_host.db import db
from nailgun_host.db.models import Cluster, NodeGroup
from nailgun_host.objects import cluster as cluster_obj
from nailgun_host.objects import network

_ADDRESS = {"type": "string"}
NETWORK_CONFIGURATION_SCHEMA = {
    "type": "object",
    "properties": {
        "networks": {"type": "array", "items": {
            "type": "object", "required": ["id"],
            "properties": {
                "id": {"type": "integer"},
                "cidr": {"type": ["string", "null"]},
                "gateway": {"type": ["string", "null"]},
                "vlan_start": {"type": ["integer", "null"], "minimum": 1, "maximum": 4094},
                "ip_ranges": {"type": "array", "items": {
                    "type": "array", "minItems": 2, "maxItems": 2, "items": _ADDRESS}},
                "meta": {"type": "object"},
            }}},
        "networking_parameters": network.NETWORKING_PARAMETERS_SCHEMA,
    },
}
NODEGROUP_SCHEMA = {
    "type": "object", "required": ["cluster_id", "name"],
    "properties": {"cluster_id": {"type": "integer"},
                   "name": {"type": "string", "minLength": 1, "maxLength": 50}},
}


class NetworkConfigurationHandler(BaseHandler):
    """GET/PUT /clusters/<id>/network_configuration/<neutron|nova_network>/."""

    def _cluster(self, cluster_id, provider):
        cluster = get_cluster(cluster_id)
        if cluster.net_provider != provider:
            raise errors.InvalidData("Wrong net provider: environment {0} uses {1}".format(
                cluster.id, cluster.net_provider))
        return cluster

    def GET(self, cluster_id, provider):
        return network.serialize_configuration(self._cluster(cluster_id, provider))

    def PUT(self, cluster_id, provider):
        cluster = self._cluster(cluster_id, provider)
        network.update_configuration(cluster, self.json_body(NETWORK_CONFIGURATION_SCHEMA))
        if {"name": "networks", "node_id": None} not in cluster.pending_changes:
            cluster.pending_changes = cluster.pending_changes + [{"name": "networks", "node_id": None}]
        return network.serialize_configuration(cluster)


class ClusterVIPsHandler(BaseHandler):
    def GET(self, cluster_id):
        return [network.vip_to_dict(v) for v in network.get_vips(get_cluster(cluster_id))]


def nodegroup_to_dict(group):
    return {"id": group.id, "cluster_id": group.cluster_id, "name": group.name,
            "is_default": group.is_default}


class NodeGroupCollectionHandler(BaseHandler):
    def GET(self):
        query = db.query(NodeGroup).order_by(NodeGroup.id)
        query = filter_by_cluster(query, NodeGroup.cluster_id)
        return [nodegroup_to_dict(g) for g in query]

    def POST(self):
        data = self.json_body(NODEGROUP_SCHEMA)
        cluster = self.get_object_or_404(Cluster, data["cluster_id"])
        group = cluster_obj.create_node_group(cluster, data["name"])
        set_status(201)
        return nodegroup_to_dict(group)


class NodeGroupHandler(BaseHandler):
    def GET(self, group_id):
        return nodegroup_to_dict(self.get_object_or_404(NodeGroup, group_id))

    def PUT(self, group_id):
        group = self.get_object_or_404(NodeGroup, group_id)
        data = self.json_body({"type": "object", "required": ["name"],
                               "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 50}}})
        if db.query(NodeGroup.id).filter(NodeGroup.cluster_id == group.cluster_id, NodeGroup.name == data["name"],
                                         NodeGroup.id != group.id).first():
            raise errors.AlreadyExists("Node group '{0}' already exists".format(data["name"]))
        group.name = data["name"]
        return nodegroup_to_dict(group)

    def DELETE(self, group_id):
        group = self.get_object_or_404(NodeGroup, group_id)
        if group.is_default:
            raise errors.InvalidData("Default node group cannot be deleted")
        extensions.fire("on_nodegroup_delete", group)
        db.delete(group)
        set_status(204)
