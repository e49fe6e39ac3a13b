"""Secrets (issue 11): which values are secret (``classify``), how they are stored (``sealing``,
under the Fernet keys of ``keys``) and how they read for whoever may not see them (``masking``).

None of it knows the web layer or the database: the storage (the ``sealed`` column type, ``nailgun_host.db.sealed``) and
the handlers call it. ``keyset()`` is the one way to the keys of the configured repository
(``SECRETS.key_repository``); it notices a rotation within a second, so running servers
decrypt what a newly rotated primary encrypts without a restart.
"""
import os
import threading
import time

from nailgun_platform import hosting
from nailgun_platform.secrets import classify, keys

#: how often (seconds) ``keyset`` looks whether the repository changed
RECHECK_AFTER = 1.0

_lock = threading.Lock()
_cache = {"path": None, "stamp": None, "keyset": None, "checked": 0.0}


#: the name of the default repository, after the SQLite file's: two databases of one directory have their own
SUFFIX = ".fernet-keys"


def repository_path():
    """The key repository's directory: ``SECRETS.key_repository``, by default ``<SQLite file>.fernet-keys``
    (the settings require one for any other database)."""
    configured = hosting.settings["SECRETS"].get("key_repository")
    if configured:
        return os.path.abspath(configured)
    return hosting.settings.sqlite_file + SUFFIX


def earlier_default():
    """``fernet-keys`` next to the SQLite file, the default of earlier versions, when it is there and not in use."""
    if hosting.settings["SECRETS"].get("key_repository") or hosting.settings.sqlite_file is None:
        return None
    path = os.path.join(os.path.dirname(hosting.settings.sqlite_file), "fernet-keys")
    return path if os.path.isdir(path) else None


def patterns():
    """The key-name patterns that mark a value secret (``SECRETS.patterns``, or the defaults)."""
    configured = hosting.settings["SECRETS"].get("patterns")
    return classify.DEFAULT_PATTERNS if configured is None else tuple(configured)


def keyset(create=True):
    """The KeySet of the configured repository (created at first use when missing, if ``create``)."""
    path = repository_path()
    now = time.monotonic()
    cached = _cache["keyset"]
    if cached is not None and _cache["path"] == path and now - _cache["checked"] < RECHECK_AFTER:
        return cached
    with _lock:
        stamp = _stamp(path)
        if _cache["keyset"] is None or _cache["path"] != path or _cache["stamp"] != stamp:
            _cache.update(keyset=keys.load(path, create=create), path=path, stamp=_stamp(path))
        _cache["checked"] = now
        return _cache["keyset"]


def _stamp(path):
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_ino


def attribute_secrets(attributes):
    """Classifier of a cluster's editable attributes: the values of password fields and secret-named ones."""
    return classify.attribute_pointers(attributes, patterns())


def every_leaf(document):
    """Classifier of a cluster's generated attributes: all of them."""
    return classify.every_leaf(document)


def release_secrets(metadata):
    """Classifier of a release's ``attributes_metadata``: the editable defaults a cluster copies
    (password fields and secret-named ones). The ``generated`` part is a template of generators,
    not values."""
    editable = metadata.get("editable") if isinstance(metadata, dict) else None
    if not isinstance(editable, dict):
        return set()
    return {"/editable" + pointer for pointer in attribute_secrets(editable)}


def whole_document(document):
    """Classifier of a document that is secret as a whole (what the orchestrator is sent): one token."""
    return {""} if document not in (None, {}, []) else set()
