"""The secrets' Fernet keys in the cloud's key manager (Barbican, through castellan) rather than on a host's disk.

Each key is one castellan ``OpaqueData`` object, stored, fetched and deleted here; which object holds which key
of the set (the staged key, the primary, the old ones: the roles of ``keys``) is the database's to know
(``nailgun_host.db.managed_keys``), so neither a host's disk nor the database holds key material.

The key manager is reached as a Keystone user: ``SECRETS.castellan.auth``, or else the service user of
``AUTH.keystone``, through keystoneauth1 (its token kept and renewed by the plugin, so fetching a key set is one
round trip a key once the token is there). Castellan makes a keystoneauth1 session of its own for every call,
without a timeout, so a key manager that accepts a connection and never answers would hold the calling worker
forever: the plugin gives each request of those sessions what is left of ``SECRETS.castellan.timeout`` for the
whole operation (a key set's fetch is several calls, each several requests), and the operation runs in a thread of
its own that the caller waits for as long at most (an answer sent a byte at a time). Whatever goes wrong on the way
(refused, reset, timed out, an answer that is not Barbican's) is ``keys.KeyManagerUnavailable``; an object that is
not there, ``keys.KeyMissing``.
"""
import base64
import contextlib
import logging
import threading
import time

from castellan import key_manager as castellan_key_manager
from castellan import options as castellan_options
from castellan.common import exception as castellan_exception
from castellan.common.objects import opaque_data
from keystoneauth1.identity import v3
from oslo_config import cfg
from oslo_context import context as oslo_context

from nailgun_platform import errors, secrets
from nailgun_platform.secrets import keys

LOG = logging.getLogger(__name__)
#: the name of the objects holding keys (what an operator sees in ``openstack secret list``)
OBJECT_NAME = "fuel-nailgun-extensions fernet key"


class _TimedPassword(v3.Password):
    """A Keystone password plugin that gives each request of the sessions it serves what is left of the
    operation's time (``within``; see the module): keystoneauth1 asks it for the request's headers first."""

    def __init__(self, timeout, **kwargs):
        super().__init__(**kwargs)
        self.timeout = timeout
        self._deadline = threading.local()

    @contextlib.contextmanager
    def within(self):
        """One operation, however many requests it makes, in ``timeout`` seconds at most (the outermost counts)."""
        if getattr(self._deadline, "at", None) is not None:
            yield
            return
        self._deadline.at = time.monotonic() + self.timeout
        try:
            yield
        finally:
            self._deadline.at = None

    def get_access(self, session, **kwargs):
        deadline = getattr(self._deadline, "at", None)
        session.timeout = self.timeout if deadline is None else max(0.05, deadline - time.monotonic())
        return super().get_access(session, **kwargs)


class _ServiceContext(oslo_context.RequestContext):
    """What castellan is handed to act as our user: the plugin above, whose token is reused across calls."""

    def __init__(self, plugin):
        super().__init__()
        self._plugin = plugin

    def get_auth_plugin(self):
        return self._plugin


