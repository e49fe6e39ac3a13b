"""Secret leaves as they are stored: each one sealed on its own in a Fernet token.

A sealed leaf is the object ``{"$fernet": "<token>"}``, the token holding the leaf's JSON text,
so its type (string, number, boolean, null) comes back with it. Opening needs no
classification: every such object anywhere in a stored document is opened, so a document
stays readable whatever the patterns or schemas say today. For that to be unambiguous no
client may store the key ``$fernet`` itself (``refuse_marker``, called by
``validation.check_storable``, says so with a 400).
"""
import json

from nailgun_platform import errors
from nailgun_platform.secrets import pointers

MARKER = "$fernet"


def is_sealed(value):
    return type(value) is dict and len(value) == 1 and type(value.get(MARKER)) is str


def seal(document, secret, keyset, kept=None):
    """A copy of ``document`` with the leaf at each pointer of ``secret`` sealed under the primary key.

    Pointers the document does not have are skipped; a leaf already sealed stays as it is. ``kept(pointer,
    text)``, when given, names a token to keep for the leaf whose JSON text (bytes) is ``text`` there (one the
    stored version holds for the same value at the same place, under the primary key), or None: encrypted anew.
    Only the objects and lists on the way to a sealed leaf are copied; the rest is shared with
    ``document``, which stays as it was.
    """
    if "" in secret:  # the whole document is the one secret leaf
        return document if is_sealed(document) else {MARKER: _token(document, keyset, kept, "")}
    if not secret or not isinstance(document, (dict, list)):
        return document
    root = _shallow_copy(document)
    copied = {"": root}  # pointer -> the copy of the container there
    for pointer in secret:
        parent = _copied_parent(pointer, copied)
        if parent is None:
            continue
        container, token = parent
        value = container[token]
        if not is_sealed(value):
            container[token] = {MARKER: _token(value, keyset, kept, pointer)}
    return root


def _token(value, keyset, kept=None, pointer=None):
    text = json.dumps(value, separators=(",", ":")).encode("utf-8")
    if kept is not None:
        found = kept(pointer, text)
        if found is not None:
            return found
    return keyset.encrypt(text)


def _shallow_copy(container):
    return dict(container) if isinstance(container, dict) else list(container)


def _copied_parent(pointer, copied):
    """(the copy of the container holding the leaf at ``pointer``, its key or index there), copying the
    containers on the way that ``copied`` (pointer -> copy) does not hold yet; None when the document
    has no such leaf."""
    tokens = pointers.tokens(pointer)
    container, where = copied[""], ""
    for token in tokens[:-1]:
        key = pointers.key_in(container, token)
        if key is None or not isinstance(container[key], (dict, list)):
            return None
        where += "/" + pointers.escape(token)
        if where not in copied:
            copied[where] = container[key] = _shallow_copy(container[key])
        container = copied[where]
    key = pointers.key_in(container, tokens[-1])
    return None if key is None else (container, key)


def loads(text, keyset, tokens=None):
    """The JSON document ``text`` with every sealed leaf opened, parsed in one pass: the parser hands each
    object it builds to ``opened`` (only when the text has a marker at all; a stored document is written
    by ``json.dumps`` or PostgreSQL, which never escape the marker's ASCII letters).

    ``tokens``, a dict, receives ``{a sealed leaf's JSON text (bytes): its token}`` (None for a text several
    leaves hold): what a write needs to keep the tokens of the secrets it leaves as they were (``seal``)."""
    if MARKER not in text:
        return json.loads(text)

    def opened(mapping):
        if len(mapping) == 1 and type(mapping.get(MARKER)) is str:
            token = mapping[MARKER]
            clear = keyset.decrypt(token)
            if tokens is not None:
                tokens[clear] = None if clear in tokens else token
            return json.loads(clear.decode("utf-8"))
        return mapping

    return json.loads(text, object_hook=opened)


def unseal(document, keyset):
    """``document`` with every sealed leaf opened; the containers without one are shared with ``document``
    (the same object when it holds none)."""
    return _map_sealed(document, lambda token: json.loads(keyset.decrypt(token)))


def reencrypt(document, keyset):
    """``(document with every token under the primary key, how many changed)``; values stay as they are."""
    changed = 0

    def renew(token):
        nonlocal changed
        if keyset.is_current(token):
            return {MARKER: token}
        changed += 1
        return {MARKER: keyset.reencrypt(token)}

    return _map_sealed(document, renew), changed


def count_sealed(document):
    """How many sealed leaves ``document`` holds."""
    count, stack = 0, [document]
    while stack:
        value = stack.pop()
        if is_sealed(value):
            count += 1
        elif type(value) is dict:
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
    return count


def refuse_marker(mapping):
    """400 when the object ``mapping`` has the key ``$fernet``."""
    if MARKER in mapping:
        raise errors.InvalidData("The key {0} is reserved: it marks an encrypted value".format(MARKER))


def _map_sealed(value, opener):
    """``value`` with ``opener(token)`` in place of each sealed leaf; the containers that hold none are
    shared with ``value`` (``value`` itself when it holds none), so opening a large document with a few
    secrets copies little. (The walk of every document a computed read opens: kept to one call per
    container, its items' types looked at inline.)"""
    kind = type(value)
    if kind is dict:
        if len(value) == 1 and type(value.get(MARKER)) is str:
            return opener(value[MARKER])
        items = value.items()
    elif kind is list:
        items = enumerate(value)
    else:
        return value
    result = value
    for key, item in items:
        kind = type(item)
        if kind is dict or kind is list:
            mapped = _map_sealed(item, opener)
            if mapped is not item:
                if result is value:
                    result = _shallow_copy(value)
                result[key] = mapped
    return result
