"""Documents' clear content kept in memory by the version that holds it, so that a computed read (an
effective GET the read cache does not replay: the first after any write) neither loads nor parses nor
opens the documents it merges again.

A document's content is immutable once written: a write makes a new version and bumps the environment's
revision. The key is what tells one version's content from any other's, even after a deletion (SQLite
reuses the ids of deleted rows): the storage driver, the environment and when it was created (a
re-created environment), the document, its version and revision (per environment, it only grows).
Content is kept only by the key set that opened it: a rotation or a retirement, which loads a new set
(``secrets.keyset``), forgets everything kept, so a value no key opens any more fails as it would
have. Memory: at most ``READ_CACHE.documents_max_bytes`` of documents' JSON text and their members' (the parsed
objects take a few times that), least recently used out first; 0 keeps nothing.

What is handed out is shared by every request: callers must never change it (``merge.values`` copies
what it fills, masking copies what it masks). A document's content without markers is kept with the text of
its members once an answer asks for it (``members``), so an answer that shares them is not encoded whole again
(``json_values.spliced``); that text counts in the bound too.
"""
import collections
import threading

from nailgun_host.public import settings
from nailgun_platform.public import secrets as host_secrets
from nailgun_ext_configdb.objects import json_values


class _Kept:
    """What is kept of one version: its content, whether it holds no marker, the bytes it counts for, and the
    text of its members (``json_values.members``) once asked for."""

    __slots__ = ("data", "marker_free", "size", "members")

    def __init__(self, data, marker_free, size):
        self.data, self.marker_free, self.size, self.members = data, marker_free, size, None


_lock = threading.Lock()
_kept = collections.OrderedDict()  # key -> _Kept
_by_content = {}  # id(data) -> _Kept, for what is kept: the content keeps its id from being reused
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
        return found.data, found.marker_free


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
        _kept[key] = _by_content[id(data)] = _Kept(data, marker_free, size)
        _state["bytes"] += size
        _bound(limit)


def members(data):
    """``json_values.members(data)`` when ``data`` is kept content without markers (made once, counted in the
    bound), else None: content no longer kept, or with markers (``merge.values`` copies its objects)."""
    with _lock:
        found = _by_content.get(id(data))
        if found is None or not found.marker_free:
            return None
        if found.members is not None:
            return found.members
    made = json_values.members(data)
    size = sum(map(len, made.values()))
    with _lock:
        if _by_content.get(id(data)) is found and found.members is None:
            found.members = made
            found.size += size
            _state["bytes"] += size
            _bound(max_bytes())
    return made


def _bound(limit):
    """The least recently used out until what is kept fits in ``limit`` bytes."""
    while _state["bytes"] > limit and _kept:
        _, dropped = _kept.popitem(last=False)
        if _by_content.get(id(dropped.data)) is dropped:
            del _by_content[id(dropped.data)]
        _state["bytes"] -= dropped.size


def clear():
    """Forget everything kept (tests)."""
    with _lock:
        _forget(None)


def _forget(keyset):
    _kept.clear()
    _by_content.clear()
    _state["keyset"], _state["bytes"] = keyset, 0
