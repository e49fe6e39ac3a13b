"""What every ConfigDB handler shares: ETags (authorship is the host's ``api.base.author``).

Every GET answers with a strong ETag, the hash of its canonical JSON (effective
values hash the versions they merge instead), and honours ``If-None-Match`` (304).
Writes honour ``If-Match`` against the ETag of the document they change (412 on
mismatch), so read-modify-write clients lose no update.
"""
import hashlib

import web

from nailgun_host.public import BaseHandler, CollectionHandler, ItemHandler, errors, set_status
from nailgun_platform.public import none_match
from nailgun_ext_configdb.objects.json_values import canonical  # the JSON text bodies and ETags are made from


def etag(text):
    return '"{0}"'.format(hashlib.sha1(text.encode()).hexdigest())


def _tags(header):
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def check_if_match(current, header=None):
    """412 unless ``header`` (the request's If-Match unless given) has the ETag of ``current``, or ``*``."""
    header = web.ctx.env.get("HTTP_IF_MATCH") if header is None else header
    if header is None:
        return
    tags = _tags(header)
    if "*" not in tags and etag(canonical(current)) not in tags:
        raise errors.PreconditionFailed("The stored document has changed (If-Match does not match its ETag)")


class ConfigHandler(BaseHandler):
    #: no ConfigDB read writes (``BaseHandler.reads_only``)
    reads_only = True
    #: answers besides 2xx and errors, for the OpenAPI description
    other_responses = {"GET": {"304": "Not modified: the client's If-None-Match has the ETag"}}

    @staticmethod
    def not_modified(tag):
        """Send ``tag``; True (and an empty 304) when the client's If-None-Match has it."""
        web.header("ETag", tag)
        wanted = web.ctx.env.get("HTTP_IF_NONE_MATCH")
        if wanted is not None and none_match(wanted, tag):
            set_status(304)
            return True
        return False

    def respond(self, data, tag=None, text=None):
        """``data`` as JSON (``text`` when given: its ``canonical`` text) with its ETag (the hash of that JSON unless
        given), or an empty 304.

        Serialized here because the ETag is the hash of exactly these bytes.
        """
        text = canonical(data) if text is None else text
        if tag is None and self.not_modified(etag(text)):
            return None
        web.header("Content-Type", "application/json")
        return text.encode("utf-8")


class ConfigCollectionHandler(ConfigHandler, CollectionHandler):
    """A ConfigDB collection: listed with an ETag, created with 201."""


class ConfigItemHandler(ConfigHandler, ItemHandler):
    """A ConfigDB object: shown with an ETag; PATCH changes it as PUT does (tuning-box's clients use both)."""

    PATCH = ItemHandler.PUT
