"""The document store: current documents, their versions, history and retention.

Handlers reach stored values only through these functions, so another storage
driver, staged sessions or JSON-patch writers can be added behind them. Every
write is one new version; the caller holds the environment's row lock
(``environment.get(..., lock=True)``), which orders writes and makes
If-Match checks safe across workers.
"""
import functools
import json
import weakref

import jsonpointer
import sqlalchemy as sa
from sqlalchemy import orm

from nailgun_host.public import check_storable, db, errors, read_rows
from nailgun_platform.public import now, sealing, type_strict_equal
from nailgun_platform.public import secrets as platform_secrets
from nailgun_ext_configdb import settings_section
from nailgun_ext_configdb import storage
from nailgun_ext_configdb.models import Document, DocumentVersion, ResourceDefinition
from nailgun_ext_configdb.objects import changes, merge, opened, secrets
from nailgun_ext_configdb.objects.json_values import stored_form

MAX_CHANGED_KEYS = 100


def _filled(environment_id, rows):
    """``rows`` (documents or versions) with their clear content, from wherever the storage driver keeps it."""
    storage.driver().fill(environment_id, [row for row in rows if row is not None])
    return rows


def _one_document(*columns):
    """The statement of ``columns`` of the document at its key's bound parameters (``_key``), built once."""
    return sa.select(*columns).where(
        Document.environment_id == sa.bindparam("environment_id"),
        Document.resource_definition_id == sa.bindparam("resource_id"),
        Document.level_path == sa.bindparam("level_path"),
        Document.kind == sa.bindparam("kind"))


def _key(environment_id, resource_id, level_path, kind):
    return {"environment_id": environment_id, "resource_id": resource_id, "level_path": level_path, "kind": kind}


#: every read and write of a document runs one of these (a PUT two): built once, not per request
_DOCUMENT = _one_document(Document)
_DOCUMENT_WITHOUT_DATA = _DOCUMENT.options(orm.defer(Document.data, raiseload=True))
_DOCUMENT_SEALED = _one_document(Document, sa.type_coerce(sa.cast(Document.data, sa.Text), sa.Text)).options(
    orm.defer(Document.data))
_HEAD = _one_document(Document.id, Document.version)
#: ``{document: sealing.loads' tokens}`` of the documents read for a write (``find(..., for_write=True)``)
_TOKENS = weakref.WeakKeyDictionary()


def find(environment_id, resource_id, level_path, kind, with_data=True, for_write=False):
    """The stored document, or None; ``with_data=False`` leaves its content unloaded (history, diff).
    ``for_write``: its content opened here, the tokens of its secrets remembered for the write's ``Draft``
    (which keeps those of the secrets it does not change)."""
    key = _key(environment_id, resource_id, level_path, kind)
    if not with_data:
        return db.scalars(_DOCUMENT_WITHOUT_DATA, key).first()
    if not for_write:
        return _filled(environment_id, [db.scalars(_DOCUMENT, key).first()])[0]
    row = db.execute(_DOCUMENT_SEALED, key).first()
    if row is None:
        return None
    document, text = row
    tokens = {}
    orm.attributes.set_committed_value(document, "data", sealing.loads(text, platform_secrets.keyset(), tokens))
    _TOKENS[document] = tokens
    return _filled(environment_id, [document])[0]


def chain(environment_id, resource_id, level_paths):
    """The stored documents of a resource at any of ``level_paths``, in one query."""
    return _filled(environment_id, db.scalars(sa.select(Document).where(
        Document.environment_id == environment_id,
        Document.resource_definition_id == resource_id,
        Document.level_path.in_(level_paths))).all())


def of_kind(environment_id, resource_id, kind):
    """Every stored document of ``kind`` of a resource in the environment, by level path."""
    return _filled(environment_id, db.scalars(sa.select(Document).filter_by(
        environment_id=environment_id, resource_definition_id=resource_id, kind=kind)
        .order_by(Document.level_path)).all())


def heads(environment_id, resource_id, level_paths):
    """What identifies the current content of those documents, without loading it: ``(id, version,
    revision, level_path, kind)`` each, by id."""
    return read_rows(_heads(len(level_paths)), environment_id=environment_id, resource_id=resource_id,
                     **_paths(level_paths))


_DOCUMENTS = Document.__table__.c
_HEAD_COLUMNS = (_DOCUMENTS.id, _DOCUMENTS.version, _DOCUMENTS.revision, _DOCUMENTS.level_path, _DOCUMENTS.kind)


