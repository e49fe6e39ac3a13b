"""JSON schemas of the core's request bodies, and the network pieces extensions reuse.

Handlers validate bodies against these through ``api.base.json_body``; what a schema
cannot say (a gateway inside its CIDR, a free name) is checked by the objects.
"""
from nailgun_host.objects import attributes as attributes_obj
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
                # IPv4 only, as a release's networks and the upgrade's model (the host has no IPv6 networks)
                "cidr": {"type": ["string", "null"], "pattern": CIDR["pattern"]},
                "gateway": {"type": ["string", "null"], "format": "ipv4"},
                "vlan_start": {"type": ["integer", "null"], "minimum": 1, "maximum": 4094},
                "ip_ranges": {"type": "array", "items": IP_RANGE},
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

# A release's metadata is what every cluster made from it is built of, so it is held to the
# shapes the clusters' code reads; what a schema cannot say is checked by release_obj.check_metadata.

#: one ``generated`` entry that makes a value; from_settings reads only a few harmless settings
#: (that it needs ``generator_arg`` is checked by attributes.check_generated, with a clearer message)
GENERATOR = {
    "type": "object", "required": ["generator"], "additionalProperties": False,
    "properties": {
        "generator": {"enum": list(attributes_obj.GENERATORS)},
        "length": {"type": "integer", "minimum": 1, "maximum": attributes_obj.MAX_GENERATED_LENGTH},
        "generator_arg": {"enum": list(attributes_obj.SETTINGS_FOR_RELEASES)},
    },
}
#: a value of a ``generated`` tree: nested sections, lists and values, any of them a GENERATOR
#: (a local reference, resolved in the ``definitions`` of RELEASE_UPDATE and RELEASE_CREATE)
_GENERATED_VALUE = {"$ref": "#/definitions/generated_value"}
EDITABLE_FIELD = {"type": "object", "properties": {
    "type": {"type": "string"}, "label": {"type": "string"}, "weight": {"type": "number"},
    "values": {"type": "array", "items": {"type": "object", "required": ["data"]}},
}}
EDITABLE_SECTION = {"type": "object", "properties": {"metadata": {"type": "object"}},
                    "additionalProperties": EDITABLE_FIELD}
ATTRIBUTES_METADATA = {"type": "object", "properties": {
    "editable": {"type": "object", "additionalProperties": EDITABLE_SECTION},
    # a tree of sections whose leaves are values or generators; never a generator itself
    "generated": {"type": "object", "additionalProperties": _GENERATED_VALUE,
                  "not": {"required": ["generator"]}},
}}
RELEASE_NETWORK = {
    "type": "object", "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 50},
        "cidr": {"type": ["string", "null"], "pattern": CIDR["pattern"]},
        "gateway": {"type": ["string", "null"], "format": "ipv4"},
        "ip_range": IP_RANGE,
        "vlan_start": {"type": ["integer", "null"], "minimum": 1, "maximum": 4094},
        "use_gateway": {"type": "boolean"},
        "notation": {"enum": ["cidr", "ip_ranges", None]},
        "render_type": {"type": ["string", "null"]},
        "map_priority": {"type": "integer"},
        "configurable": {"type": "boolean"},
        "floating_range_var": {"type": "string"},
        "neutron_vlan_range": {"type": "boolean"},
        "seg_type": {"type": "string"},
    },
}
NETWORKS_METADATA = {"type": "object", "additionalProperties": {
    "type": "object", "properties": {
        "networks": {"type": "array", "items": RELEASE_NETWORK},
        "config": NETWORKING_PARAMETERS}}}
ROLE = {"type": "object", "properties": {
    "name": {"type": "string"}, "description": {"type": "string"},
    "conflicts": STRINGS, "has_primary": {"type": "boolean"}, "public_ip_required": {"type": "boolean"},
    "weight": {"type": "integer"}, "tags": STRINGS,
    "restrictions": {"type": "array", "items": {
        "type": "object", "required": ["condition"],
        "properties": {"condition": {"type": "string"}, "message": {"type": "string"}}}},
}}
ROLES_METADATA = {"type": "object", "additionalProperties": ROLE}
NETWORK_ROLES_METADATA = {"type": "array", "items": {
    "type": "object", "required": ["id", "default_mapping"],
    "properties": {
        "id": {"type": "string", "minLength": 1},
        "default_mapping": {"type": "string", "minLength": 1, "maxLength": 50},
        "properties": {"type": "object", "properties": {
            "subnet": {"type": "boolean"}, "gateway": {"type": "boolean"},
            "vip": {"type": "array", "items": {
                "type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 50},
                               "namespace": {"type": ["string", "null"], "maxLength": 50},
                               "node_roles": STRINGS, "alias": {"type": "string"}}}}}},
    }}}
_RELEASE_METADATA = {
    "attributes_metadata": ATTRIBUTES_METADATA, "networks_metadata": NETWORKS_METADATA,
    "roles_metadata": ROLES_METADATA, "network_roles_metadata": NETWORK_ROLES_METADATA,
    "modes_metadata": {"type": "object"}, "components_metadata": {"type": "array"},
    "deployment_tasks": {"type": "array"}, "extensions": {"type": "array", "items": {"type": "string"}},
}
RELEASE_UPDATE = {
    "type": "object",
    "properties": dict({
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "version": {"type": "string", "minLength": 1, "maxLength": 30},
        "description": {"type": ["string", "null"]},
        "operating_system": {"type": "string", "minLength": 1, "maxLength": 50},
        "state": {"enum": list(release_obj.STATES)},
    }, **_RELEASE_METADATA),
    "definitions": {"generated_value": {
        "additionalProperties": _GENERATED_VALUE, "items": _GENERATED_VALUE,
        "dependencies": {"generator": GENERATOR}}},
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
