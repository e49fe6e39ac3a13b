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
``state``; invalid, abandoned, expired and deployed are final. Deploy takes its locks in the order
every writer takes them (the cluster row, the ConfigDB environment row through ``on_session_lock``,
then the session row) and claims the session with a conditional UPDATE, so two deploys of one
session give one 200 and one 403.

A failed request leaves the database as it was, with one deliberate exception: a session found
invalid (409) or expired (403) is marked so on its own (``_end_alone``: the request's other
writes rolled back, that one committed), so the answer and the stored state agree.

What Murano got wrong, and this does not: check-then-set deploys with no lock, the revision
bumped by the engine's reply (here by the server, at commit), sessions of other users answered
401 (here 403), invalid sessions kept forever (here: expiry and ``collect_garbage``).
"""
import datetime
import uuid

import sqlalchemy as sa

from nailgun_host import errors, extensions
from nailgun_host.db import db, get_engine, writing
from nailgun_host.db.models import (ACTIVE_TASK_STATUSES, CLUSTER_TASK_NAMES, SESSION_SCOPES, Cluster,
                                    ConfigSession, ConfigSessionChange, Task)
from nailgun_host.settings import settings
from nailgun_platform.clock import now
from nailgun_platform.session_history import seal_history

#: the bounds of a session's ``ttl`` (seconds) a client may ask for
MIN_TTL, MAX_TTL = 60, 604800


class Scope(tuple):
    """``(kind, environment_id)``: whose environment a session belongs to."""

    def __new__(cls, kind, environment_id):
        assert kind in SESSION_SCOPES
        return super().__new__(cls, (kind, int(environment_id)))

    kind = property(lambda self: self[0])
    environment_id = property(lambda self: self[1])


def scope_of(session):
    return Scope(session.scope, session.environment_id)


def revision(scope):
    """The scope's current revision: ``clusters.revision``, or the extension's (``session_revision``)."""
    if scope.kind == "cluster":
        found = db.execute(sa.select(Cluster.revision).where(Cluster.id == scope.environment_id)).scalar()
        return int(found or 0)
    for answer in extensions.fire("session_revision", scope.kind, scope.environment_id):
        if answer is not None:
            return int(answer)
    return 0


def bump_cluster_revision(cluster):
    """A direct change of the cluster's model: its revision goes up by one (the caller holds its row lock)."""
    cluster.revision = int(cluster.revision or 0) + 1
    db.flush()
    return cluster.revision


def cluster_of(scope):
    """The cluster of a ``cluster`` scope (404 when it is gone)."""
    found = db.get(Cluster, scope.environment_id)
    if found is None:
        raise errors.ObjectNotFound("Cluster {0} not found".format(scope.environment_id))
    return found


def check_not_deploying(cluster, error=errors.NotAllowed):
    """``error`` (seed 001: 403 to open a session, 409 to deploy one) while a provisioning or deployment task
    of the cluster is pending or running: the environment is being deployed."""
    running = db.execute(sa.select(Task.id, Task.name).where(
        Task.cluster_id == cluster.id, Task.name.in_(CLUSTER_TASK_NAMES),
        Task.status.in_(ACTIVE_TASK_STATUSES))).first()
    if running is not None:
        raise error("Environment {0} is being deployed (task '{1}', id {2}): sessions can neither open nor "
                    "deploy until it ends".format(cluster.id, running.name, running.id), ["deploying"])


def _ttl(ttl):
    configured = int(settings["SESSIONS"]["ttl"])
    return configured if ttl is None else int(ttl)


def open_session(scope, owner, ttl=None):
    """A new open session on ``scope`` for ``owner``, with each extension's ``on_session_open`` snapshot.

    ``ttl``: seconds it stays open without a staging write (``SESSIONS.ttl`` by default); it never
    outlives ``SESSIONS.max_age``."""
    opened = now()
    session = ConfigSession(id=uuid.uuid4().hex, scope=scope.kind, environment_id=scope.environment_id,
                            owner=owner[:255], state="open", version=revision(scope), base={},
                            created_at=opened, updated_at=opened)
    session.expires_at = _expiry(session, opened, _ttl(ttl))
    db.add(session)
    db.flush()
    base = {}
    for extension in extensions.get_all_extensions():
        snapshot = extension.on_session_open(session)
        if snapshot is not None:
            base[extension.name] = snapshot
    session.base = base
    db.flush()
    return session


def _expiry(session, at, ttl):
    return min(at + datetime.timedelta(seconds=ttl),
               session.created_at + datetime.timedelta(seconds=int(settings["SESSIONS"]["max_age"])))


def _past_time(session):
    return session.state == "open" and session.expires_at <= now()


