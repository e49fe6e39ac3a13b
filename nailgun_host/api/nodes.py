"""/nodes: discovered servers, their interfaces and disks."""
from sqlalchemy import orm

from nailgun_host import errors, extensions
from nailgun_host.api.base import BaseHandler, query_param, set_status
from nailgun_host.db import db
from nailgun_host.db.models import IPAddr, Node, NodeInterface
from nailgun_host.objects import node as node_obj

MAC = {"type": "string", "pattern": "^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$"}
ROLES = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
NODE_PROPERTIES = {
    "mac": MAC,
    "ip": {"type": ["string", "null"], "format": "ipv4"},
    "name": {"type": "string", "maxLength": 100},
    "meta": {"type": "object", "properties": {
        "interfaces": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "mac": MAC, "pxe": {"type": "boolean"}}}},
        "disks": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "size": {"type": "number", "minimum": 0}}}}}},
    "status": {"enum": list(node_obj.STATUSES)},
    "error_type": {"enum": list(node_obj.ERROR_TYPES) + [None]},
    "error_msg": {"type": ["string", "null"]},
    "online": {"type": "boolean"},
    "cluster_id": {"type": ["integer", "null"]},
    "roles": ROLES,
    "pending_roles": ROLES,
    "pending_addition": {"type": "boolean"},
    "pending_deletion": {"type": "boolean"},
    "manufacturer": {"type": ["string", "null"]},
    "platform_name": {"type": ["string", "null"]},
    "os_platform": {"type": ["string", "null"]},
    "kernel_params": {"type": ["string", "null"]},
    "progress": {"type": "integer", "minimum": 0, "maximum": 100},
}
CREATE_SCHEMA = {"type": "object", "required": ["mac"], "properties": NODE_PROPERTIES}
UPDATE_SCHEMA = {"type": "object", "properties": dict(NODE_PROPERTIES, id={"type": "integer"})}
BULK_UPDATE_SCHEMA = {"type": "array", "items": dict(UPDATE_SCHEMA, required=["id"])}
INTERFACES_SCHEMA = {"type": "array", "items": {
    "type": "object", "required": ["name"],
    "properties": {"name": {"type": "string", "minLength": 1}, "type": {"enum": ["ether", "bond"]},
                   "mode": {"type": "string"},
                   "slaves": {"type": "array", "items": {"type": "object", "required": ["name"]}},
                   "assigned_networks": {"type": "array", "items": {
                       "type": "object", "required": ["id"], "properties": {"id": {"type": "integer"}}}}}}}
DISKS_SCHEMA = {"type": "array", "items": {"type": "object", "required": ["id", "volumes"], "properties": {
    "id": {"type": "string"}, "volumes": {"type": "array", "items": {
        "type": "object", "required": ["name", "size"],
        "properties": {"name": {"type": "string"}, "size": {"type": "integer", "minimum": 0}}}}}}}


def _node_query():
    return db.query(Node).options(
        orm.selectinload(Node.ip_addrs).joinedload(IPAddr.network_data),
        orm.selectinload(Node.interfaces).selectinload(NodeInterface.assigned_networks))


def _check_mac_free(mac, exclude_id=None):
    query = db.query(Node.id).filter(Node.mac == mac.lower())
    if exclude_id:
        query = query.filter(Node.id != exclude_id)
    if query.first():
        raise errors.AlreadyExists("Node with mac {0} already exists".format(mac))


def _int_list(raw, name):
    try:
        return [int(x) for x in raw.split(",") if x]
    except ValueError:
        raise errors.InvalidData("'{0}' must be a comma-separated list of ids".format(name))


class NodeCollectionHandler(BaseHandler):
    def GET(self):
        query = _node_query().order_by(Node.id)
        cluster_id = query_param("cluster_id", None)
        if cluster_id is not None:
            if cluster_id in ("", "null", "None"):
                query = query.filter(Node.cluster_id.is_(None))
            else:
                query = query.filter(Node.cluster_id == _int_list(cluster_id, "cluster_id")[0])
        return [node_obj.to_dict(n) for n in query]

    def POST(self):
        data = self.json_body(CREATE_SCHEMA)
        _check_mac_free(data["mac"])
        node = node_obj.create(data)
        set_status(201)
        return node_obj.to_dict(node)

    def PUT(self):
        data = self.json_body(BULK_UPDATE_SCHEMA)
        nodes = []
        for item in data:
            node = self.get_object_or_404(Node, item["id"], "Node with id {0} was not found.".format(item["id"]))
            nodes.append(node_obj.update(node, item))
        return [node_obj.to_dict(n) for n in nodes]

    def DELETE(self):
        ids = _int_list(query_param("ids", ""), "ids")
        if not ids:
            raise errors.InvalidData("Node ids are required: ?ids=1,2")
        nodes = db.query(Node).filter(Node.id.in_(ids)).all()
        if len(nodes) != len(set(ids)):
            missing = sorted(set(ids) - {n.id for n in nodes})
            raise errors.ObjectNotFound("Nodes with ids {0} were not found".format(missing))
        extensions.fire("on_node_collection_delete", ids)
        for node in nodes:
            node_obj.delete(node)
        set_status(204)


class NodeHandler(BaseHandler):
    def _node(self, node_id):
        return self.get_object_or_404(Node, node_id, "Node with id {0} was not found.".format(node_id))

    def GET(self, node_id):
        return node_obj.to_dict(self._node(node_id))

    def PUT(self, node_id):
        node = self._node(node_id)
        data = self.json_body(UPDATE_SCHEMA)
        if "mac" in data:
            _check_mac_free(data["mac"], node.id)
            node.mac = data["mac"].lower()
        return node_obj.to_dict(node_obj.update(node, data))

    def DELETE(self, node_id):
        node_obj.delete(self._node(node_id))
        set_status(204)


class NodeInterfacesHandler(BaseHandler):
    def GET(self, node_id):
        node = self.get_object_or_404(Node, node_id, "Node with id {0} was not found.".format(node_id))
        return [node_obj.interface_to_dict(i) for i in node.interfaces]

    def PUT(self, node_id):
        node = self.get_object_or_404(Node, node_id, "Node with id {0} was not found.".format(node_id))
        node_obj.set_interfaces(node, self.json_body(INTERFACES_SCHEMA))
        return [node_obj.interface_to_dict(i) for i in node.interfaces]


class NodeDisksHandler(BaseHandler):
    def GET(self, node_id):
        return self.get_object_or_404(Node, node_id, "Node with id {0} was not found.".format(node_id)).volumes

    def PUT(self, node_id):
        node = self.get_object_or_404(Node, node_id, "Node with id {0} was not found.".format(node_id))
        data = self.json_body(DISKS_SCHEMA)
        disks = {d["id"]: d for d in node.volumes}
        for disk in data:
            if disk["id"] not in disks:
                raise errors.InvalidData("Node {0} has no disk '{1}'".format(node.id, disk["id"]))
            used = sum(v["size"] for v in disk["volumes"])
            if used > disks[disk["id"]].get("size", 0):
                raise errors.InvalidData("Volumes of disk '{0}' need {1} MB; it has {2} MB".format(
                    disk["id"], used, disks[disk["id"]].get("size", 0)))
        for disk in data:
            disks[disk["id"]] = dict(disks[disk["id"]], volumes=disk["volumes"])
        node.volumes = [disks[d["id"]] for d in node.volumes]
        if {"name": "disks", "node_id": node.id} not in node.pending_changes:
            node.pending_changes = node.pending_changes + [{"name": "disks", "node_id": node.id}]
        return node.volumes
