"""What every ConfigDB handler shares: query strings, ETags and authorship.

Every GET answers with a strong ETag, the hash of its canonical JSON, and honours
``If-None-Match`` (304). Writes honour ``If-Match`` against the ETag of the document
they change (412 on mismatch), so read-modify-write clients lose no update.
"""
import hashlib
import json
import urllib.parse

import web

from nailgun_host import errors
from nailgun_host.api.base import BaseHandler, set_status

AUTHOR_HEADER = "X-Config-Author"


def etag(data):
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return '"{0}"'.format(hashlib.sha1(canonical.encode()).hexdigest())


def _tags(header):
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def query():
    """The query string as ``{name: last value}`` (web.input would read a PUT body as a form)."""
    return {k: v[-1] for k, v in urllib.parse.parse_qs(web.ctx.query.lstrip("?"), keep_blank_values=True).items()}


def int_param(params, name, required=False):
    value = params.get(name)
    if value is None:
        if required:
            raise errors.InvalidData("The query parameter {0} is required".format(name))
        return None
    if not (value.isascii() and value.isdigit() and len(value) < 10):
        raise errors.InvalidData("The query parameter {0} must be a positive integer".format(name))
    return int(value)


def author():
    """The authenticated user, else the X-Config-Author header, else "anonymous"."""
    name = (web.ctx.env.get("REMOTE_USER") or web.ctx.env.get("HTTP_X_CONFIG_AUTHOR") or "anonymous").strip()
    return name[:255] or "anonymous"


def check_if_match(current):
    header = web.ctx.env.get("HTTP_IF_MATCH")
    if header is None:
        return
    tags = _tags(header)
    if "*" not in tags and etag(current) not in tags:
        raise errors.PreconditionFailed("The stored document has changed (If-Match does not match its ETag)")


class ConfigHandler(BaseHandler):
    @staticmethod
    def respond(data):
        """``data`` as JSON with its ETag, or an empty 304 when the client already has it.

        Serialized here because the host passes strings through as they are, and a
        key's value may be a bare JSON string.
        """
        tag = etag(data)
        web.header("ETag", tag)
        wanted = web.ctx.env.get("HTTP_IF_NONE_MATCH")
        if wanted is not None:
            tags = [t[2:] if t.startswith("W/") else t for t in _tags(wanted)]
            if "*" in tags or tag in tags:
                set_status(304)
                return None
        web.header("Content-Type", "application/json")
        return json.dumps(data)

    @staticmethod
    def created(data):
        set_status(201)
        return data

    @staticmethod
    def no_content():
        set_status(204)
