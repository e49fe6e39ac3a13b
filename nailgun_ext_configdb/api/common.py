"""What every ConfigDB handler shares: query strings, ETags and authorship.

Every GET answers with a strong ETag, the hash of its canonical JSON (effective
values hash the versions they merge instead), and honours ``If-None-Match`` (304).
Writes honour ``If-Match`` against the ETag of the document they change (412 on
mismatch), so read-modify-write clients lose no update.
"""
import hashlib
import json
import urllib.parse

import web

from nailgun_host import errors
from nailgun_host.api.base import BaseHandler, set_status


def canonical(data):
    """The JSON text of ``data`` that bodies and ETags are made from."""
    return json.dumps(data, sort_keys=True)


def etag(text):
    return '"{0}"'.format(hashlib.sha1(text.encode()).hexdigest())


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
    if "*" not in tags and etag(canonical(current)) not in tags:
        raise errors.PreconditionFailed("The stored document has changed (If-Match does not match its ETag)")


class ConfigHandler(BaseHandler):
    @staticmethod
    def not_modified(tag):
        """Send ``tag``; True (and an empty 304) when the client's If-None-Match has it."""
        web.header("ETag", tag)
        wanted = web.ctx.env.get("HTTP_IF_NONE_MATCH")
        if wanted is not None:
            tags = [t[2:] if t.startswith("W/") else t for t in _tags(wanted)]
            if "*" in tags or tag in tags:
                set_status(304)
                return True
        return False

    def respond(self, data, tag=None):
        """``data`` as JSON with its ETag (the hash of that JSON unless given), or an empty 304.

        Serialized here because the ETag is the hash of exactly these bytes.
        """
        text = canonical(data)
        if tag is None and self.not_modified(etag(text)):
            return None
        web.header("Content-Type", "application/json")
        return text.encode("utf-8")

    @staticmethod
    def created(data):
        set_status(201)
        return data

    @staticmethod
    def no_content():
        set_status(204)
