"""Secrets (issue 11): which values are secret (``classify``), how they are stored (``sealing``,
under the Fernet keys of ``keys``) and how they read for whoever may not see them (``masking``).

None of it knows the web layer or the database: the storage (the ``sealed`` column type, ``nailgun_host.db.sealed``) and
the handlers call it. ``keyset()`` is the one way to the keys in force, wherever ``SECRETS.key_manager`` keeps them: a
repository on disk (``local``, ``SECRETS.key_repository``) or the cloud's key manager (``castellan``:
``key_manager``, the database naming the objects). It notices a rotation within a second, so running servers
decrypt what a newly rotated primary encrypts without a restart.
"""
import logging
import os
import threading
import time

from nailgun_platform import hosting
from nailgun_platform.secrets import classify, keys

LOG = logging.getLogger(__name__)
#: how often (seconds) ``keyset`` looks whether the repository (or the database's key objects) changed
RECHECK_AFTER = 1.0

_lock = threading.Lock()
_cache = {"path": None, "stamp": None, "keyset": None, "checked": 0.0}
#: castellan: the manager of the settings in force, the keys fetched (and when), the last failure (and when)
_managed_lock = threading.Lock()
_managed = {"options": None, "manager": None, "refs": None, "keyset": None, "fetched": 0.0, "checked": 0.0,
            "failure": None, "failed": 0.0, "renew_started": float("-inf")}
#: held while a renewal fetches the keys (``_renew``)
_renewing = threading.Lock()
#: the last share of ``SECRETS.castellan.keys_seconds`` in which a request has the keys fetched again ahead
RENEW_SHARE = 0.2


#: the settings of the Keystone user that reaches the key manager (``SECRETS.castellan.auth``; by default those of
#: ``AUTH.keystone``'s service user)
KEY_MANAGER_USER = ("auth_url", "username", "password", "project_name", "user_domain_name", "project_domain_name",
                    "cafile")

#: the name of the default repository, after the SQLite file's: two databases of one directory have their own
SUFFIX = ".fernet-keys"


def repository_path():
    """The key repository's directory: ``SECRETS.key_repository``, by default ``<SQLite file>.fernet-keys``
    (the settings require one for any other database)."""
    configured = hosting.settings["SECRETS"].get("key_repository")
    if configured:
        return os.path.abspath(configured)
    if hosting.settings.sqlite_file is None:  # the key manager's keys, moved out: the settings must say where
        raise keys.KeyRepositoryError("SECRETS.key_repository must name the directory of the secrets' keys when "
                                      "the database is not a SQLite file")
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


def managed():
    """Whether the keys are in the cloud's key manager (``SECRETS.key_manager: castellan``), not on disk."""
    return hosting.settings["SECRETS"]["key_manager"] == "castellan"


def manager():
    """The ``key_manager.KeyManager`` of the settings in force (made again when they change)."""
    try:  # castellan is an extra: only where it is used
        from nailgun_platform.secrets import key_manager as castellan_keys
    except ImportError as exc:
        raise keys.KeyRepositoryError("SECRETS.key_manager castellan needs castellan ({0}): pip install "
                                      "'fuel-nailgun-extensions[castellan]'".format(exc)) from None
    options = (repr(hosting.settings["SECRETS"]["castellan"]), repr(hosting.settings["AUTH"]["keystone"]))
    if _managed["options"] != options:
        with _managed_lock:
            if _managed["options"] != options:
                _managed.update(manager=castellan_keys.KeyManager(hosting.settings["SECRETS"]["castellan"],
                                                                  hosting.settings["AUTH"]["keystone"]),
                                options=options, refs=None, keyset=None, failure=None)
    return _managed["manager"]


def keys_at_hand():
    """Whether the keys in force are in this process's memory (always, from disk): a replayed answer that shows
    secrets is replayed only while they are, so a key manager out of reach stops it as it stops every read. In
    the last ``RENEW_SHARE`` of their time, it has them fetched again, as ``keyset`` does."""
    if not managed():
        return True
    if _managed["keyset"] is None:
        return False
    age = time.monotonic() - _managed["fetched"]
    limit = hosting.settings["SECRETS"]["castellan"]["keys_seconds"]
    if limit * (1 - RENEW_SHARE) <= age < limit:
        _renew(_managed["manager"])
    return age < limit


