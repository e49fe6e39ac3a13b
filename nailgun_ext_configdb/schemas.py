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

#: the most documents one batch writes (``api.document_batches``); more: 413, as a body over ``MAX_REQUEST_BODY``
MAX_BATCH_DOCUMENTS = 1000
#: the levels of a batch around each document (the body, its list, the item), not counted in the document's depth
BATCH_NESTING = 3


def batch_wrapping(body):
    """The levels of ``body`` around the documents it carries: ``BATCH_NESTING`` when it is shaped as a batch (an
    object whose ``documents`` are objects), else none, so any other body is as deep as it nests."""
    documents = body.get("documents") if isinstance(body, dict) else None
    shaped = isinstance(documents, list) and all(isinstance(item, dict) for item in documents)
    return BATCH_NESTING if shaped else 0

#: a level path as a document's URL names it (``nodes/1/``, or empty for the environment level), with or without
#: the slashes around it, as the change feed shows it (``/nodes/1/``)
LEVEL_PATH = {"type": "string", "maxLength": 1024, "pattern": "^/?(?:[^/\\x00]+/[^/\\x00]+(?:/|$))*$"}

BATCH_ITEM = {
    "type": "object",
    "properties": {
        "level": LEVEL_PATH,
        "resource": {"anyOf": [ID, NAME]},
        "kind": {"enum": ["values", "overrides", "override"]},
        "data": DOCUMENT,
        "if_match": {"type": "string", "minLength": 1, "maxLength": 8192},
    },
    "required": ["resource", "data"],
    "additionalProperties": False,
}

#: many documents of one environment, each what one PUT of it says (``kind`` values unless given, ``level`` the
#: environment's unless given, ``if_match`` that PUT's If-Match)
DOCUMENT_BATCH = {
    "type": "object",
    "properties": {"documents": {"type": "array", "items": BATCH_ITEM,
                                 "description": "at most {0} (413 beyond)".format(MAX_BATCH_DOCUMENTS)}},
    "required": ["documents"],
    "additionalProperties": False,
}

#: a batch's answer: the environment's revision (the one every written document shares), and each document's
WRITTEN_DOCUMENT = {
    "type": "object",
    "properties": {"level": {"type": "string"}, "resource": ID, "resource_name": {"type": "string"},
                   "kind": {"enum": ["values", "overrides"]}, "version": ID, "changed": {"type": "boolean"}},
    "required": ["level", "resource", "resource_name", "kind", "version", "changed"],
}
DOCUMENT_BATCH_ANSWER = {
    "type": "object",
    "properties": {"revision": {"type": "integer", "minimum": 0}, "written": {"type": "integer", "minimum": 0},
                   "documents": {"type": "array", "items": WRITTEN_DOCUMENT}},
    "required": ["revision", "written", "documents"],
}