def find(session_id, lock=False):
    """The session of that id (FOR UPDATE with ``lock``), expired on the way when past its time; None if none.

    An open session past its time is marked expired on its own (``_end_alone``): whatever the
    request wrote before is rolled back, so the caller must answer with an error (403 expired)."""
    if not isinstance(session_id, str) or len(session_id) != 32:
        return None
    session = db.get(ConfigSession, session_id, with_for_update=True if lock else None, populate_existing=lock)
    if session is not None and _past_time(session):
        _end_alone(session, "expired")
    return session


def _end_alone(session, state, conflicts=None):
    """Move an open ``session`` to ``state`` and commit that alone: the rest of the request is rolled back
    (nothing it wrote may land with a refusal); a session no longer open is left as it is. On a connection of its
    own: a read that finds its session expired writes this, and a read's own statements write nothing
    (``nailgun_host.db.only_reads``)."""
    session_id = session.id
    db.rollback()
    with writing(get_engine()) as connection:
        connection.execute(sa.update(ConfigSession.__table__).where(
            ConfigSession.id == session_id, ConfigSession.state == "open").values(
            state=state, conflicts=conflicts, updated_at=now()))
    db.refresh(session)


def check_access(session, scope, owner, write):
    """Refuse what the seeds refuse, in this order: another scope's session 400, another owner's 403 (unless
    the caller may act on all sessions: the api layer decides and passes ``owner=None``), and with ``write``
    a session that is not open 403 naming its state."""
    if (session.scope, session.environment_id) != tuple(scope):
        raise errors.InvalidData("Session {0} belongs to another environment ({1} {2}), not to {3} {4}".format(
            session.id, session.scope, session.environment_id, scope.kind, scope.environment_id))
    if owner is not None and session.owner != owner:
        raise errors.NotAllowed("Session {0} belongs to another user".format(session.id))
    if write and session.state != "open":
        raise not_open(session)


def not_open(session):
    """The 403 of a change asked of a session that is no longer open (names its state)."""
    return errors.NotAllowed("Session {0} is {1}: it can no longer be changed or deployed".format(
        session.id, session.state), [{"session": session.id, "state": session.state}])


def staged(session, extension, document_key):
    """The staged change of that document in ``session``, or None."""
    return db.execute(sa.select(ConfigSessionChange).where(
        ConfigSessionChange.session_id == session.id, ConfigSessionChange.extension == extension,
        ConfigSessionChange.document_key == document_key)).scalar()


def stage(session, extension, document_key, descriptor, data, changed_keys, base=None):
    """Stage ``data`` (already sealed by the extension) as the whole new document; ``base`` (kept from
    the first staging of the document on) says what the document was then. The session must be
    open and locked (``find(..., lock=True)``). Its expiry slides (``SESSIONS.ttl``, at most ``max_age``);
    more than ``SESSIONS.max_documents`` documents is a 400."""
    if session.state != "open":
        raise not_open(session)
    at = now()
    change = staged(session, extension, document_key)
    if change is None:
        limit = int(settings["SESSIONS"]["max_documents"])
        count = db.execute(sa.select(sa.func.count()).select_from(ConfigSessionChange).where(
            ConfigSessionChange.session_id == session.id)).scalar()
        if count >= limit:
            raise errors.InvalidData("Session {0} already stages {1} documents, the most one session may "
                                     "(SESSIONS.max_documents): deploy it and open another".format(session.id, count))
        change = ConfigSessionChange(session_id=session.id, extension=extension, document_key=document_key,
                                     base=base)
        db.add(change)
    change.descriptor = descriptor
    change.data = data
    change.changed_keys = list(changed_keys)
    change.updated_at = at
    _touch(session, at)
    db.flush()
    return change


def _touch(session, at):
    """A staging write: the session's own ttl (what is left of it between its last write and its expiry;
    the cap when that was capped) starts again from now."""
    ttl = (session.expires_at - session.updated_at).total_seconds()
    session.expires_at = max(session.expires_at, _expiry(session, at, ttl))
    session.updated_at = at


def unstage(session, extension, document_key):
    """Forget a staged document (it is equal to the current one again)."""
    if session.state != "open":
        raise not_open(session)
    change = staged(session, extension, document_key)
    if change is not None:
        db.delete(change)
        _touch(session, now())
        db.flush()


def changes(session, extension=None):
    """The staged changes, oldest first, of one extension or all."""
    query = sa.select(ConfigSessionChange).where(ConfigSessionChange.session_id == session.id)
    if extension is not None:
        query = query.where(ConfigSessionChange.extension == extension)
    return list(db.execute(query.order_by(ConfigSessionChange.id)).scalars())


def conflict_message(session, conflicts):
    return "Session {0} cannot deploy: {1} document(s) changed since it was opened (revision {2})".format(
        session.id, len(conflicts), session.version)