def forget_keys():
    """Drop the keys fetched from the key manager (a command that changed them reads them again)."""
    with _managed_lock:
        _managed.update(refs=None, keyset=None, failure=None)


def keyset(create=True):
    """The KeySet of the keys in force: a repository's (created at first use when missing, if ``create``), or
    the key manager's (``nailgun_host.db.managed_keys`` creates those)."""
    if managed():
        return _managed_keyset()
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


def _managed_keyset():
    """The key manager's keys the database names (``hosting.key_refs``): looked at once per ``RECHECK_AFTER``,
    fetched again when the objects change, and once ``SECRETS.castellan.keys_seconds`` have passed; a request in
    the last ``RENEW_SHARE`` of that time has them fetched again in the background (``_renew``) while every
    request goes on with them, so none waits for the key manager while it answers. A fetch that fails forgets
    the keys and is remembered for ``RECHECK_AFTER`` (every request meanwhile fails at once), and a request
    waits for another's fetch at most ``SECRETS.castellan.timeout``."""
    options = hosting.settings["SECRETS"]["castellan"]
    key_manager = manager()
    now = time.monotonic()
    cached = _managed["keyset"]
    if cached is not None and now - _managed["checked"] < RECHECK_AFTER:
        age = now - _managed["fetched"]
        if age < options["keys_seconds"]:
            if age >= options["keys_seconds"] * (1 - RENEW_SHARE):
                _renew(key_manager)
            return cached
    if not _managed_lock.acquire(timeout=options["timeout"]):
        raise keys.KeyManagerUnavailable("The key manager is slow to answer another request of this process")
    try:
        now = time.monotonic()
        failure = _managed["failure"]
        if failure is not None and now - _managed["failed"] < RECHECK_AFTER:
            raise type(failure)(str(failure))  # a new one: raising the same again would grow its traceback
        cached = _managed["keyset"]
        if cached is not None and now - _managed["checked"] < RECHECK_AFTER and now - _managed["fetched"] < \
                options["keys_seconds"]:
            return cached
        try:
            refs = hosting.key_refs()
            if cached is None or refs != _managed["refs"] or now - _managed["fetched"] >= options["keys_seconds"]:
                _fetch(key_manager, refs)
        except Exception as exc:
            _managed.update(keyset=None, refs=None, failure=exc, failed=time.monotonic())
            raise
        _managed.update(checked=now, failure=None)
        return _managed["keyset"]
    finally:
        _managed_lock.release()


def _fetch(key_manager, refs):
    """Fetch the keys ``refs`` names and put them in force (under ``_managed_lock``)."""
    _install(key_manager, refs, _fetched(key_manager, refs))


def _fetched(key_manager, refs):
    if not refs:
        raise keys.KeyRepositoryError(
            "SECRETS.key_manager is castellan, and this database names no key in the key manager: a first start "
            "makes them, or move the keys there with nailgun-secrets move-keys")
    return key_manager.fetch_all(refs)


def _install(key_manager, refs, fetched):
    cached = _managed["keyset"]
    if cached is None or cached.keys != fetched:  # the same keys: what was opened with them stays
        cached = keys.KeySet(key_manager.describe, fetched)
    _managed.update(keyset=cached, refs=refs, fetched=time.monotonic())


def _renew(key_manager):
    """Fetch the keys again in a thread of their own, holding no lock a request waits for meanwhile; one renewal
    at a time, at most one a ``RECHECK_AFTER``; a failure leaves those in force until their time is up."""
    now = time.monotonic()
    if now - _managed["renew_started"] < RECHECK_AFTER or not _renewing.acquire(blocking=False):
        return
    _managed["renew_started"] = now

    def renew():
        try:
            refs = hosting.key_refs()
            fetched = _fetched(key_manager, refs)
            with _managed_lock:
                if _managed["manager"] is key_manager and _managed["keyset"] is not None and \
                        _managed["refs"] == refs:
                    _install(key_manager, refs, fetched)
        except Exception as exc:
            LOG.warning("The secrets' keys could not be fetched again ahead of their time (%s): those in force "
                        "serve until it is up", exc)
        finally:
            _renewing.release()

    try:
        threading.Thread(target=renew, name="nailgun-keys", daemon=True).start()
    except RuntimeError:  # no thread now: the keys' time runs out, and a request fetches them
        _renewing.release()


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
