"""What every handler, core or extension, builds on: JSON in, JSON out, clean errors.

A handler method returns plain data (dict, list, str, None); the request processor
serializes it to JSON. Bytes are sent as they are (a body already serialized). Status
and headers are set with ``set_status``/``web.header``.
Methods a handler does not define answer 405 with a correct ``Allow`` header
(PATCH included, which web.py itself leaves out).
"""
import json
import math
import re

import jsonschema
import web

from nailgun_host import errors
from nailgun_host.db import db
from nailgun_host.settings import settings

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")
MAX_ID = 2 ** 31 - 1  # ids are 32-bit integers; a larger one names nothing

STATUS_TEXT = {
    200: "200 OK", 201: "201 Created", 202: "202 Accepted", 204: "204 No Content",
    304: "304 Not Modified", 308: "308 Permanent Redirect",
}


def set_status(code):
    web.ctx.status = STATUS_TEXT.get(code, str(code))


def request_body():
    """The raw request body, read at most once and never beyond the size cap."""
    if "nailgun_body" not in web.ctx:
        limit = int(settings["MAX_REQUEST_BODY"])
        length = web.ctx.env.get("CONTENT_LENGTH")
        if length and length.isdigit() and int(length) > limit:
            raise errors.RequestTooLarge(
                "Request body is larger than the limit of {0} bytes".format(limit))
        stream = web.ctx.env["wsgi.input"]
        if web.ctx.env.get("HTTP_TRANSFER_ENCODING", "").lower() == "chunked":
            data = stream.read(limit + 1)
        else:
            data = stream.read(int(length)) if length and length.isdigit() else b""
        if len(data) > limit:
            raise errors.RequestTooLarge(
                "Request body is larger than the limit of {0} bytes".format(limit))
        web.ctx.nailgun_body = data
    return web.ctx.nailgun_body


def parse_json(data):
    """Nailgun's messages for an empty or malformed body."""
    if not data or not data.strip():
        raise errors.InvalidData("Empty request received")
    try:
        result = json.loads(data, parse_constant=_refuse_constant)
        if _SURROGATE_ESCAPE.search(data if isinstance(data, str) else data.decode("utf-8", "replace")):
            json.dumps(result, ensure_ascii=False).encode("utf-8")
        return result
    except (ValueError, UnicodeError, RecursionError):
        raise errors.InvalidData("Invalid json received")


#: a \uD800-\uDFFF escape: unpaired, it is no character; PostgreSQL refuses it (500 or 400) and SQLite keeps it
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_constant(name):
    """NaN and Infinity are not JSON (RFC 8259), and PostgreSQL refuses them."""
    raise ValueError(name)


def check_finite(data):
    """A number too large for a float (1e400) becomes Infinity, which no response may carry: 400."""
    if isinstance(data, float) and math.isinf(data):
        raise errors.InvalidData("Numbers must be finite; one in the request is too large")
    for value in data.values() if isinstance(data, dict) else data if isinstance(data, list) else ():
        check_finite(value)
    return data


def validate_schema(data, schema):
    """jsonschema validation; the first error becomes a 400 with a readable message."""
    validator = jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker())
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        message = error.message if not where else "{0} (at '{1}')".format(error.message, where)
        raise errors.InvalidData(message)
    return data


def query_param(name, default=None):
    """A query-string parameter (never the body: web.input would parse a PUT body as a form)."""
    return web.input(_method="get", **{name: default}).get(name)


def filter_by_cluster(query, column):
    """Apply ``?cluster_id=N`` to a list query, when it is given."""
    cluster_id = query_param("cluster_id", None)
    if cluster_id:
        if not cluster_id.isdigit():
            raise errors.InvalidData("cluster_id must be an integer")
        query = query.filter(column == int(cluster_id))
    return query


class BaseHandler:
    """Base of every handler: JSON body helpers and a JSON 405 for missing methods."""

    def _method_not_allowed(self, *args, **kwargs):
        raise errors.MethodNotAllowed(
            "Method {0} is not allowed on this resource".format(web.ctx.method),
            self.allowed_methods())

    GET = POST = PUT = PATCH = DELETE = _method_not_allowed

    def OPTIONS(self, *args):
        web.header("Allow", ", ".join(self.allowed_methods() + ["OPTIONS"]))
        set_status(204)

    @classmethod
    def allowed_methods(cls):
        allowed = [m for m in HTTP_METHODS
                   if getattr(cls, m) is not BaseHandler._method_not_allowed]
        if "GET" in allowed:
            allowed.insert(allowed.index("GET") + 1, "HEAD")
        return allowed

    @staticmethod
    def json_body(schema=None):
        data = check_finite(parse_json(request_body()))
        if schema is not None:
            validate_schema(data, schema)
        return data

    @staticmethod
    def get_object_or_404(model, obj_id, message=None, lock=False):
        obj_id = int(obj_id)
        obj = db.get(model, obj_id, with_for_update=True if lock else None) if 0 < obj_id <= MAX_ID else None
        if obj is None:
            raise errors.ObjectNotFound(message or "{0} not found".format(model.__name__))
        return obj
