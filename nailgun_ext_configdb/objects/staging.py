"""ConfigDB documents staged in configuration sessions (seeds 000/001): staging, staged views, deploy.

A staged document is the whole new document as its client sent it, sealed with its resource's
schema: a secret sent back as the mask stays the mask, so a stored secret is never copied into
a session; it is put back from the stored document when the session's reads show it and when the
deploy writes it. Staging runs every check a direct write runs (the mask against the stored
value, the definition's schema, and the caller's If-Match), so a deploy only fails when the
world changed under the session.

A staged document remembers the revision of the stored one when it was first staged (``base``):
a document stored since with another revision (or deleted, or at a level that is gone) is a
conflict, answered 409 by a later staging write (the session becomes invalid) and by the deploy.
Every document of one deploy is written with one new revision of its environment.
"""
import collections

import sqlalchemy as sa

from nailgun_host.public import check_storable, config_session_obj as config_session, db, errors
from nailgun_platform.public import masking, type_strict_equal
from nailgun_ext_configdb.models import VALUES, DocumentVersion, Environment
from nailgun_ext_configdb.objects import changes as changes_obj
from nailgun_ext_configdb.objects import document as document_obj
from nailgun_ext_configdb.objects import environment as environment_obj
from nailgun_ext_configdb.objects import json_values, levels, resource_definition, secrets, write_policy

#: the name the host files ConfigDB's staged documents under (the extension's name)
EXTENSION = "configdb"
#: what a deployment's ``revisions`` calls the counter of a ConfigDB environment (``Environment.revision``)
COUNTER = "configdb_environment"

#: one stored or staged document of a merge: ``id`` is None for one staged and not stored yet
Layer = collections.namedtuple("Layer", "id level_path kind data")


def key(resource_id, level_path, kind):
    """The document's name in a session: ``"<resource id>:<level path>:<kind>"``."""
    return "{0}:{1}:{2}".format(resource_id, level_path, kind)


def _address(change):
    """(environment id, resource id, level path, kind) of a staged change."""
    descriptor = change.descriptor
    resource_id, rest = change.document_key.split(":", 1)
    level_path, kind = rest.rsplit(":", 1)
    return descriptor["environment"], int(resource_id), level_path, kind


def descriptor(environment, resource, level_path, kind):
    return {"type": "configdb", "environment": environment.id, "resource": resource.id,
            "resource_name": resource.name, "level": levels.display(level_path), "kind": kind}


def staged(session, resource_id, level_path, kind):
    """The change an open ``session`` stages for that document, or None (no session, or not open:
    a session that ended shows the current state)."""
    if session is None or session.state != "open":
        return None
    return config_session.staged(session, EXTENSION, key(resource_id, level_path, kind))


def clear(resource, data, stored):
    """Staged ``data`` with its masks replaced by the ``stored`` secrets (where nothing is stored any
    more, the mask stays: the session conflicts there, and a read must not fail)."""
    try:
        return secrets.unmask(resource, data, stored)
    except masking.MaskWithoutValue:
        return data


def view(session, resource, level_path, kind, document):
    """The document's data as a request of ``session`` sees it, clear: staged over stored."""
    stored = document.data if document is not None else {}
    change = staged(session, resource.id, level_path, kind)
    return stored if change is None else clear(resource, change.data, stored)


def as_sent(session, resource, level_path, kind, document):
    """What an edit (keys, patch) of a staged document starts from: the staged document with its masks
    (nothing stored copied in), or the stored one."""
    change = staged(session, resource.id, level_path, kind)
    if change is not None:
        return change.data
    return document.data if document is not None else {}


def session_changes(session):
    """What an open ``session`` stages of ConfigDB's ([] without one: a session that ended shows the current
    state): read once by a request's view, for its merge and for which levels hold documents."""
    if session is None or session.state != "open":
        return []
    return config_session.changes(session, EXTENSION)


