"""Masking secrets for a reader who may not see them, and keeping them when the mask comes back.

Every secret leaf (a pointer from ``classify``) reads as the one ``MASK`` value, whatever its
type, so a reader learns that a secret is there and never what it is, not even whether it is
empty. A client that reads, edits and writes a document back sends ``MASK`` where it left a
secret alone: ``unmask`` puts the stored value back there, so a read-modify-write changes
only what the client changed.
"""

import json

from nailgun_platform import errors
from nailgun_platform.secrets import pointers

#: what every secret value reads as for an identity that may not see it
MASK = "<secret>"


class MaskWithoutValue(errors.InvalidData):
    """The mask was written where no value is stored to keep: 400, the client must send the value."""


def mask(document, secret):
    """A copy of ``document`` with ``MASK`` at each pointer of ``secret`` (pointers it does not have are
    skipped: the set may come from another version of the document)."""
    masked = pointers.copy_containers(document)
    for pointer in sorted(secret, key=len, reverse=True):
        if _exists(masked, pointer):
            masked = pointers.replace(masked, pointer, MASK)
    return masked


def unmask(document, stored, secret):
    """A copy of ``document`` in which each secret pointer (``classify`` of ``document``) holding ``MASK``
    holds the value ``stored`` has there.

    Raises MaskWithoutValue (400) where that would guess: ``stored`` has nothing there (a new
    secret written as the mask), the mask sits in a list entry that is not the one stored at
    its position (entries removed, added or reordered: keeping the stored value would move one
    entry's secret to another), or ``MASK`` is where no secret is (a masked value copied to a
    plain key). Storing the mask itself would lose a secret silently.
    """
    result = pointers.copy_containers(document)
    missing, moved = [], []
    for pointer in sorted(secret):
        if pointers.get(result, pointer, None) != MASK:
            continue
        if not _exists(stored, pointer):
            missing.append(pointer)
        elif not _same_entries(document, stored, pointer, secret):
            moved.append(pointer)
        else:
            result = pointers.replace(result, pointer, pointers.copy_containers(pointers.get(stored, pointer)))
    stray = [pointer for pointer in pointers.leaves(result) if pointers.get(result, pointer) == MASK
             and pointer not in missing and pointer not in moved] if holds_mask(result) else []
    if missing or moved or stray:
        reasons = []
        if missing:
            reasons.append("no value is stored at {0} to keep".format(", ".join(missing)))
        if moved:
            reasons.append("the list entries around {0} are not the stored ones, so which secret to keep is "
                           "unknown".format(", ".join(moved)))
        if stray:
            reasons.append("{0} hold(s) no secret".format(", ".join(stray)))
        raise MaskWithoutValue("{0} is the mask of a secret, and {1}: send the value itself".format(
            MASK, "; ".join(reasons)), errors=missing + moved + stray)
    return result


def _same_entries(document, stored, pointer, secret):
    """Whether every list entry on the way to ``pointer`` is, as a client sees it (masked), the entry
    ``stored`` has at that position."""
    tokens = pointers.tokens(pointer)
    for depth in range(1, len(tokens)):
        parent = "".join("/" + pointers.escape(token) for token in tokens[:depth - 1])
        if not isinstance(pointers.get(document, parent, None), list):
            continue
        entry = "".join("/" + pointers.escape(token) for token in tokens[:depth])
        inside = {p[len(entry):] for p in secret if p.startswith(entry + "/")}
        seen, kept = pointers.get(document, entry), pointers.get(stored, entry, _ABSENT)
        if kept is _ABSENT or _canonical(mask(seen, inside)) != _canonical(mask(kept, inside)):
            return False
    return True


def _canonical(value):
    return json.dumps(value, sort_keys=True)


#: the types of JSON's scalars but strings, as decoded
_NOT_STRINGS = frozenset((int, float, bool, type(None)))


def holds_mask(document):
    """Whether ``MASK`` is one of the values of ``document`` (a walk that stops at the first)."""
    stack = [[document]]  # containers; the document is the one item of a list around it
    while stack:
        container = stack.pop()
        for item in container.values() if isinstance(container, dict) else container:
            kind = type(item)
            if kind is str:
                if item == MASK:
                    return True
            elif kind is dict or kind is list:
                stack.append(item)
            elif kind in _NOT_STRINGS:
                continue
            elif isinstance(item, (dict, list)):
                stack.append(item)
            elif item == MASK:
                return True
    return False


_ABSENT = object()


def _exists(document, pointer):
    try:
        pointers.get(document, pointer)
    except KeyError:
        return False
    return True