def _merged(paths):
    """Which documents ``heads`` reads: the data source's at any of ``paths`` level paths (bound one by one, so that
    the statement is compiled once per count: ``read_rows``)."""
    return sa.and_(_DOCUMENTS.environment_id == sa.bindparam("environment_id"),
                   _DOCUMENTS.resource_definition_id == sa.bindparam("resource_id"),
                   _DOCUMENTS.level_path.in_([sa.bindparam("prefix_{0}".format(n)) for n in range(paths)]))


def _paths(level_paths):
    """``_merged``'s parameters."""
    return {"prefix_{0}".format(n): path for n, path in enumerate(level_paths)}


@functools.lru_cache(maxsize=None)
def _heads(paths):
    """``heads``' statement, built once per count of level paths (every computed read runs one)."""
    return sa.select(*_HEAD_COLUMNS).where(_merged(paths)).order_by(_DOCUMENTS.id)


def holding_and_heads(environment_id, resource_id, level_paths, path, parent, deepest):
    """``((mine, level), heads(environment_id, resource_id, level_paths))`` in one statement (an effective read of
    a level asks both before anything else): whether the environment stores a document at the level path ``path``
    (or below it, unless it is at the hierarchy's ``deepest`` level), and whether it stores any below ``parent``,
    the path above it (so at ``path``'s level: the hierarchy names each depth). Both read the unique index that
    leads with (environment, data source, level path): ``path`` is looked up once per data source instead of
    scanning the environment's documents, which at 10,000 nodes took 30 ms for a node stored nothing for."""
    rows = read_rows(_holding_and_heads(deepest, not parent, len(level_paths)), environment_id=environment_id,
                     resource_id=resource_id, path=path, under_path=_like_prefix(path + "/"),
                     under_parent=_like_prefix(parent + "/"), **_paths(level_paths))
    return (rows[0].mine, rows[0].level), [row[2:] for row in rows if row.id is not None]


@functools.lru_cache(maxsize=None)
def _holding_and_heads(deepest, top, paths):
    """``holding_and_heads``' statement, built once per shape: ``holding``'s one row, joined to the heads."""
    held = _holding(deepest, top).subquery("held")
    return (sa.select(held.c.mine, held.c.level, *_HEAD_COLUMNS)
            .select_from(held.outerjoin(Document.__table__, _merged(paths))).order_by(_DOCUMENTS.id))


def current(environment, heads_read):
    """``{document id: its clear content}`` of the documents ``heads_read`` (``heads``) names, from memory
    where it was read before (``opened``: shared, never to be changed), the others in one query; and the ids
    of those whose content holds no ``$unset`` marker (``merge.values`` shares them as they are)."""
    driver = storage.chosen()
    keyed = {head[0]: (driver, environment.id, environment.created_at, head[0], head[1], head[2])
             for head in heads_read}
    contents, marker_free = {}, set()
    for document_id, key in keyed.items():
        found = opened.get(key)
        if found is not None:
            contents[document_id] = found[0]
            if found[1]:
                marker_free.add(document_id)
    missing = [document_id for document_id in keyed if document_id not in contents]
    if missing:
        opened_by = opened.keyset()
        rows = db.execute(sa.select(Document, sa.func.length(sa.cast(Document.data, sa.Text)))
                          .where(Document.id.in_(missing))).all()
        _filled(environment.id, [document for document, _ in rows])
        for document, size in rows:
            text = json.dumps(document.data) if document.storage_ref is not None else None
            free = not merge.has_marker(document.data)
            contents[document.id] = document.data
            if free:
                marker_free.add(document.id)
            if document.version == keyed[document.id][4]:  # not written since the heads were read
                opened.put(keyed[document.id], document.data, free, len(text) if text is not None else size or 0,
                           opened_by)
    return contents, marker_free


def data_as_of(documents, revision):
    """``{document id: data}`` for each document's latest version at or before ``revision``.

    A document with no version that old (never written then, or pruned) is absent.
    """
    if not documents:
        return {}
    ids = [d.id for d in documents]
    latest = (sa.select(DocumentVersion.document_id, sa.func.max(DocumentVersion.version).label("version"))
              .where(DocumentVersion.document_id.in_(ids), DocumentVersion.revision <= revision)
              .group_by(DocumentVersion.document_id).subquery())
    rows = db.scalars(sa.select(DocumentVersion).join(
        latest, sa.and_(DocumentVersion.document_id == latest.c.document_id,
                        DocumentVersion.version == latest.c.version))).all()
    return {row.document_id: row.data for row in _filled(documents[0].environment_id, rows)}


def version(document, number):
    found = None
    if document is not None:
        found = db.scalars(sa.select(DocumentVersion).filter_by(
            document_id=document.id, version=number)).first()
    if found is None:
        raise errors.ObjectNotFound(
            "Cannot find a given version {0} of data for the given environment, level and data source".format(
                number))
    return _filled(document.environment_id, [found])[0]


