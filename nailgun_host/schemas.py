"""JSON schemas of the core's request bodies, and the network pieces extensions reuse.

Handlers validate bodies against these through ``api.base.json_body``; what a schema
cannot say (a gateway inside its CIDR, a free name) is checked by the objects.
"""
from nailgun_host.objects import cluster as cluster_obj
from nailgun_host.objects import node as node_obj
from nailgun_host.objects import release as release_obj
from nailgun_host.validation import ID_SCHEMA

NAME = {"type": "string", "minLength": 1, "maxLength": 50}
STRINGS = {"type": "array", "items": {"type": "string"}, "uniqueItems": True}
MAC = {"type": "string", "pattern": "^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$"}

# -- networks --------------------------------------------------------------------------------

IPV4 = {"type": "string", "format": "ipv4"}
IP_RANGE = {"type": "array", "items": IPV4, "minItems": 2, "maxItems": 2}
VLAN = {"type": "integer", "minimum": 1, "maximum": 4094}
CIDR = {"type": "string", "pattern": r"^\d{1,3}(\.\d{1,3}){3}/\d{1,2}$"}
NETWORKING_PARAMETERS = {
    "type": "object",
    "properties": {
        "vlan_range": {"type": "array", "items": VLAN, "minItems": 2, "maxItems": 2},
        "gre_id_range": {"type": "array", "items": {"type": "integer", "minimum": 1},
                         "minItems": 2, "maxItems": 2},
        "floating_ranges": {"type": "array", "items": IP_RANGE},
        "internal_cidr": CIDR,
        "internal_gateway": IPV4,
        "dns_nameservers": {"type": "array", "items": IPV4},
        "base_mac": MAC,
        "segmentation_type": {"enum": ["vlan", "gre", "tun"]},
        "net_l23_provider": {"enum": ["ovs", "nsx"]},
    },
}
NETWORK_CONFIGURATION = {
    "type": "object",
    "properties": {
        "networks": {"type": "array", "items": {
            "type": "object", "required": ["id"],
            "properties": {
                "id": ID_SCHEMA,
                "cidr": {"type": ["string", "null"]},
                "gateway": {"type": ["string", "null"]},
                "vlan_start": {"type": ["integer", "null"], "minimum": 1, "maximum": 4094},
                "ip_ranges": {"type": "array", "items": {
                    "type": "array", "minItems": 2, "maxItems": 2, "items": {"type": "string"}}},
                "meta": {"type": "object"},
            }}},
        "networking_parameters": NETWORKING_PARAMETERS,
    },
}
NODEGROUP_CREATE = {
    "type": "object", "required": ["cluster_id", "name"],
    "properties": {"cluster_id": ID_SCHEMA, "name": NAME},
}
NODEGROUP_UPDATE = {"type": "object", "required": ["name"], "properties": {"name": NAME}}

# -- releases --------------------------------------------------------------------------------

_RELEASE_METADATA = {key: {"type": "object"} for key in (
    "modes_metadata", "roles_metadata", "attributes_metadata", "networks_metadata")}
_RELEASE_METADATA.update({key: {"type": "array"} for key in (
    "network_roles_metadata", "components_metadata", "deployment_tasks")})
_RELEASE_METADATA["extensions"] = {"type": "array", "items": {"type": "string"}}
RELEASE_UPDATE = {
    "type": "object",
    "properties": dict({
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "version": {"type": "string", "minLength": 1, "maxLength": 30},
        "description": {"type": ["string", "null"]},
        "operating_system": {"type": "string", "minLength": 1, "maxLength": 50},
        "state": {"enum": list(release_obj.STATES)},
    }, **_RELEASE_METADATA),
}
RELEASE_CREATE = dict(RELEASE_UPDATE, required=["name", "version", "operating_system"])

# -- clusters --------------------------------------------------------------------------------

CLUSTER_CREATE = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": NAME,
        "release": ID_SCHEMA,
        "release_id": ID_SCHEMA,
        "mode": {"type": "string"},
        "net_provider": {"enum": list(cluster_obj.NET_PROVIDERS)},
        "net_segment_type": {"enum": ["vlan", "gre", "tun"]},
        "net_l23_provider": {"enum": ["ovs", "nsx"]},
        "ui_settings": {"type": "object"},
    },
}
CLUSTER_UPDATE = {
    "type": "object",
    "properties": {
        "name": NAME,
        "mode": {"type": "string"},
        "ui_settings": {"type": "object"},
        "is_customized": {"type": "boolean"},
        "status": {"enum": list(cluster_obj.STATUSES)},
    },
}
ATTRIBUTES = {
    "type": "object", "required": ["editable"],
    "properties": {"editable": {"type": "object", "additionalProperties": {"type": "object"}}},
}
ASSIGNMENT = {
    "type": "array", "minItems": 1,
    "items": {"type": "object", "required": ["id"], "properties": {"id": ID_SCHEMA, "roles": STRINGS}},
}
UNASSIGNMENT = {
    "type": "array", "minItems": 1,
    "items": {"type": "object", "required": ["id"], "properties": {"id": ID_SCHEMA}},
}
EXTENSIONS = STRINGS

# -- nodes -----------------------------------------------------------------------------------

_NODE_PROPERTIES = {
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
    "cluster_id": dict(ID_SCHEMA, type=["integer", "null"]),
    "roles": STRINGS,
    "pending_roles": STRINGS,
    "pending_addition": {"type": "boolean"},
    "pending_deletion": {"type": "boolean"},
    "manufacturer": {"type": ["string", "null"]},
    "platform_name": {"type": ["string", "null"]},
    "os_platform": {"type": ["string", "null"]},
    "kernel_params": {"type": ["string", "null"]},
    "progress": {"type": "integer", "minimum": 0, "maximum": 100},
}
NODE_CREATE = {"type": "object", "required": ["mac"], "properties": _NODE_PROPERTIES}
NODE_UPDATE = {"type": "object", "properties": dict(_NODE_PROPERTIES, id=ID_SCHEMA)}
NODES_UPDATE = {"type": "array", "items": dict(NODE_UPDATE, required=["id"])}
INTERFACES = {"type": "array", "items": {
    "type": "object", "required": ["name"],
    "properties": {"name": {"type": "string", "minLength": 1}, "type": {"enum": ["ether", "bond"]},
                   "mode": {"type": "string"},
                   "slaves": {"type": "array", "items": {"type": "object", "required": ["name"],
                                                         "properties": {"name": {"type": "string", "minLength": 1}}}},
                   "assigned_networks": {"type": "array", "items": {
                       "type": "object", "required": ["id"], "properties": {"id": ID_SCHEMA}}}}}}
DISKS = {"type": "array", "items": {"type": "object", "required": ["id", "volumes"], "properties": {
    "id": {"type": "string"}, "volumes": {"type": "array", "items": {
        "type": "object", "required": ["name", "size"],
        "properties": {"name": {"type": "string"}, "size": {"type": "integer", "minimum": 0}}}}}}}
