"""JSON schemas of the upgrade's request bodies and of the environment model."""
from nailgun_host.public import ID_SCHEMA, schemas as host_schemas
from nailgun_platform.public import patching

CLONE = {
    "$schema": "http://json-schema.org/draft-04/schema#",
    "title": "Cluster Clone Parameters",
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 50},
        "release_id": ID_SCHEMA,
    },
    "required": ["name", "release_id"],
}
ASSIGN = {
    "$schema": "http://json-schema.org/draft-04/schema#",
    "title": "Node Reassignment Parameters",
    "type": "object",
    "properties": {
        "nodes_ids": {"type": "array", "items": ID_SCHEMA, "uniqueItems": True, "minItems": 1},
        "node_id": ID_SCHEMA,
        "reprovision": {"type": "boolean"},
        "roles": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
}
#: RFC 6902; how many operations, and each one, are checked by ``patching.check_operations``
MODEL_PATCH = patching.BODY
MODEL_PATCH_MEDIA_TYPES = ("application/json-patch+json", "application/env-model-json-patch")

#: a network of a node group in the model
MODEL_NETWORK = {
    "type": "object", "required": ["id", "cidr", "gateway", "vlan_start", "ip_ranges"],
    "properties": {"id": {"type": "integer"},
                   "cidr": {"oneOf": [host_schemas.CIDR, {"type": "null"}]},
                   "gateway": {"oneOf": [host_schemas.IPV4, {"type": "null"}]},
                   "vlan_start": {"oneOf": [host_schemas.VLAN, {"type": "null"}]},
                   "ip_ranges": {"type": "array", "items": host_schemas.IP_RANGE}},
    "additionalProperties": False,
}
NETWORKING_PARAMETERS = host_schemas.NETWORKING_PARAMETERS
