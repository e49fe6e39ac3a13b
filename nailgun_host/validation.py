"""The rules every request's input follows, core or extension, free of the web layer.

One id rule (ASCII digits, one maximum), one JSON decoder with one set of limits, and
one schema validator, so the same bad input gets the same answer on every route.
Domain modules use these too, which is why nothing here knows about HTTP requests.
"""
import json
import re

from nailgun_host import errors
from nailgun_platform.json_rules import MAX_DEPTH, validate_schema  # noqa: F401 (the one depth, the one schema check)
from nailgun_platform.secrets import sealing

#: ids are 32-bit integers (PostgreSQL's ``integer``); a larger one names nothing
MAX_ID = 2 ** 31 - 1
#: an id in a URL: ASCII digits only (``\d`` would take Arabic-Indic digits too)
ID_PATTERN = "([0-9]+)"
ID_SCHEMA = {"type": "integer", "minimum": 1, "maximum": MAX_ID}

#: a \uD800-\uDFFF escape: unpaired, it is no character; PostgreSQL refuses it and SQLite keeps it
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_id(text):
    """The id a URL segment or query value names, or None when it can name no object."""
    text = str(text)
    if not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if 0 < value <= MAX_ID else None


def content_length(environ):
    """A request's ``Content-Length`` (None without one); InvalidData unless it is ASCII digits (``-1``, ``+2``,
    ``1_000`` or ``1e3`` would be read as no body, or as a body of another size, by ``int``)."""
    length = (environ.get("CONTENT_LENGTH") or "").strip()
    if not length:
        return None
    if not (length.isascii() and length.isdigit()):
        raise errors.InvalidData("Content-Length must be a whole number of bytes, not {0!r}".format(length[:40]))
    return int(length)


def decode_json(data, wrapping=None):
    """A request body as JSON, refused (400) when empty, malformed or not storable everywhere (``wrapping``: a
    function of the decoded body giving ``check_storable``'s ``wrapped`` levels, none without it).

    NaN and Infinity are not JSON (RFC 8259), and neither is an unpaired surrogate, escaped
    or as raw bytes; PostgreSQL refuses all three, so they are refused here, for every database
    alike. Bytes are UTF-8 (RFC 8259 8.1), decoded strictly.
    """
    if not data or not data.strip():
        raise errors.InvalidData("Empty request received")
    try:
        if isinstance(data, (bytes, bytearray)):
            # strictly: json.loads(bytes) would let encoded surrogates (b"\xed\xa0\x80") through
            data = bytes(data).decode("utf-8-sig")
        result = json.loads(data, parse_constant=_refuse_constant)
        if _SURROGATE_ESCAPE.search(data):
            json.dumps(result, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeError, RecursionError):
        raise errors.InvalidData("Invalid json received")
    return check_storable(result, wrapping(result) if wrapping is not None else 0)


def _refuse_constant(name):
    raise ValueError(name)


def check_storable(data, wrapped=0):
    """``data`` when every database stores it as it is: finite numbers, no NUL, at most MAX_DEPTH deep,
    no key ``$fernet`` (it marks an encrypted value, ``secrets.sealing``). ``wrapped``: the levels around the
    values ``data`` carries (a batch of documents: its object, list and items), which do not count in the depth.

    A number too large for a float (1e400) decodes as Infinity, which no answer may carry.
    Walks one nesting level at a time, without recursion (a deep document cannot exhaust the
    stack); every write of a large document passes here, so each level is one flat loop that tests
    exact types first.
    """
    level, depth = [[data]], -1 - wrapped  # the document is the one item of a list around it
    while level:
        if depth >= MAX_DEPTH:
            raise errors.InvalidData("Values must not nest deeper than {0} levels".format(MAX_DEPTH))
        nested = []
        for container in level:
            if type(container) is dict or isinstance(container, dict):
                _check_keys(container)
                container = container.values()
            _check_values(container, nested)
        level, depth = nested, depth + 1
    return data


def _check_keys(mapping):
    """An object's keys: no ``$fernet``, no NUL in a string key."""
    sealing.refuse_marker(mapping)
    for key in mapping:
        if (type(key) is str or isinstance(key, str)) and "\x00" in key:
            _refuse_nul()


def _check_values(values, nested):
    """Scalars checked here; the objects and lists among ``values`` are added to ``nested``, the next level."""
    for value in values:
        kind = type(value)
        if kind is str:
            if "\x00" in value:
                _refuse_nul()
        elif kind is dict or kind is list:
            nested.append(value)
        elif kind is float:
            if not -_INFINITY < value < _INFINITY:  # NaN too: it compares false with everything
                _refuse_infinite()
        elif not (kind is int or kind is bool or value is None):
            _check_subclassed(value, nested)


def _check_subclassed(value, nested):
    """A value of a subclass of dict, list, str or float (not from JSON, from Python callers), or of another type."""
    if isinstance(value, (dict, list)):
        nested.append(value)
    elif isinstance(value, str) and "\x00" in value:
        _refuse_nul()
    elif isinstance(value, float) and not -_INFINITY < value < _INFINITY:
        _refuse_infinite()


_INFINITY = float("inf")


def _refuse_nul():
    raise errors.InvalidData("Values must not contain NUL characters")


def _refuse_infinite():
    raise errors.InvalidData("Numbers must be finite; one in the request is too large")
