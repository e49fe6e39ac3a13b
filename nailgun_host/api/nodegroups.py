"""/nodegroups: the racks of a cluster."""
from nailgun_host import schemas
from nailgun_host.api.base import CollectionHandler, ItemHandler, id_param, set_status
from nailgun_host.objects import cluster as cluster_obj
from nailgun_host.objects import nodegroup


class NodeGroupCollectionHandler(CollectionHandler):
    objects = nodegroup
    create_schema = schemas.NODEGROUP_CREATE

    def filters(self):
        return {"cluster_id": id_param("cluster_id")}

    def POST(self):
        data = self.body()
        group = nodegroup.create(cluster_obj.get(data["cluster_id"], lock=True), data["name"])
        set_status(201)
        return nodegroup.to_dict(group)


class NodeGroupHandler(ItemHandler):
    """PUT and DELETE lock the group's cluster row before the group's (the lock order of config_session.py)."""
    objects = nodegroup
    update_schema = schemas.NODEGROUP_UPDATE

    def _locked(self, group_id):
        cluster_obj.get(nodegroup.get(group_id).cluster_id, lock=True)
        return nodegroup.get(group_id, lock=True)

    def PUT(self, object_id):
        return nodegroup.to_dict(nodegroup.update(self._locked(object_id), self.body()))

    def DELETE(self, object_id):
        nodegroup.delete(self._locked(object_id))
        set_status(204)