def chain(staged, environment, resource, paths, documents):
    """The ``documents`` of a merge (stored at ``paths``) as ``Layer`` s, the ``staged`` ones (a session's
    ``session_changes``) in place of the stored ones or added where none is stored."""
    by_place = {(d.level_path, d.kind): Layer(d.id, d.level_path, d.kind, d.data) for d in documents}
    wanted = {key(resource.id, path, kind): (path, kind) for path in paths for kind in (VALUES, "overrides")}
    for change in staged:
        place = wanted.get(change.document_key)
        if place is None or change.descriptor.get("environment") != environment.id:
            continue
        stored = by_place.get(place)
        data = clear(resource, change.data, stored.data if stored is not None else {})
        by_place[place] = Layer(stored.id if stored is not None else None, place[0], place[1], data)
    return list(by_place.values())


def staged_paths(staged, environment):
    """The level paths at which the ``staged`` changes (``session_changes``) put documents of ``environment``."""
    return {_address(change)[2] for change in staged if change.descriptor.get("environment") == environment.id}


def _revision(document):
    return document.revision if document is not None else 0


def _author(document):
    if document is None:
        return None
    return db.scalar(sa.select(DocumentVersion.author).where(DocumentVersion.document_id == document.id)
                     .order_by(DocumentVersion.version.desc()).limit(1))


def _conflict(change, document):
    return {"document": change.descriptor, "revision": document.revision if document is not None else None,
            "author": _author(document)}


def _changed(change, document):
    return _revision(document) != (change.base or {}).get("revision", 0)


class StagedDocumentChanged(errors.Conflict):
    """409: the document a session stages changed since it was first staged."""


def stage(session, environment, resource, level_path, kind, data, document, bound=True):
    """Stage ``data`` (as sent: masks kept) as the new document; None when equal to the stored one (any
    earlier staging of it is dropped). The caller holds the environment's row lock and has checked
    If-Match against the staged view; 409 (the session turns invalid, committed alone) when the
    stored document changed since this session first staged it; 403 when what the session would then
    change in the stored document, or in the effective values at its level, is not what the definition's
    patch policy allows (``write_policy``; ``bound``: the writer is held to it).
    """
    name = key(resource.id, level_path, kind)
    change = config_session.staged(session, EXTENSION, name)
    if change is not None and _changed(change, document):
        conflicts = [_conflict(change, document)]
        refusal = StagedDocumentChanged(
            "Session {0} cannot stage: the document changed since the session staged it (revision {1}); "
            "the session is invalid".format(session.id, (change.base or {}).get("revision", 0)), conflicts)
        config_session.invalidate(session, conflicts)
        db.commit()  # the session's own row is all this failed request writes
        raise refusal
    stored = document.data if document is not None else {}
    data = json_values.stored_form(check_storable(data))
    result = secrets.unmask(resource, data, stored)  # a mask with nothing stored to keep: 400 now
    if bound:
        write_policy.check(environment, resource, level_path, kind, stored, result)
    if kind == VALUES:
        resource_definition.validate_values(resource, result)
    if type_strict_equal(result, stored):
        if change is not None:
            config_session.unstage(session, EXTENSION, name)
        return None
    base = change.base if change is not None else {"revision": _revision(document)}
    config_session.stage(session, EXTENSION, name, descriptor(environment, resource, level_path, kind),
                         secrets.seal(resource, data), document_obj.changed_keys(stored, result), base=base)
    return config_session.staged(session, EXTENSION, name)


def keep_staged(session, resource, level_path, kind, patched):
    """A patch's result (made on the masked view of a staged document) with each mask put back to what
    the session stages there: the mask as sent, or a new secret staged in clear. Masks over what is
    not staged are left to ``stage``'s check against the stored document."""
    change = staged(session, resource.id, level_path, kind)
    if change is None:
        return patched
    try:
        return masking.unmask(patched, change.data, secrets.of(resource, patched))
    except masking.MaskWithoutValue:
        return patched


