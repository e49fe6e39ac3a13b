"""/nodegroups: the racks of a cluster."""
from nailgun_host import schemas
from nailgun_host.api.base import BaseHandler, filter_by_cluster, get_object_or_404, json_body, set_status
from nailgun_host.db import db
from nailgun_host.db.models import Cluster, NodeGroup
from nailgun_host.objects import nodegroup


class NodeGroupCollectionHandler(BaseHandler):
    def GET(self):
        groups = filter_by_cluster(db.query(NodeGroup).order_by(NodeGroup.id), NodeGroup.cluster_id)
        return [nodegroup.to_dict(g) for g in groups]

    def POST(self):
        data = json_body(schemas.NODEGROUP_CREATE)
        group = nodegroup.create(get_object_or_404(Cluster, data["cluster_id"]), data["name"])
        set_status(201)
        return nodegroup.to_dict(group)


class NodeGroupHandler(BaseHandler):
    def GET(self, group_id):
        return nodegroup.to_dict(get_object_or_404(NodeGroup, group_id))

    def PUT(self, group_id):
        group = get_object_or_404(NodeGroup, group_id)
        return nodegroup.to_dict(nodegroup.rename(group, json_body(schemas.NODEGROUP_UPDATE)["name"]))

    def DELETE(self, group_id):
        nodegroup.delete(get_object_or_404(NodeGroup, group_id))
        set_status(204)