#: what a history entry shows: every column but ``data``, which history never loads
HISTORY_COLUMNS = (DocumentVersion.version, DocumentVersion.revision, DocumentVersion.created_at,
                   DocumentVersion.author, DocumentVersion.changed_keys)


def history(document):
    """The versions' metadata, oldest first, as rows of HISTORY_COLUMNS: no content is read."""
    if document is None:
        return []
    return db.execute(sa.select(*HISTORY_COLUMNS).where(DocumentVersion.document_id == document.id)
                      .order_by(DocumentVersion.version)).all()


def _changes(old, new, path, found):
    if len(found) > MAX_CHANGED_KEYS:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        differing = _differing_keys(old, new)
        for key in list(old) + [k for k in new if k not in old]:
            if key not in differing:
                continue
            if key not in old or key not in new:
                found.append(path + "/" + jsonpointer.escape(key))
            else:
                _changes(old[key], new[key], path + "/" + jsonpointer.escape(key), found)
    elif not type_strict_equal(old, new):
        found.append(path)


def _differing_keys(old, new):
    """The keys of two objects whose values differ as JSON, or that only one has.

    Python's ``!=`` finds the values that differ but for types in C; the others are compared as JSON
    in one walk, key by key only if that finds a difference: a large document has thousands of keys.
    """
    differing = old.keys() ^ new.keys()
    same = []
    for key in old:
        if key in new:
            if old[key] != new[key]:
                differing.add(key)
            else:
                same.append(key)
    if not type_strict_equal([old[key] for key in same], [new[key] for key in same]):
        differing.update(key for key in same if not type_strict_equal(old[key], new[key]))
    return differing


def changed_keys(old, new):
    """JSON pointers of the keys whose values differ as JSON (types included), objects compared key by key;
    none when ``old`` and ``new`` are the same JSON.

    Cut at MAX_CHANGED_KEYS, with "..." last, so rewriting a large document stays cheap.
    """
    found = []
    _changes(old, new, "", found)
    return found[:MAX_CHANGED_KEYS] + ["..."] if len(found) > MAX_CHANGED_KEYS else found


def _max_versions():
    limit = settings_section.value("max_versions")
    return int(limit) if limit else None


class Draft:
    """A new version of ``document`` (None: there is none yet) worked out from ``data`` (clear), before it is
    stored: in its stored form, with its changed keys and its secret leaves sealed. This is nearly all a
    write's work, so every write drafts before it locks the environment (``store``; ``current`` says whether the
    document is still the one drafted over). ``changed`` is empty, and nothing is sealed, when ``data`` is
    the same JSON as the document's.

    ``data`` must be storable as it is on every database (``validation.check_storable``): a keys operation
    can make a document deeper than any body it came in. It is stored in ``json_values.stored_form``, what
    every database gives back; comparisons (no-op, ``changed_keys``) are made on the clear values, so a new
    token is never a change. ``storable``: ``data`` was checked already (a request body, ``decode_json``, with
    at most its masks put back to stored values), so it is not walked again.
    """

    def __init__(self, resource, document, data, storable=False):
        if not isinstance(data, dict):  # every reader merges objects; a PUT's body is one, a patch keeps it one
            raise errors.InvalidData("A document must be a JSON object")
        self.document = document
        self.head = (document.id, document.version) if document is not None else None
        self.data = stored_form(data if storable else check_storable(data))
        self.changed = changed_keys(document.data if document is not None else {}, self.data)
        self.sealed = None
        if self.changed or document is None:
            self.sealed = secrets.seal(resource, self.data, document.data if document is not None else None,
                                       _TOKENS.get(document) if document is not None else None)

    def current(self, environment_id, resource_id, level_path, kind):
        """Whether the stored document is still the one drafted over (same row, same version): one statement
        that bypasses the session's objects."""
        found = db.execute(_HEAD, _key(environment_id, resource_id, level_path, kind)).first()
        return (tuple(found) if found is not None else None) == self.head


def write(environment, resource, level_path, kind, data, author, document=None, revision=None, session_id=None):
    """Store ``data`` (clear) as a new version; None (and nothing written) when it is the same JSON as the
    current one (``Draft``, then ``store``)."""
    document = document or find(environment.id, resource.id, level_path, kind)
    return store(environment, resource, level_path, kind, Draft(resource, document, data), author, revision,
                 session_id)


