"""/nodes: discovered servers, their interfaces and disks."""
from nailgun_host import errors, extensions, schemas
from nailgun_host.api.base import BaseHandler, get_object_or_404, id_list_param, json_body, query, set_status
from nailgun_host.db.models import Node
from nailgun_host.objects import node as node_obj


def get_node(node_id):
    return get_object_or_404(Node, node_id, node_obj.NOT_FOUND.format(node_id))


class NodeCollectionHandler(BaseHandler):
    def GET(self):
        nodes = node_obj.query().order_by(Node.id)
        cluster_id = query().get("cluster_id")
        if cluster_id in ("", "null", "None"):
            nodes = nodes.filter(Node.cluster_id.is_(None))
        elif cluster_id is not None:
            nodes = nodes.filter(Node.cluster_id.in_(id_list_param("cluster_id")[:1]))
        return [node_obj.to_dict(n) for n in nodes]

    def POST(self):
        node = node_obj.create(json_body(schemas.NODE_CREATE))
        set_status(201)
        return node_obj.to_dict(node)

    def PUT(self):
        data = json_body(schemas.NODES_UPDATE)
        nodes = [node_obj.update(get_node(item["id"]), item) for item in data]
        return [node_obj.to_dict(n) for n in nodes]

    def DELETE(self):
        ids = id_list_param("ids")
        if not ids:
            raise errors.InvalidData("Node ids are required: ?ids=1,2")
        nodes = node_obj.get_many(list(dict.fromkeys(ids)))
        extensions.fire("on_node_collection_delete", ids)
        for node in nodes:
            node_obj.delete(node)
        set_status(204)


class NodeHandler(BaseHandler):
    def GET(self, node_id):
        return node_obj.to_dict(get_node(node_id))

    def PUT(self, node_id):
        return node_obj.to_dict(node_obj.update(get_node(node_id), json_body(schemas.NODE_UPDATE)))

    def DELETE(self, node_id):
        node_obj.delete(get_node(node_id))
        set_status(204)


class NodeInterfacesHandler(BaseHandler):
    def GET(self, node_id):
        return [node_obj.interface_to_dict(i) for i in get_node(node_id).interfaces]

    def PUT(self, node_id):
        node = get_node(node_id)
        node_obj.set_interfaces(node, json_body(schemas.INTERFACES))
        return [node_obj.interface_to_dict(i) for i in node.interfaces]


class NodeDisksHandler(BaseHandler):
    def GET(self, node_id):
        return get_node(node_id).volumes

    def PUT(self, node_id):
        return node_obj.set_volumes(get_node(node_id), json_body(schemas.DISKS))
