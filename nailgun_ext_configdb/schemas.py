"""JSON schemas of ConfigDB's request bodies."""
from nailgun_host.public import ID_SCHEMA as ID
from nailgun_platform.public import patching

NO_NUL = "^[^\\x00]*$"
NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": NO_NUL}

RESOURCE_IN_COMPONENT = {
    "type": "object",
    "properties": {"id": ID, "name": NAME, "content": {}},
    "additionalProperties": False,
}

COMPONENT_UPDATE = {
    "type": "object",
    "properties": {
        "id": ID,
        "name": {"type": "string", "minLength": 1, "maxLength": 128, "pattern": NO_NUL},
        # an item names a definition to update (id) or one to create (name)
        "resource_definitions": {"type": "array", "items": dict(
            RESOURCE_IN_COMPONENT, anyOf=[{"required": ["id"]}, {"required": ["name"]}])},
    },
    "additionalProperties": False,
}

COMPONENT_CREATE = dict(COMPONENT_UPDATE, required=["name"], properties=dict(
    COMPONENT_UPDATE["properties"],
    resource_definitions={"type": "array", "items": dict(RESOURCE_IN_COMPONENT, required=["name"])}))

RESOURCE_UPDATE = {
    "type": "object",
    "properties": {"id": ID, "name": NAME, "component_id": ID, "content": {}},
    "additionalProperties": False,
}

RESOURCE_CREATE = dict(RESOURCE_UPDATE, required=["name", "component_id"])

LEVEL_NAME = {"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[^/\\x00]+$",
              "not": {"enum": ["resources"]}}

ENVIRONMENT_UPDATE = {
    "type": "object",
    "properties": {
        "id": ID,
        "name": {"type": "string"},
        "linked": {"type": "boolean"},
        "components": {"type": "array", "items": {"anyOf": [ID, NAME]}},
        "hierarchy_levels": {"type": "array", "items": LEVEL_NAME, "uniqueItems": True},
    },
    "additionalProperties": False,
}

ENVIRONMENT_CREATE = dict(ENVIRONMENT_UPDATE, required=["components", "hierarchy_levels"])

#: moving an environment's pin: to a version number or the latest, checked first or forced
PIN = {
    "type": "object",
    "properties": {"version": {"anyOf": [ID, {"enum": ["latest"]}]}, "force": {"type": "boolean"},
                   "dry_run": {"type": "boolean"}},
    "required": ["version"],
    "additionalProperties": False,
}

#: a values or overrides document: any JSON object
DOCUMENT = {"type": "object"}

KEY_PATHS = {"type": "array", "items": {"type": "array"}}

REVERT = {
    "type": "object",
    "properties": {"version": ID},
    "required": ["version"],
    "additionalProperties": False,
}

#: an RFC 6902 JSON patch; ``nailgun_platform.patching`` checks how many operations, then each, naming the bad one
JSON_PATCH = patching.BODY
#: the media types a JSON patch of a document is sent as (seed 000's name too); others: 415
JSON_PATCH_MEDIA_TYPES = ["application/json-patch+json", "application/env-model-json-patch"]
