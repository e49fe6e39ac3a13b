"""/nodes: discovered servers, their interfaces and disks."""
from nailgun_host import errors, extensions, schemas
from nailgun_host.api.base import (BaseHandler, CollectionHandler, ItemHandler, id_list_param, id_param,
                                   query, set_status)
from nailgun_host.objects import node as node_obj


class NodeCollectionHandler(CollectionHandler):
    objects = node_obj
    create_schema = schemas.NODE_CREATE
    request_schemas = {"PUT": schemas.NODES_UPDATE}

    def filters(self):
        """``?cluster_id=N``: the cluster's nodes; ``?cluster_id=`` (or null, None): unassigned ones."""
        cluster_id = query().get("cluster_id")
        if cluster_id is None:
            return {}
        return {"cluster_id": None if cluster_id in ("", "null", "None") else id_param("cluster_id")}

    def PUT(self):
        data = self.body()
        node_obj.lock_with_clusters(list(dict.fromkeys(item["id"] for item in data)),
                                    [item.get("cluster_id") for item in data])
        nodes = [node_obj.update(node_obj.get(item["id"], lock=True), item) for item in data]
        return [node_obj.to_dict(n) for n in nodes]

    def DELETE(self):
        ids = id_list_param("ids")
        if not ids:
            raise errors.InvalidData("Node ids are required: ?ids=1,2")
        nodes = node_obj.lock_with_clusters(list(dict.fromkeys(ids)))
        extensions.fire("on_node_collection_delete", ids)
        for node in nodes:
            node_obj.delete(node)
        set_status(204)


class NodeHandler(ItemHandler):
    """PUT and DELETE lock the node's clusters (the one it is in, the one it moves to) before its row."""
    objects = node_obj
    update_schema = schemas.NODE_UPDATE

    def PUT(self, object_id):
        data = self.body()
        node, = node_obj.lock_with_clusters([node_obj.get(object_id).id], [data.get("cluster_id")])
        return node_obj.to_dict(node_obj.update(node, data))

    def DELETE(self, object_id):
        node, = node_obj.lock_with_clusters([node_obj.get(object_id).id])
        node_obj.delete(node)
        set_status(204)


class NodeInterfacesHandler(BaseHandler):
    request_schemas = {"PUT": schemas.INTERFACES}

    def GET(self, node_id):
        return [node_obj.interface_to_dict(i) for i in node_obj.get(node_id).interfaces]

    def PUT(self, node_id):
        node = node_obj.get(node_id, lock=True)
        node_obj.set_interfaces(node, self.body())
        return [node_obj.interface_to_dict(i) for i in node.interfaces]


class NodeDisksHandler(BaseHandler):
    request_schemas = {"PUT": schemas.DISKS}

    def GET(self, node_id):
        return node_obj.get(node_id).volumes

    def PUT(self, node_id):
        return node_obj.set_volumes(node_obj.get(node_id, lock=True), self.body())