def invalidate(session, conflicts):
    """Mark an open session invalid with the 409 entries that made it so, and return the 409 to raise.

    That write is committed on its own (``_end_alone``): whatever else the request wrote is
    rolled back, so a staging write or a deploy refused with 409 changes nothing but the session."""
    _end_alone(session, "invalid", list(conflicts))
    return errors.Conflict(conflict_message(session, conflicts), list(conflicts))


def _by_extension(staged_changes):
    loaded = {extension.name: extension for extension in extensions.get_all_extensions()}
    grouped = {}
    for change in staged_changes:
        if change.extension not in loaded:
            raise errors.InvalidData("Session {0} stages a document of the extension {1}, which is not loaded: "
                                     "abandon it".format(change.session_id, change.extension))
        grouped.setdefault(change.extension, []).append(change)
    return [(loaded[name], grouped[name]) for name in loaded if name in grouped]


def _claim(session):
    """open -> deploying, only if it still is open and in time: the one check that cannot race."""
    claimed = db.execute(
        sa.update(ConfigSession).where(ConfigSession.id == session.id, ConfigSession.state == "open",
                                       ConfigSession.expires_at > now())
        .values(state="deploying", updated_at=now()).execution_options(synchronize_session=False)).rowcount
    db.refresh(session)
    if not claimed:
        if _past_time(session):
            _end_alone(session, "expired")
        raise not_open(session)


def deploy(session):
    """Deploy ``session`` atomically (see the module); the answer's session is ``deployed``.

    403 unless open; 409 with the conflicting documents (the session becomes invalid, and that is all
    that is written); any NailgunError an extension raises rolls the whole request back.
    """
    scope = scope_of(session)
    cluster = None
    if scope.kind == "cluster":
        cluster = db.get(Cluster, scope.environment_id, with_for_update={"of": Cluster}, populate_existing=True)
        if cluster is None:
            raise errors.ObjectNotFound("Cluster {0} not found".format(scope.environment_id))
    extensions.fire("on_session_lock", session)
    _claim(session)
    if cluster is not None:
        check_not_deploying(cluster, errors.Conflict)
    grouped = _by_extension(changes(session))
    conflicts = []
    for extension, own in grouped:
        conflicts.extend(extension.session_conflicts(session, own) or [])
    current = revision(scope)
    if settings["SESSIONS"]["strict"] and session.version < current and not conflicts:
        conflicts.append({"document": {"type": "environment", "scope": scope.kind,
                                       "environment_id": scope.environment_id},
                          "revision": current, "author": None})
    if conflicts:
        raise invalidate(session, conflicts)
    if cluster is not None:
        bump_cluster_revision(cluster)
    deployed = []
    for extension, own in grouped:
        deployed.extend(extension.on_session_deploy(session, own) or [])
    at = now()
    session.state = "deployed"
    session.revision = revision(scope)
    session.revisions = _moved(session, cluster)
    session.deployed_at = session.updated_at = at
    session.deployed_changes = seal_history(deployed)
    db.execute(sa.delete(ConfigSessionChange).where(ConfigSessionChange.session_id == session.id))
    if settings["SESSIONS"]["strict"]:
        _invalidate_others(session)
    db.flush()
    db.expire(session, ["changes"])
    return session


def _moved(session, cluster):
    """``{counter: {"id", "revision"}}``: each revision counter the deploy moved and the revision it landed in,
    the cluster's (a cluster scope's deploy always moves it) and each extension's (``session_revisions``)."""
    moved = {} if cluster is None else {"cluster": {"id": cluster.id, "revision": int(cluster.revision)}}
    for answer in extensions.fire("session_revisions", session):
        for counter, landed in (answer or {}).items():
            assert counter not in moved, "two answers name the revision counter {0!r}".format(counter)
            moved[counter] = {"id": int(landed["id"]), "revision": int(landed["revision"])}
    return moved


def _invalidate_others(session):
    entry = {"document": {"type": "environment", "scope": session.scope, "environment_id": session.environment_id},
             "revision": session.revision, "author": session.owner, "session": session.id}
    db.execute(sa.update(ConfigSession).where(
        ConfigSession.scope == session.scope, ConfigSession.environment_id == session.environment_id,
        ConfigSession.state == "open", ConfigSession.id != session.id)
        .values(state="invalid", conflicts=[entry], updated_at=now()).execution_options(synchronize_session=False))


def abandon(session):
    """DELETE: an open or invalid session ends as abandoned; deploying or deployed ones 403.

    An abandoned one stays abandoned (DELETE again answers it); an expired one is 403."""
    if session.state == "abandoned":
        return session
    if session.state not in ("open", "invalid"):
        raise not_open(session)
    session.state = "abandoned"
    session.updated_at = now()
    db.flush()
    return session


