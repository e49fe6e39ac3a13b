"""Secret leaves as they are stored: each one sealed on its own in a Fernet token.

A sealed leaf is the object ``{"$fernet": "<token>"}``, the token holding the leaf's JSON text,
so its type (string, number, boolean, null) comes back with it. Opening needs no
classification: every such object anywhere in a stored document is opened, so a document
stays readable whatever the patterns or schemas say today. For that to be unambiguous no
client may store the key ``$fernet`` itself (``refuse_marker``, called by
``validation.check_storable``, says so with a 400).
"""
import json

from nailgun_host import errors
from nailgun_host.secrets import pointers

MARKER = "$fernet"


def is_sealed(value):
    return type(value) is dict and len(value) == 1 and type(value.get(MARKER)) is str


def seal(document, secret, keyset):
    """A copy of ``document`` with the leaf at each pointer of ``secret`` sealed under the primary key.

    Pointers the document does not have are skipped; a leaf already sealed stays as it is.
    """
    if not secret:
        return document
    sealed = pointers.copy_containers(document)
    for pointer in secret:
        value = pointers.get(sealed, pointer, _ABSENT)
        if value is not _ABSENT and not is_sealed(value):
            token = keyset.encrypt(json.dumps(value, separators=(",", ":")).encode("utf-8"))
            sealed = pointers.replace(sealed, pointer, {MARKER: token})
    return sealed


def unseal(document, keyset):
    """``document`` with every sealed leaf opened (the same object when it holds none)."""
    if not _holds_marker(document):
        return document
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

    if not _holds_marker(document):
        return document, 0
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


def refuse_marker(key):
    if key == MARKER:
        raise errors.InvalidData("The key {0} is reserved: it marks an encrypted value".format(MARKER))


_ABSENT = object()


def _holds_marker(document):
    stack = [document]
    while stack:
        value = stack.pop()
        if type(value) is dict:
            if MARKER in value:
                return True
            stack.extend(value.values())
        elif type(value) is list:
            stack.extend(value)
    return False


def _map_sealed(value, opener):
    if is_sealed(value):
        return opener(value[MARKER])
    if type(value) is dict:
        return {key: _map_sealed(item, opener) for key, item in value.items()}
    if type(value) is list:
        return [_map_sealed(item, opener) for item in value]
    return value
