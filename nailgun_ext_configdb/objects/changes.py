"""The change feed: which documents of an environment were written or deleted, by revision.

``written`` and ``deleted`` are called by ``objects.document`` inside the writing transaction,
so every path that changes a document (PUT, keys, revert, deploy, level removal) is recorded,
and ``notify`` wakes the feed's waiters only when that transaction commits. Entries carry no
values. Each environment keeps its newest ``CONFIGDB.max_changes`` entries, whole revisions, pruned at one
revision in ``max_changes // PRUNE_SHARE`` (finding the boundary reads ``max_changes`` index entries, which
every write did): in between it holds up to that many revisions more, which answers with them, as the feed
answers whatever it still has.
"""
import sqlalchemy as sa

from nailgun_host.public import db
from nailgun_platform.public import notify
from nailgun_ext_configdb import settings_section
from nailgun_ext_configdb.models import Change, Document, Environment, ResourceDefinition
from nailgun_ext_configdb.objects import levels

WRITE, DELETE, PIN = "write", "delete", "pin"
#: most entries one answer holds (``?limit=``), and how many it holds when not told
MAX_LIMIT, DEFAULT_LIMIT = 5000, 500
#: the feed keeps up to one ``max_changes``'s hundredth of revisions more than ``max_changes`` entries between prunes
PRUNE_SHARE = 100


def topic(environment_id):
    """What ``notify`` calls an environment's feed."""
    return "configdb:{0}".format(environment_id)


def _max_changes():
    limit = settings_section.value("max_changes")
    return int(limit) if limit else None


def _prune(environment_id, revision):
    """Drop the oldest entries beyond the limit, whole revisions only (a revision is never half kept), when
    ``revision`` (the one just recorded) is a multiple of ``limit // PRUNE_SHARE``."""
    limit = _max_changes()
    if not limit or revision % max(1, limit // PRUNE_SHARE):
        return
    boundary = (sa.select(Change.revision).where(Change.environment_id == environment_id)
                .order_by(Change.revision.desc()).limit(1).offset(limit - 1).scalar_subquery())
    db.execute(sa.delete(Change).where(Change.environment_id == environment_id, Change.revision < boundary))


def _record(environment_id, entries):
    """Insert the entries (dicts of ``Change`` columns, all of one revision) in one statement, however many
    documents changed."""
    db.execute(sa.insert(Change), entries)
    _prune(environment_id, entries[0]["revision"])
    notify.publish(topic(environment_id))


def written(environment, document, author, session_id=None):
    """Record that ``document`` got its current version, at its revision."""
    _record(environment.id, [dict(
        environment_id=environment.id, revision=document.revision, document_id=document.id,
        resource_definition_id=document.resource_definition_id, level_path=document.level_path,
        kind=document.kind, change=WRITE, version=document.version, author=author, session_id=session_id)])


def pinned(environment, lineage_id, version, author):
    """Record that the environment now validates the values of a data source against its ``version``
    (at the environment's current revision, which the move bumped)."""
    _record(environment.id, [dict(
        environment_id=environment.id, revision=environment.revision, document_id=None,
        resource_definition_id=lineage_id, level_path="", kind="values", change=PIN, version=version,
        author=author)])


def deleted(environment_id, level_paths, author=None, session_id=None):
    """Record the deletion of every document at ``level_paths``, all in one new revision.

    Called before they are deleted; bumps the environment's revision when there is any.
    """
    documents = db.execute(sa.select(Document.id, Document.resource_definition_id, Document.level_path,
                                     Document.kind).where(Document.environment_id == environment_id,
                                                          Document.level_path.in_(level_paths))
                           .order_by(Document.id)).all()
    if not documents:
        return
    db.flush()  # the row is read again, locked: what the caller changed in it must be written first
    environment = db.get(Environment, environment_id, with_for_update=True, populate_existing=True)
    environment.revision += 1
    _record(environment_id, [dict(
        environment_id=environment_id, revision=environment.revision, document_id=d.id,
        resource_definition_id=d.resource_definition_id, level_path=d.level_path, kind=d.kind, change=DELETE,
        version=None, author=author, session_id=session_id) for d in documents])


def session_landed(environment, session_id):
    """Whether the deploy of ``session_id`` (just run, in this transaction) wrote in ``environment``: its feed
    entries are at the environment's current revision, which is then the revision the deploy landed in."""
    return db.scalar(sa.select(sa.exists().where(
        Change.environment_id == environment.id, Change.revision == environment.revision,
        Change.session_id == session_id)))


def _to_dict(change, resource_name):
    return {"revision": change.revision, "resource": change.resource_definition_id, "resource_name": resource_name,
            "level": levels.display(change.level_path), "kind": change.kind, "change": change.change,
            "version": change.version, "author": change.author, "session": change.session_id,
            "created": change.created_at.isoformat()}


def feed(environment_id, since, limit=DEFAULT_LIMIT):
    """The feed's answer after revision ``since``: at most ``limit`` entries, whole revisions.

    A revision is never cut: when the limit falls inside one, the answer stops before it (or,
    when that one revision alone is larger than the limit, holds it whole). ``revision`` is then
    the last one returned, for the client's next ``since``; otherwise the environment's.
    ``truncated``: revisions after ``since`` have no entries any more (pruned, or written before the
    feed existed), so the client must read everything again.
    None when the environment does not exist.
    """
    current = db.scalar(sa.select(Environment.revision).where(Environment.id == environment_id))
    if current is None:
        return None
    rows = db.execute(sa.select(Change, ResourceDefinition.name)
                      .outerjoin(ResourceDefinition, ResourceDefinition.id == Change.resource_definition_id)
                      .where(Change.environment_id == environment_id, Change.revision > since,
                             Change.revision <= current)
                      .order_by(Change.revision, Change.id).limit(limit + 1)).all()
    revision = current
    if len(rows) > limit:
        cut = rows[limit][0].revision
        whole = [row for row in rows if row[0].revision < cut]
        if not whole:
            whole = db.execute(sa.select(Change, ResourceDefinition.name)
                               .outerjoin(ResourceDefinition, ResourceDefinition.id == Change.resource_definition_id)
                               .where(Change.environment_id == environment_id, Change.revision == cut)
                               .order_by(Change.id)).all()
        rows = whole
        revision = rows[-1][0].revision
    oldest = db.scalar(sa.select(sa.func.min(Change.revision)).where(Change.environment_id == environment_id))
    first = current + 1 if oldest is None else oldest  # revisions before it have no entries (any more)
    return {"environment_id": environment_id, "revision": revision, "since": since,
            "truncated": since < first - 1,
            "changes": [_to_dict(change, name) for change, name in rows]}
