"""JSON schemas of the request bodies, and the limits of stored JSON."""
from nailgun_host import errors

NO_NUL = "^[^\\x00]*$"
NAME = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": NO_NUL}
ID = {"type": "integer", "minimum": 1, "maximum": 2147483647}

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
        "resource_definitions": {"type": "array", "items": RESOURCE_IN_COMPONENT},
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
        "components": {"type": "array", "items": {"anyOf": [ID, NAME]}},
        "hierarchy_levels": {"type": "array", "items": LEVEL_NAME, "uniqueItems": True},
    },
    "additionalProperties": False,
}

ENVIRONMENT_CREATE = dict(ENVIRONMENT_UPDATE, required=["components", "hierarchy_levels"])

DOCUMENT = {"type": "object"}

KEY_PATHS = {"type": "array", "items": {"type": "array"}}

REVERT = {
    "type": "object",
    "properties": {"version": ID},
    "required": ["version"],
    "additionalProperties": False,
}


#: how deeply objects and lists may nest in a document: deeper ones would exhaust the
#: recursion of merging, diffing and JSON encoding
MAX_DEPTH = 100


def check_nesting(data):
    """Refuse NUL characters and JSON nested deeper than MAX_DEPTH, walking without recursion."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                raise errors.InvalidData("Values must not contain NUL characters")
        elif isinstance(value, (dict, list)):
            if depth >= MAX_DEPTH:
                raise errors.InvalidData("Values must not nest deeper than {0} levels".format(MAX_DEPTH))
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                stack.append((key, depth + 1))
                stack.append((item, depth + 1))
