"""The git driver: each environment's documents in a bare git repository, one commit per stored version.

``<CONFIGDB.git_root>/<environment id>.git`` holds the documents as YAML files laid out like
/etc/hiera: ``<level path>/<data source>.yaml`` for values (``astute.yaml``, ``nodes/5/astute.yaml``)
and ``override/<level path>/<data source>.yaml`` for overrides; each commit is authored by the
identity that wrote the version, so ``git log``, ``git diff`` and ``git clone`` work as operators
expect. Each part of a path is percent-encoded where it could mean something else (``/`` in a data
source's name, a leading ``.``, a level named ``override``), so two documents never share a file.
Secret leaves are stored sealed, as in the database; a secret that did not change keeps its token,
so ``git diff`` shows only what changed.

The guarantees of the SQL driver hold because the host database stays the index: each version's
row names its blob (``storage_ref``) and the environment's row its last commit (``storage_head``),
both written in the request's transaction under the environment's row lock. Commits are built on
``storage_head`` while the lock is held, so writers of one environment never fork; the branch moves
(forward only) once the transaction has committed, and a rollback leaves unreferenced objects only.
Definitions are the SQL driver's: they belong to no environment.
"""
import logging
import os
import urllib.parse

import sqlalchemy as sa
import yaml
from sqlalchemy import event, orm

from nailgun_host.public import db, errors
from nailgun_platform.public import sealing, secrets as host_secrets
from nailgun_ext_configdb import settings_section
from nailgun_ext_configdb.models import OVERRIDES, Document, DocumentVersion, Environment, ResourceDefinition
from nailgun_ext_configdb.storage import gitrepo
from nailgun_ext_configdb.storage.drivers import base
from nailgun_ext_configdb.storage.drivers.sql import SqlDefinitions, SqlDocuments

LOG = logging.getLogger(__name__)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: ``session.info`` keys: repositories to advance to a commit, and to set aside, once the transaction commits
_HEADS, _DROPPED = "configdb_git_heads", "configdb_git_dropped"


def root():
    return settings_section.value("git_root")


def repository(environment_id):
    return gitrepo.Repository(os.path.join(root(), "{0}.git".format(environment_id)))


def _part(text):
    """One part of a path, which git and a shell take as it is: no ``/``, no leading ``.``."""
    encoded = urllib.parse.quote(text, safe=" !$&'()+,;=@[]^`{}~")
    return "%2E" + encoded[1:] if encoded.startswith(".") else encoded


def file_path(name, level_path, kind):
    """Where a document lives in its environment's repository, as /etc/hiera lays it out; one file a document."""
    parts = [_part(part) for part in level_path.split("/")] if level_path else []
    if parts and parts[0] == "override":  # a level named so: not the overrides' directory
        parts[0] = "%6Fverride"
    return "/".join((["override"] if kind == OVERRIDES else []) + parts + [_part(name) + ".yaml"])


def dump(sealed):
    return yaml.dump(sealed, Dumper=_DUMPER, sort_keys=False, allow_unicode=True,
                     default_flow_style=False).encode("utf-8")


def load(text):
    return yaml.load(text, Loader=_LOADER)


#: times 10 ms a branch move waits for a lock file held by another process (a crashed one's stays)
ADVANCE_WAITS = 50


def _after_commit(session):
    """Move each written repository's branch, and set deleted ones aside. The request has succeeded:
    what fails here is logged, never raised; the next write of the environment moves the branch again."""
    for path, commit in session.info.pop(_HEADS, {}).items():
        try:
            gitrepo.Repository(path).advance(commit, waits=ADVANCE_WAITS)
        except Exception:  # noqa: BLE001 (a lock file left by a crash, a full disk: the data is committed)
            LOG.exception("Could not move the branch of %s to %s", path, commit)
    for path in session.info.pop(_DROPPED, ()):
        try:
            gitrepo.set_aside(root(), path)
        except OSError:
            LOG.exception("Could not set %s aside", path)


def _after_rollback(session):
    session.info.pop(_HEADS, None)
    session.info.pop(_DROPPED, None)


event.listen(orm.Session, "after_commit", _after_commit)
event.listen(orm.Session, "after_rollback", _after_rollback)


