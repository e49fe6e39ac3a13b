"""JSON pointers (RFC 6901) to the leaves of a document: how ``classify`` names secret values
and ``masking`` finds them again.

A *leaf* is a value that is not a non-empty object or list: a string, number, boolean, null,
``{}`` or ``[]``. Pointers name leaves rather than whole subtrees so that a masked document
keeps its shape (a reader still sees which keys exist) and each secret is encrypted on its own.
"""


def escape(key):
    """One reference token: ``~`` and ``/`` escaped as ``~0`` and ``~1`` (in that order)."""
    return str(key).replace("~", "~0").replace("/", "~1")


def child(pointer, key):
    if type(key) is str and "~" not in key and "/" not in key:  # most keys: nothing to escape
        return pointer + "/" + key
    return pointer + "/" + escape(key)


def tokens(pointer):
    """The unescaped reference tokens of ``pointer`` (``""`` is the whole document)."""
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise ValueError("{0!r} is not a JSON pointer: it must be empty or start with /".format(pointer))
    return [unescape(token) for token in pointer[1:].split("/")]


def unescape(token):
    return token.replace("~1", "/").replace("~0", "~")


def is_leaf(value):
    return not (isinstance(value, (dict, list)) and value)


def leaves(value, pointer=""):
    """The pointers of every leaf of ``value``, which sits at ``pointer``."""
    if is_leaf(value):
        yield pointer
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from leaves(item, child(pointer, key))
    else:
        for index, item in enumerate(value):
            yield from leaves(item, child(pointer, index))


_MISSING = object()


def get(document, pointer, default=_MISSING):
    """The value at ``pointer``; ``default`` (KeyError without one) when the document has none there."""
    value = document
    for token in tokens(pointer):
        key = key_in(value, token)
        if key is not None:
            value = value[key]
        elif default is _MISSING:
            raise KeyError(pointer)
        else:
            return default
    return value


def key_in(container, token):
    """What the reference token ``token`` names in ``container``: a key of an object, an index of a list
    (digits, no leading zero, in range), or None when it names nothing there."""
    if isinstance(container, dict):
        return token if token in container else None
    if isinstance(container, list) and token.isascii() and token.isdigit() and int(token) < len(container) \
            and (token == "0" or not token.startswith("0")):
        return int(token)
    return None


def replace(document, pointer, new):
    """``document`` with the value at ``pointer`` (which must exist) replaced by ``new``, in place;
    the root pointer returns ``new`` itself."""
    parts = tokens(pointer)
    if not parts:
        return new
    parent = get(document, "".join("/" + escape(part) for part in parts[:-1]))
    parent[int(parts[-1]) if isinstance(parent, list) else parts[-1]] = new
    return document


def copy_containers(value):
    """A copy of ``value``'s objects and lists; leaves (immutable) are shared. Faster than a deepcopy."""
    if type(value) is dict:
        return {key: copy_containers(item) for key, item in value.items()}
    if type(value) is list:
        return [copy_containers(item) for item in value]
    return value
