"""The API's OpenAPI 3.1 description, built from the URL maps and the handlers' declarations.

Nothing here is a second copy: paths come from each route's template, methods from
``handler.allowed_methods()``, request bodies from ``handler.request_schema(method)`` (the
schemas ``json_body`` validates with) and ``request_media_types``. Served at
``GET /api/v1/openapi.json``; ``tests/test_openapi.py`` checks it against the URL maps.
"""
import copy
import re

import nailgun_host
from nailgun_host.validation import ID_SCHEMA

OPENAPI_VERSION = "3.1.0"
#: methods the description lists (HEAD and OPTIONS work wherever GET does, and everywhere)
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
JSON = "application/json"
ERROR_SCHEMA = {
    "type": "object", "required": ["message", "errors"],
    "properties": {"message": {"type": "string"}, "errors": {"type": "array"}},
}
#: what a 2xx answer with a body is, unless the handler is known to answer any JSON value
JSON_CONTAINER = {"type": ["object", "array"]}
#: success statuses by method; a method may answer any of them
SUCCESS = {
    "GET": ("200",), "POST": ("200", "201", "202"), "PUT": ("200", "202", "204"),
    "PATCH": ("200", "204"), "DELETE": ("204",),
}
_PLACEHOLDER = re.compile(r"<([a-z_]+)>")
#: the credentials nailgun_host.auth accepts (docs/operator/auth-and-tls.md)
SECURITY_SCHEMES = {
    "token": {"type": "apiKey", "in": "header", "name": "X-Auth-Token",
              "description": "A Keystone token (keystone mode) or a token from POST /keystone/v2.0/tokens"},
    "basic": {"type": "http", "scheme": "basic", "description": "Checked against Keystone or the users file"},
}


def path_of(template):
    """``/clusters/<cluster_id>`` as an OpenAPI path: ``/clusters/{cluster_id}``."""
    return _PLACEHOLDER.sub(r"{\1}", template)


def _path_parameter(name, patterns):
    if name in patterns:
        schema = {"type": "string", "pattern": "^(?:{0})$".format(patterns[name])}
    else:
        schema = dict(ID_SCHEMA)
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _schema(schema):
    """A request schema as OpenAPI 3.1 (JSON Schema 2020-12) takes it: the draft-04 ``$schema`` goes."""
    schema = copy.deepcopy(schema)
    if isinstance(schema, dict):
        schema.pop("$schema", None)
    return schema


def _operation(handler, method, template, parameters):
    responses = {}
    for status in SUCCESS[method]:
        if status == "204":
            responses[status] = {"description": "Done, no content"}
        else:
            schema = handler.response_schemas.get(method, JSON_CONTAINER)
            responses[status] = {"description": "Success", "content": {JSON: {"schema": schema}}}
    for status, description in getattr(handler, "other_responses", {}).get(method, {}).items():
        responses[status] = {"description": description}
    error = {"content": {JSON: {"schema": {"$ref": "#/components/schemas/Error"}}}}
    responses["4XX"] = dict(error, description="The request is refused")
    responses["5XX"] = dict(error, description="The server failed")
    operation = {
        "operationId": "{0} {1}".format(method, template),
        "summary": (handler.__doc__ or handler.__name__).strip().splitlines()[0],
        "responses": responses,
    }
    if handler.public:
        operation["security"] = []
    else:
        operation["description"] = "Needs an identity the policy rule `{0}` allows.".format(
            handler.policy_rule(method))
    if parameters:
        operation["parameters"] = parameters
    if handler.takes_body(method):
        schema = handler.request_schema(method)
        media_types = handler.request_media_types.get(method) or (JSON,)
        required = method not in getattr(handler, "optional_bodies", ())
        operation["requestBody"] = {"required": required, "content": {
            media_type: {"schema": _schema(schema) if schema is not None else {}} for media_type in media_types}}
    return operation


def describe(routes, extensions=()):
    """The OpenAPI 3.1 document of ``routes`` (URL map entries ``{"uri", "handler", "template", "patterns"}``)."""
    paths = {}
    for entry in routes:
        handler, template = entry["handler"], entry["template"]
        patterns = entry.get("patterns", {})
        parameters = [_path_parameter(name, patterns) for name in _PLACEHOLDER.findall(template)]
        item = paths.setdefault(path_of(template), {})
        for method in handler.allowed_methods():
            if method in METHODS:
                item[method.lower()] = _operation(handler, method, template, parameters)
    return {
        "openapi": OPENAPI_VERSION,
        "info": {
            "title": "Nailgun API (fuel-nailgun-extensions)", "version": nailgun_host.__version__,
            "description": "The host's routes and those of the loaded extensions ({0}). Every path also answers "
                           "under /api and with a trailing slash; HEAD works wherever GET does.".format(
                               ", ".join(e.name for e in extensions) or "none"),
        },
        "servers": [{"url": "/api/v1"}],
        "paths": paths,
        "components": {"schemas": {"Error": ERROR_SCHEMA}, "securitySchemes": SECURITY_SCHEMES},
        # either credential; without authentication (AUTH method none) none is asked for
        "security": [{"token": []}, {"basic": []}],
    }