def _target(change):
    """(environment, resource, level path, kind, stored document) a staged change is for; the
    environment and resource None when gone or no longer addressable there (level or component gone)."""
    environment_id, resource_id, level_path, kind = _address(change)
    environment = db.get(Environment, environment_id)
    if environment is None:
        return None, None, level_path, kind, None
    try:
        resource = environment_obj.resource(environment, str(resource_id))
        levels.resolve(environment, level_path + "/" if level_path else "")
    except errors.NailgunError:
        return None, None, level_path, kind, None
    return environment, resource, level_path, kind, document_obj.find(environment.id, resource_id, level_path, kind)


def conflicts(session, changes):
    """The 409 entries of the staged documents changed (or deleted, or no longer addressable) since
    they were first staged."""
    found = []
    for change in changes:
        environment, resource, _, _, document = _target(change)
        if environment is None or _changed(change, document):
            found.append(_conflict(change, document))
    return found


def lock(session):
    """The ConfigDB environment row of the session's scope, FOR UPDATE (a cluster's linked one)."""
    statement = sa.select(Environment).where(Environment.id == session.environment_id).with_for_update()
    if session.scope == "cluster":
        statement = statement.where(Environment.linked)
    return db.scalars(statement).first()


def deploy(session, changes, author, bound=True):
    """Write every staged document of ``changes`` (checked by ``conflicts`` first) as a new version;
    all of them share one new revision of their environment. The history entries, one per document
    that changed. A document that no longer validates, or whose change the definition's patch policy
    (as it is now, for a deployer it ``bound`` s) refuses, raises (the request rolls back whole)."""
    entries, revisions = [], {}
    for change in changes:
        environment, resource, level_path, kind, document = _target(change)
        if environment is None:
            raise errors.Conflict("Session {0} cannot deploy: {1} is gone".format(session.id, change.descriptor),
                                  [_conflict(change, document)])
        stored = document.data if document is not None else {}
        try:
            data = secrets.unmask(resource, change.data, stored)
            if bound:
                write_policy.check(environment, resource, level_path, kind, stored, data)
            if kind == VALUES:
                resource_definition.validate_values(resource, data)
        except errors.NailgunError as exc:
            raise type(exc)("Session {0} cannot deploy the {1} of {2} at {3}: {4}".format(
                session.id, kind, resource.name, levels.display(level_path), exc.message),
                [{"document": change.descriptor}] + exc.errors)
        revision = revisions.setdefault(environment.id, environment.revision + 1)
        written = document_obj.write(environment, resource, level_path, kind, data, author,
                                     document=document, revision=revision, session_id=session.id)
        if written is not None:
            entries.append({"document": change.descriptor, "changed_keys": written.changed_keys,
                            "patch": json_values.diff(stored, data),
                            "secrets": sorted(secrets.of(resource, stored) | secrets.of(resource, data))})
    db.flush()
    return entries


def revisions(session):
    """``{"configdb_environment": {"id", "revision"}}`` when the deploy of ``session`` wrote documents: the
    environment revision they share, the one their change-feed entries carry; {} when it wrote none."""
    environment = db.get(Environment, session.environment_id)  # locked by ``lock`` at the deploy's start
    if environment is None or not changes_obj.session_landed(environment, session.id):
        return {}
    return {COUNTER: {"id": environment.id, "revision": environment.revision}}


def diff(change, masked):
    """``(patch, hidden)``: RFC 6902 from the stored document to the staged one (secrets masked when
    ``masked``: the mask of the reader's view, ``hidden`` whether one was)."""
    environment, resource, level_path, kind, document = _target(change)
    stored = document.data if document is not None else {}
    if resource is None:
        resource = resource_definition.lineage_resource(_address(change)[1])
    if resource is None:
        return [], False
    new = clear(resource, change.data, stored)
    patch = json_values.diff(stored, new)
    if not masked:
        return patch, False
    return secrets.masked_patch(patch, stored, secrets.of(resource, stored) | secrets.of(resource, new))