def store(environment, resource, level_path, kind, draft, author, revision=None, session_id=None):
    """Store ``draft`` as a new version; None (and nothing written) when it changes nothing.

    Each write bumps the environment's revision, unless ``revision`` is given: a session's deploy
    bumps it once and every document it writes shares that revision (and names itself,
    ``session_id``, in the change feed). The caller holds the environment's row lock, and the draft
    is of the current document. The objects keep the clear values for the rest of the request.

    The version's row is copied from the document's by the database (``_COPY_VERSION``): the sealed
    content is serialized, sent and parsed (jsonb) once, not once per row.
    """
    document, data = draft.document, draft.data
    if document is not None and not draft.changed:
        return None
    if document is None:
        document = Document(environment_id=environment.id, resource_definition_id=resource.id,
                            level_path=level_path, kind=kind, version=0, revision=0, data={})
        db.add(document)
    environment.revision = revision = environment.revision + 1 if revision is None else revision
    document.revision = revision
    document.version += 1
    stored = DocumentVersion(version=document.version, revision=revision, author=author,
                             changed_keys=draft.changed, created_at=now())
    storage.driver().write(environment, resource, document, stored, draft.sealed, author)
    # SQLAlchemy compares JSON with ==, which would skip the UPDATE when only a type changed
    orm.attributes.flag_modified(document, "data")
    db.flush()  # one flush for the environment's row and the document's
    stored.document_id = document.id
    db.execute(_COPY_VERSION, {"document_id": document.id, "version": stored.version, "revision": revision,
                               "author": author, "changed_keys": stored.changed_keys,
                               "created_at": stored.created_at})
    orm.attributes.set_committed_value(document, "data", data)  # stored sealed, seen clear by the request
    stored.data = data  # not in the session: what the caller answers with (``version_to_dict``)
    changes.written(environment, document, author, session_id)
    limit = _max_versions()
    if limit and document.version > limit:
        db.execute(sa.delete(DocumentVersion).where(
            DocumentVersion.document_id == document.id,
            DocumentVersion.version <= document.version - limit))
    return stored


#: the new version's row, its content (sealed, or the storage driver's reference) the document's as just written
_COPY_VERSION = sa.insert(DocumentVersion.__table__).from_select(
    ["document_id", "version", "revision", "data", "storage_ref", "author", "changed_keys", "created_at"],
    sa.select(Document.id, sa.bindparam("version", type_=sa.Integer), sa.bindparam("revision", type_=sa.Integer),
              Document.__table__.c.data, Document.storage_ref, sa.bindparam("author", type_=sa.String),
              sa.bindparam("changed_keys", type_=DocumentVersion.__table__.c.changed_keys.type),
              sa.bindparam("created_at", type_=DocumentVersion.__table__.c.created_at.type))
    .where(Document.id == sa.bindparam("document_id")))


def delete_at(environment_id, level_paths, author=None):
    """Remove every document stored at one of ``level_paths`` (their versions go with them)."""
    if level_paths:
        changes.deleted(environment_id, level_paths)
        _delete(environment_id, Document.level_path.in_(level_paths), author)


def delete_resource(lineage_id):
    """Remove every document of a data source, in every environment (it has no live definition left)."""
    for environment_id in db.scalars(sa.select(Document.environment_id).distinct()
                                     .where(Document.resource_definition_id == lineage_id)).all():
        _delete(environment_id, Document.resource_definition_id == lineage_id, None)


def _delete(environment_id, where, author):
    where = sa.and_(Document.environment_id == environment_id, where)
    storage.driver().forget(environment_id, where, author)
    db.execute(sa.delete(Document).where(where))


@functools.lru_cache(maxsize=None)
def _holding(deepest, top):
    """``(mine, level)``'s statement (``holding_and_heads``), built once per shape."""
    def stored(*where):
        return sa.exists().where(Document.environment_id == sa.bindparam("environment_id"), *where)
    at = Document.level_path == sa.bindparam("path")
    mine = stored(at, Document.resource_definition_id == ResourceDefinition.id) if deepest else stored(
        sa.or_(at, Document.level_path.like(sa.bindparam("under_path"), escape="/")))
    below = Document.level_path != "" if top else Document.level_path.like(sa.bindparam("under_parent"), escape="/")
    return sa.select(mine.label("mine"), stored(below).label("level"))


def _like_prefix(text):
    """The LIKE pattern (escape character ``/``) of the strings that start with ``text``."""
    return text.replace("/", "//").replace("%", "/%").replace("_", "/_") + "%"


def level_paths(environment_id, like=None):
    """The distinct level paths holding documents in an environment (optionally ``LIKE`` a pattern)."""
    query = sa.select(Document.level_path).where(Document.environment_id == environment_id).distinct()
    if like is not None:
        query = query.where(Document.level_path.like(like))
    return db.scalars(query).all()
