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
        group = nodegroup.create(cluster_obj.get(data["cluster_id"]), data["name"])
        set_status(201)
        return nodegroup.to_dict(group)


class NodeGroupHandler(ItemHandler):
    objects = nodegroup
    update_schema = schemas.NODEGROUP_UPDATE