def sessions(scope, owner=None):
    """The open sessions of ``scope`` still in time, oldest first (``owner``'s only, unless None)."""
    query = sa.select(ConfigSession).where(
        ConfigSession.scope == scope.kind, ConfigSession.environment_id == scope.environment_id,
        ConfigSession.state == "open", ConfigSession.expires_at > now())
    if owner is not None:
        query = query.where(ConfigSession.owner == owner)
    return list(db.execute(query.order_by(ConfigSession.created_at, ConfigSession.id)).scalars())


def deployments(scope, limit=50, before=None):
    """Deployed sessions of ``scope``, newest first (``before``: revisions below it), about ``limit`` of them.

    A page never ends inside a revision: it runs on to the end of its last one. A deploy that writes nothing to an
    unlinked environment leaves its revision where it was, so deployments can share one, and the next page
    (``before`` the last row's revision) would skip the rest of it."""
    query = sa.select(ConfigSession).where(
        ConfigSession.scope == scope.kind, ConfigSession.environment_id == scope.environment_id,
        ConfigSession.state == "deployed").order_by(
        ConfigSession.revision.desc(), ConfigSession.deployed_at.desc(), ConfigSession.id.desc())
    if before is not None:
        query = query.where(ConfigSession.revision < before)
    page = list(db.execute(query.limit(limit)).scalars())
    if len(page) < limit:
        return page
    last = page[-1].revision
    return [s for s in page if s.revision != last] + list(
        db.execute(query.where(ConfigSession.revision == last)).scalars())


def collect_garbage(scope=None):
    """Expire open sessions past their time; delete the staged rows of ended, undeployed sessions older
    than ``SESSIONS.keep_days``. Returns how many sessions it touched.

    Ended sessions that old go whole (their rows with them): nobody can act on them any more, and a
    session id that was never deployed has no history to keep. ``scope``: only that environment's."""
    at = now()
    where = [] if scope is None else [ConfigSession.scope == scope.kind,
                                      ConfigSession.environment_id == scope.environment_id]
    expired = db.execute(sa.update(ConfigSession).where(
        ConfigSession.state == "open", ConfigSession.expires_at <= at, *where)
        .values(state="expired", updated_at=at).execution_options(synchronize_session=False)).rowcount
    old = at - datetime.timedelta(days=int(settings["SESSIONS"]["keep_days"]))
    ended = sa.select(ConfigSession.id).where(
        ConfigSession.state.in_(("invalid", "abandoned", "expired")), ConfigSession.updated_at < old, *where)
    db.execute(sa.delete(ConfigSessionChange).where(ConfigSessionChange.session_id.in_(ended))
               .execution_options(synchronize_session=False))
    deleted = db.execute(sa.delete(ConfigSession).where(ConfigSession.id.in_(ended))
                         .execution_options(synchronize_session=False)).rowcount
    db.flush()
    return expired + deleted


def delete_scope(scope):
    """The environment of ``scope`` is deleted: its sessions go with it."""
    ids = sa.select(ConfigSession.id).where(ConfigSession.scope == scope.kind,
                                            ConfigSession.environment_id == scope.environment_id)
    db.execute(sa.delete(ConfigSessionChange).where(ConfigSessionChange.session_id.in_(ids))
               .execution_options(synchronize_session=False))
    db.execute(sa.delete(ConfigSession).where(ConfigSession.scope == scope.kind,
                                              ConfigSession.environment_id == scope.environment_id)
               .execution_options(synchronize_session=False))


def iso(value):
    """An ISO 8601 UTC datetime (``2026-11-23T19:32:00.123456Z``), None as None."""
    return None if value is None else value.isoformat() + "Z"


def documents(session):
    """``[{"document": descriptor, "changed_keys"}]``: what is staged, or, once deployed, what landed."""
    if session.state == "deployed":
        return [{"document": entry["document"], "changed_keys": entry["changed_keys"]}
                for entry in session.deployed_changes or []]
    return [{"document": change.descriptor, "changed_keys": change.changed_keys} for change in changes(session)]


def to_dict(session):
    """Seed 001's session JSON (ISO datetimes), with the documents staged and, when invalid, the conflicts.

    ``revision`` is the scope's counter (the cluster's for a cluster scope); ``revisions`` names every counter
    the deploy moved ({} before), so a deployment joins the ConfigDB change feed by the environment's."""
    answer = {
        "id": session.id, "environment_id": session.environment_id, "environment_type": session.scope,
        "user_id": session.owner, "created": iso(session.created_at), "updated": iso(session.updated_at),
        "version": session.version, "state": session.state, "expires": iso(session.expires_at),
        "deployed": iso(session.deployed_at), "revision": session.revision, "revisions": session.revisions or {},
        "documents": documents(session),
    }
    if session.state == "invalid":
        answer["conflicts"] = list(session.conflicts or [])
    return answer
