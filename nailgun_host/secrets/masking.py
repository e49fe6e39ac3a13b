"""Masking secrets for a reader who may not see them, and keeping them when the mask comes back.

Every secret leaf (a pointer from ``classify``) reads as the one ``MASK`` value, whatever its
type, so a reader learns that a secret is there and never what it is, not even whether it is
empty. A client that reads, edits and writes a document back sends ``MASK`` where it left a
secret alone: ``unmask`` puts the stored value back there, so a read-modify-write changes
only what the client changed.
"""

from nailgun_host import errors
from nailgun_host.secrets import pointers

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
    holds the value ``stored`` has there. ``MASK`` anywhere else is the client's own text.

    Raises MaskWithoutValue when ``stored`` has nothing at such a pointer (a new secret key
    written as the mask): storing the mask itself would lose the secret silently.
    """
    result = pointers.copy_containers(document)
    missing = []
    for pointer in sorted(secret):
        if pointers.get(result, pointer, None) != MASK:
            continue
        if not _exists(stored, pointer):
            missing.append(pointer)
            continue
        result = pointers.replace(result, pointer, pointers.copy_containers(pointers.get(stored, pointer)))
    if missing:
        raise MaskWithoutValue(
            "{0} is the mask of a secret, and no value is stored at {1} to keep: send the value "
            "itself".format(MASK, ", ".join(missing)), errors=missing)
    return result


def _exists(document, pointer):
    try:
        pointers.get(document, pointer)
    except KeyError:
        return False
    return True