class KeyManager:
    """Castellan configured from ``SECRETS.castellan`` (and the Keystone user): store, fetch and delete keys."""

    def __init__(self, options, keystone):
        auth = options.get("auth") or {field: keystone.get(field) for field in secrets.KEY_MANAGER_USER}
        missing = [field for field in ("auth_url", "username", "password", "project_name") if not auth.get(field)]
        if missing:
            raise keys.KeyRepositoryError(
                "SECRETS.key_manager is castellan, but the Keystone user to reach it lacks {0}: set AUTH.keystone's "
                "service user, or SECRETS.castellan.auth".format(", ".join(missing)))
        self.describe = "castellan ({0} at {1})".format(
            options["backend"], options.get("barbican_endpoint") or "the Keystone catalog's key-manager endpoint")
        conf = cfg.ConfigOpts()
        conf([], project="fuel-nailgun-extensions", default_config_files=[], default_config_dirs=[])
        castellan_options.set_defaults(
            conf, backend=options["backend"], barbican_endpoint=options.get("barbican_endpoint"),
            auth_endpoint=auth["auth_url"], verify_ssl=True, verify_ssl_path=auth.get("cafile"),
            barbican_endpoint_type=options["interface"], number_of_retries=1, retry_delay=1)
        self._manager = castellan_key_manager.API(conf)
        self._plugin = _TimedPassword(
            options["timeout"], auth_url=auth["auth_url"], username=auth["username"], password=auth["password"],
            project_name=auth["project_name"], user_domain_name=auth.get("user_domain_name") or "Default",
            project_domain_name=auth.get("project_domain_name") or "Default")
        self._context = _ServiceContext(self._plugin)

    def store(self, key):
        """Store the Fernet key ``key`` (its base64 text, bytes); the new object's id."""
        return self._bounded(self._call, self._manager.store,
                             opaque_data.OpaqueData(base64.urlsafe_b64decode(key), name=OBJECT_NAME))

    def fetch(self, object_id):
        """The Fernet key (its base64 text, bytes) the object ``object_id`` holds."""
        return self._bounded(self._fetch, object_id)

    def fetch_all(self, refs, complete=False):
        """``{number: Fernet key}`` of the objects ``refs`` (``{number: object id}``) names, all within the
        timeout. Only the primary key's object must be there: an old key's that is gone leaves out the values it
        sealed (``keys.UndecryptableValue`` says so), the staged key's seals nothing until ``rotate`` stages a new
        one; with ``complete`` (a move), any that is gone is ``keys.KeyMissing``."""
        return self._bounded(self._fetch_all, refs, complete)

    def delete(self, object_id):
        """Delete the object ``object_id`` (one already gone counts as deleted)."""
        try:
            self._bounded(self._call, self._manager.delete, object_id)
        except castellan_exception.ManagedObjectNotFoundError:
            pass

    def _fetch(self, object_id):
        try:
            managed = self._call(self._manager.get, object_id)
        except castellan_exception.ManagedObjectNotFoundError:
            raise keys.KeyMissing(
                "The key manager holds no object {0}, which this database names as one of its secrets' keys "
                "(deleted, or another project's): restore it, or point SECRETS.castellan at the key manager and "
                "user the keys were stored with".format(object_id)) from None
        raw = managed.get_encoded()
        if not isinstance(raw, bytes) or len(raw) != 32:
            raise keys.KeyRepositoryError("The key manager's object {0} does not hold a Fernet key".format(object_id))
        return base64.urlsafe_b64encode(raw)

    def _fetch_all(self, refs, complete):
        fetched = {}
        for number, object_id in sorted(refs.items()):
            try:
                fetched[number] = self._fetch(object_id)
            except keys.KeyMissing as exc:
                if complete or number == max(refs):
                    raise
                LOG.error("%s: %s", exc, "run nailgun-secrets rotate, which stages a new key" if number == keys.STAGED
                          else "values sealed with key {0} cannot be read".format(number))
        return fetched

    def _bounded(self, function, *args):
        """``function(*args)`` in a thread of its own, waited for ``SECRETS.castellan.timeout`` at most: the
        timeout keystoneauth1 gives each request bounds each wait for a byte, not an answer sent slowly."""
        outcome = {}

        def run():
            try:
                with self._plugin.within():
                    outcome["value"] = function(*args)
            except BaseException as exc:
                outcome["error"] = exc

        worker = threading.Thread(target=run, name="nailgun-key-manager", daemon=True)
        try:
            worker.start()
        except RuntimeError as exc:  # no thread now
            raise keys.KeyManagerUnavailable("The key manager cannot be asked now: {0}".format(exc)) from None
        worker.join(self._plugin.timeout)
        if worker.is_alive():
            raise keys.KeyManagerUnavailable("The key manager did not answer within {0} s".format(self._plugin.timeout))
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    def _call(self, method, *args):
        try:
            return method(self._context, *args)
        except castellan_exception.ManagedObjectNotFoundError:
            raise
        except Exception as exc:  # castellan passes some of keystoneauth1's and barbicanclient's errors through
            raise keys.KeyManagerUnavailable("The key manager cannot be used now: {0}".format(
                errors.first_line(exc))) from None
