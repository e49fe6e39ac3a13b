"""Documents' clear content kept in memory by the version that holds it, so that a computed read (an
effective GET the read cache does not replay: the first after any write) neither loads nor parses nor
opens the documents it merges again.

A document's content is immutable once written: a write makes a new version and bumps the environment's
revision. The key is what tells one version's content from any other's, even after a deletion (SQLite
reuses the ids of deleted rows): the storage driver, the environment and when it was created (a
re-created environment), the document, its version and revision (per environment, it only grows).
Content is kept only by the key set that opened it: a rotation or a retirement, which loads a new set
(``secrets.keyset``), forgets everything kept, so a value no key opens any more fails as it would
have. Memory: at most ``READ_CACHE.documents_max_bytes`` of documents' JSON text (the parsed objects take
a few times that), least recently used out first; 0 keeps nothing.

What is handed out is shared by every request: callers must never change it (``merge.values`` copies
what it fills, masking copies what it masks).
"""
import collections
import threading

from nailgun_host.public import settings
from nailgun_platform.public import secrets as host_secrets

_lock = threading.Lock()
_kept = collections.OrderedDict()  # key -> (data, marker free, size)
_state = {"keyset": None, "bytes": 0}


def max_bytes():
    """``READ_CACHE.documents_max_bytes``."""
    return settings["READ_CACHE"]["documents_max_bytes"]


def get(key):
    """``(data, marker_free)`` kept under ``key``, or None."""
    keyset = host_secrets.keyset()
    with _lock:
        if _state["keyset"] is not keyset:
            _forget(keyset)
            return None
        found = _kept.get(key)
        if found is None:
            return None
        _kept.move_to_end(key)
        return found[0], found[1]


def keyset():
    """The key set in force, to be taken before content is read (``put``'s ``opened_by``)."""
    return host_secrets.keyset()


def put(key, data, marker_free, size, opened_by):
    """Keep ``data`` (``size``: its JSON text's length) under ``key``, the least recently used out to make room;
    not when the key set in force is no longer ``opened_by`` (``keyset()`` before ``data`` was read and opened):
    what the old keys opened may be what the new ones no longer open (a retirement)."""
    limit = max_bytes()
    if size > limit:
        return
    keyset = host_secrets.keyset()
    if keyset is not opened_by:
        return
    with _lock:
        if _state["keyset"] is not keyset:
            _forget(keyset)
        if key in _kept:
            return
        _kept[key] = (data, marker_free, size)
        _state["bytes"] += size
        while _state["bytes"] > limit:
            _, (_, _, dropped) = _kept.popitem(last=False)
            _state["bytes"] -= dropped


def clear():
    """Forget everything kept (tests)."""
    with _lock:
        _forget(None)


def _forget(keyset):
    _kept.clear()
    _state["keyset"], _state["bytes"] = keyset, 0