class GitDocuments(base.Documents):
    """Rows written before the driver was chosen keep their content in the database and are read there."""

    _sql = SqlDocuments()

    def _commit(self, environment, files, author, message):
        """A commit of ``files`` on the environment's head, which it becomes; the blobs written."""
        repo = repository(environment.id)
        if environment.storage_head is None:
            if repo.head() is not None:  # a repository the database knows nothing of: an earlier environment's
                gitrepo.set_aside(root(), repo.path)
        elif not repo.exists():
            raise errors.ServiceUnavailable(
                "The git repository of environment {0} is missing: restore {1}".format(environment.id, repo.path))
        message = " ".join(message.split())  # a name may hold a newline; a subject is one line
        try:
            commit, blobs = repo.commit(environment.storage_head, files, author or "nailgun", message)
        except LookupError:
            LOG.exception("Commit %s of %s", environment.storage_head, repo.path)
            raise errors.ServiceUnavailable("The git repository of environment {0} lacks its last commit: restore "
                                            "{1}".format(environment.id, repo.path))
        except OSError as exc:
            LOG.exception("Could not write to %s", repo.path)
            raise errors.ServiceUnavailable("The git storage cannot be written: {0}".format(exc.strerror))
        environment.storage_head = commit
        db.info.setdefault(_HEADS, {})[repo.path] = commit
        for path, content in files.items():
            if content is not None:
                repo.remember(blobs[path], content)
        return blobs

    def write(self, environment, resource, document, stored, sealed, author):
        path = file_path(resource.name, document.level_path, document.kind)
        message = "{0} {1} of {2}, version {3}".format(
            document.kind, document.level_path or "(environment)", resource.name, stored.version)
        if document.storage_ref is not None:
            sealed = _same_tokens(sealed, _stored_content(environment.id, document.storage_ref))
        blob = self._commit(environment, {path: dump(sealed)}, author, message)[path]
        document.data = stored.data = {}
        document.storage_ref = stored.storage_ref = blob

    def fill(self, environment_id, rows):
        for row in rows:
            if row.storage_ref is not None:
                orm.attributes.set_committed_value(row, "data", sealing.unseal(
                    _stored_content(environment_id, row.storage_ref), host_secrets.keyset()))

    def _stored(self, where):
        """(document, its data source's name) of the git-stored documents ``where`` selects."""
        return db.execute(sa.select(Document, ResourceDefinition.name)
                          .join(ResourceDefinition, ResourceDefinition.id == Document.resource_definition_id)
                          .options(orm.defer(Document.data))
                          .where(where, Document.storage_ref.isnot(None)).order_by(Document.id)).all()

    def forget(self, environment_id, where, author):
        found = self._stored(where)
        if found:
            environment = db.get(Environment, environment_id, with_for_update=True)
            self._commit(environment, {file_path(name, d.level_path, d.kind): None for d, name in found}, author,
                         "delete {0} document(s)".format(len(found)))

    def renamed(self, lineage_id, old_name, new_name):
        for environment_id in db.scalars(sa.select(Document.environment_id).distinct().order_by(Document.environment_id)
                                         .where(Document.resource_definition_id == lineage_id,
                                                Document.storage_ref.isnot(None))).all():
            environment = db.get(Environment, environment_id, with_for_update=True)
            files = {}
            for document in db.scalars(sa.select(Document).options(orm.defer(Document.data)).where(
                    Document.environment_id == environment_id, Document.resource_definition_id == lineage_id,
                    Document.storage_ref.isnot(None))).all():
                files[file_path(old_name, document.level_path, document.kind)] = None
                files[file_path(new_name, document.level_path, document.kind)] = _stored_blob(
                    environment_id, document.storage_ref)
            self._commit(environment, files, None, "rename {0} to {1}".format(old_name, new_name))

    def drop_environment(self, environment_id):
        db.info.setdefault(_DROPPED, []).append(repository(environment_id).path)

    def reseal(self, classifiers, lineages, dry_run, commit):
        counts = self._sql.reseal(classifiers, lineages, dry_run, commit)
        where = sa.true() if lineages is None else Document.resource_definition_id.in_(lineages)
        changed = 0
        keyset = host_secrets.keyset()
        for environment_id in db.scalars(sa.select(Document.environment_id).distinct().order_by(Document.environment_id)
                                         .where(where, Document.storage_ref.isnot(None))).all():
            environment = db.get(Environment, environment_id, with_for_update=not dry_run)
            files, documents = {}, {}
            for document, name in self._stored(sa.and_(Document.environment_id == environment_id, where)):
                value, renewed = sealing.reencrypt(_stored_content(environment_id, document.storage_ref), keyset)
                classifier = classifiers.get(document.resource_definition_id)
                if classifier is not None:
                    before = sealing.count_sealed(value)
                    value = sealing.seal(value, classifier(sealing.unseal(value, keyset)), keyset)
                    renewed += sealing.count_sealed(value) - before
                if renewed:
                    changed += renewed
                    path = file_path(name, document.level_path, document.kind)
                    files[path], documents[path] = dump(value), document
            if files and not dry_run:
                blobs = self._commit(environment, files, "nailgun-secrets", "reseal")
                for path, document in documents.items():
                    db.execute(sa.update(DocumentVersion).where(
                        DocumentVersion.document_id == document.id, DocumentVersion.version == document.version)
                        .values(storage_ref=blobs[path]))
                    document.storage_ref = blobs[path]
                db.flush()
                if commit:
                    db.commit()
        counts["git"] = changed
        return counts


def _stored_content(environment_id, ref):
    """The sealed content of the blob ``ref`` of the environment's repository."""
    return load(_stored_blob(environment_id, ref))


def _stored_blob(environment_id, ref):
    """The bytes of the blob ``ref`` of the environment's repository; 503 naming it when it is gone."""
    repo = repository(environment_id)
    try:
        return repo.read_blob(ref)
    except (LookupError, OSError):
        LOG.exception("Blob %s of environment %s", ref, environment_id)
        raise errors.ServiceUnavailable("The git repository of environment {0} lacks a stored version: restore "
                                        "{1}".format(environment_id, repo.path))


def _same_tokens(sealed, previous):
    """``sealed`` with the token of ``previous`` wherever both hold the same secret: a write that did not
    change a secret does not change its line in the file."""
    keyset = host_secrets.keyset()

    def kept(new, old):
        if sealing.is_sealed(new) and sealing.is_sealed(old) and keyset.is_current(old[sealing.MARKER]):
            try:
                return old if keyset.decrypt(old[sealing.MARKER]) == keyset.decrypt(new[sealing.MARKER]) else new
            except Exception:  # noqa: BLE001 (a token no key opens: write the new one)
                return new
        if type(new) is dict and type(old) is dict:
            return {key: kept(value, old[key]) if key in old else value for key, value in new.items()}
        if type(new) is list and type(old) is list and len(new) == len(old):
            return [kept(value, before) for value, before in zip(new, old)]
        return new
    return kept(sealed, previous)


class GitDriver(SqlDefinitions, GitDocuments, base.Driver):
    name = "git"
