"""Configuration sessions (seeds 000 and 001): stage changes to one environment, deploy them at once.

A session belongs to a *scope*: ``("cluster", id)`` (the environment model, and the documents of
the ConfigDB environment linked to that cluster) or ``("config", id)`` (an unlinked ConfigDB
environment). Several sessions may be open on one scope; each stages whole documents
(``ConfigSessionChange``), tagged with the extension that owns them; the first deploy of a
document wins and a later session that touches it gets 409 and becomes invalid ("almost lock
free"). ``SESSIONS.strict`` restores Murano's rule: any deploy invalidates every other open
session of the scope.

States: open -> deploying -> deployed (one transaction: another transaction sees ``deployed`` or
``open``, never a half deploy), open -> invalid | abandoned | expired. Only this module writes
``state``. Deploy takes its locks in the order every writer takes them (the cluster row, the
ConfigDB environment row through ``on_session_lock``, then the session row) and claims the
session with a conditional UPDATE, so two deploys of one session give one 200 and one 403.

What Murano got wrong, and this does not: check-then-set deploys with no lock, the revision
bumped by the engine's reply (here by the server, at commit), sessions of other users answered
401 (here 403), invalid sessions kept forever (here: expiry and ``collect_garbage``).
"""
import datetime

from nailgun_host.db.models import SESSION_SCOPES, ConfigSession, ConfigSessionChange  # noqa: F401


class Scope(tuple):
    """``(kind, environment_id)``: whose environment a session belongs to."""

    def __new__(cls, kind, environment_id):
        assert kind in SESSION_SCOPES
        return super().__new__(cls, (kind, int(environment_id)))

    kind = property(lambda self: self[0])
    environment_id = property(lambda self: self[1])


def now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


def revision(scope):
    """The scope's current revision: ``clusters.revision``, or the extension's (``session_revision``)."""
    raise NotImplementedError


def bump_cluster_revision(cluster):
    """A direct change of the cluster's model: its revision goes up by one (the caller holds its row lock)."""
    raise NotImplementedError


def open_session(scope, owner, ttl=None):
    """A new open session on ``scope`` for ``owner``, with each extension's ``on_session_open`` snapshot."""
    raise NotImplementedError


def find(session_id, lock=False):
    """The session of that id (FOR UPDATE with ``lock``), expired on the way when past its time; None if none."""
    raise NotImplementedError


def check_access(session, scope, owner, write):
    """Refuse what the seeds refuse, in this order: another scope's session 400, another owner's 403 (unless
    the caller may act on all sessions: the api layer decides and passes ``owner=None``), and with ``write``
    a session that is not open 403 naming its state."""
    raise NotImplementedError


def staged(session, extension, document_key):
    """The staged change of that document in ``session``, or None."""
    raise NotImplementedError


def stage(session, extension, document_key, descriptor, data, changed_keys, base=None):
    """Stage ``data`` (already sealed by the extension) as the whole new document; ``base`` (kept from
    the first staging of the document on) says what the document was then. The session must be
    open and locked (``find(..., lock=True)``). Its expiry slides (``SESSIONS.ttl``, at most ``max_age``);
    more than ``SESSIONS.max_documents`` documents is a 400."""
    raise NotImplementedError


def unstage(session, extension, document_key):
    """Forget a staged document (it is equal to the current one again)."""
    raise NotImplementedError


def changes(session, extension=None):
    """The staged changes, oldest first, of one extension or all."""
    raise NotImplementedError


def invalidate(session, conflicts):
    """Mark an open session invalid with the 409 entries that made it so."""
    raise NotImplementedError


def deploy(session):
    """Deploy ``session`` atomically (see the module); the answer's session is ``deployed``.

    403 unless open; 409 with the conflicting documents (the session becomes invalid, and that is all
    that is written); any NailgunError an extension raises rolls the whole request back.
    """
    raise NotImplementedError


def abandon(session):
    """DELETE: an open or invalid session ends as abandoned; deploying or deployed ones 403."""
    raise NotImplementedError


def deployments(scope, limit=50, before=None):
    """Deployed sessions of ``scope``, newest first (``before``: revisions below it)."""
    raise NotImplementedError


def collect_garbage():
    """Expire open sessions past their time; delete the staged rows of ended, undeployed sessions older
    than ``SESSIONS.keep_days``. Returns how many sessions it touched."""
    raise NotImplementedError


def delete_scope(scope):
    """The environment of ``scope`` is deleted: its sessions go with it."""
    raise NotImplementedError


def to_dict(session):
    """Seed 001's session JSON (ISO datetimes), with the documents staged and, when invalid, the conflicts."""
    raise NotImplementedError
