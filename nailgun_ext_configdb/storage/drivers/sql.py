"""The SQL driver (the default): definitions and document contents in the host database's tables,
on the request's session and transaction."""
import sqlalchemy as sa
from sqlalchemy import exc

from nailgun_host.public import db, errors, reseal
from nailgun_platform.public import now
from nailgun_ext_configdb.models import LIVE_DEFINITIONS as LIVE, Document, DocumentVersion, Environment
from nailgun_ext_configdb.models import ResourceDefinition
from nailgun_ext_configdb.storage.drivers import base


class SqlDefinitions(base.Definitions):
    """Versions are rows; ``UNIQUE(lineage_id, version)`` and a unique index on the first versions'
    names make a racing creation fail (409) instead of giving a number or a name twice, and a
    deleted version stays as a tombstone, so its number is never given again."""

    def create(self, component_id, name, content, first):
        if first is None:
            definition = ResourceDefinition(name=name, component_id=component_id, content=content, version=1)
            self._insert(definition)
            definition.lineage_id = definition.id
            db.flush()
            return definition
        number = db.scalar(sa.select(sa.func.max(ResourceDefinition.version))
                           .where(ResourceDefinition.lineage_id == first.lineage_id)) + 1
        definition = ResourceDefinition(name=first.name, component_id=first.component_id, content=content,
                                        lineage_id=first.lineage_id, version=number)
        self._insert(definition)
        db.refresh(definition)
        return definition

    @staticmethod
    def _insert(definition):
        try:
            with db.begin_nested():
                db.add(definition)
        except exc.IntegrityError:
            raise errors.Conflict("Resource definition {0} of component {1} was created concurrently; "
                                  "try again".format(definition.name, definition.component_id))

    def retrieve(self, definition_id, lock=False):
        statement = sa.select(ResourceDefinition).where(ResourceDefinition.id == definition_id, LIVE)
        found = db.scalars(statement.with_for_update() if lock else statement).first()
        if found is None:
            raise errors.ObjectNotFound("Resource definition {0} not found".format(definition_id))
        return found

    def retrieve_by_name(self, component_id, name, version=None):
        statement = sa.select(ResourceDefinition).filter_by(component_id=component_id, name=name).where(LIVE)
        if version is not None:
            statement = statement.filter_by(version=version)
        found = db.scalars(statement.order_by(ResourceDefinition.version.desc()).limit(1)).first()
        if found is None:
            raise errors.ObjectNotFound("Resource definition {0}{1} not found in component {2}".format(
                name, "" if version is None else " version {0}".format(version), component_id))
        return found

    def list(self, component_id=None, name=None, version=None, only_latest=False):
        statement = sa.select(ResourceDefinition).where(LIVE).order_by(ResourceDefinition.id)
        if component_id is not None:
            statement = statement.filter_by(component_id=component_id)
        if name is not None:
            statement = statement.filter_by(name=name)
        if version is not None:
            statement = statement.filter_by(version=version)
        if only_latest:
            statement = statement.where(ResourceDefinition.version == ResourceDefinition.latest_version)
        return db.scalars(statement).all()

    def versions(self, lineage_id):
        return db.scalars(sa.select(ResourceDefinition).where(ResourceDefinition.lineage_id == lineage_id, LIVE)
                          .order_by(ResourceDefinition.version)).all()

    def first_version(self, component_id, name, lock=False):
        statement = sa.select(ResourceDefinition).filter_by(component_id=component_id, name=name, version=1)
        return db.scalars(statement.with_for_update() if lock else statement).first()

    def rename(self, definition, name, component_id):
        first = self.first_version(component_id, name)
        if first is not None and first.lineage_id != definition.lineage_id:
            raise errors.AlreadyExists("Resource definition {0} already exists in component {1}{2}".format(
                name, component_id, "" if self.versions(first.lineage_id) else
                " (deleted; its versions keep the name)"))
        db.execute(sa.update(ResourceDefinition).where(ResourceDefinition.lineage_id == definition.lineage_id)
                   .values(name=name, component_id=component_id))
        db.expire_all()
        return db.get(ResourceDefinition, definition.id)

    def delete(self, definition):
        definition.deleted_at = now()
        db.flush()


class SqlDocuments(base.Documents):
    """Each version's content in its row's ``data`` column (secret leaves sealed)."""

    def write(self, environment, resource, document, stored, sealed, author):
        document.data = stored.data = sealed

    def fill(self, environment_id, rows):
        elsewhere = [row for row in rows if row.storage_ref is not None]
        if elsewhere:
            raise errors.ServiceUnavailable(
                "Environment {0} has documents stored by another storage driver (git): set CONFIGDB.storage "
                "back to it".format(environment_id))

    def forget(self, environment_id, where, author):
        """Nothing to do: the content goes with the rows."""

    def renamed(self, lineage_id, old_name, new_name):
        """Nothing to do: documents name their data source by id."""

    def drop_environment(self, environment_id):
        """Nothing to do: the content goes with the rows."""

    def reseal(self, classifiers, lineages, dry_run, commit):
        """One environment at a time, under its lock (as its writers take it, first): a write meanwhile
        either commits before its documents are read or waits, never to be overwritten by a value
        resealed from before it."""
        scope = sa.true() if lineages is None else Document.resource_definition_id.in_(lineages)
        of_version = sa.select(Document.resource_definition_id).where(
            Document.id == DocumentVersion.document_id).scalar_subquery()
        counts = {"{0}.data".format(model.__tablename__): 0 for model in (Document, DocumentVersion)}
        for environment_id in db.scalars(sa.select(Document.environment_id).where(scope).distinct()
                                         .order_by(Document.environment_id)).all():
            if not dry_run:
                db.execute(sa.select(Environment.id).where(Environment.id == environment_id).with_for_update())
            documents = sa.select(Document.id).where(scope, Document.environment_id == environment_id)
            for model, lineage, where in (
                    (Document, Document.resource_definition_id, Document.id.in_(documents)),
                    (DocumentVersion, of_version, DocumentVersion.document_id.in_(documents))):
                counts["{0}.data".format(model.__tablename__)] += reseal(
                    model.__table__, model.__table__.c.data, lambda row: classifiers.get(row.lineage_id),
                    where=where, columns=[lineage.label("lineage_id")], dry_run=dry_run, commit=False)
            if commit:
                db.commit()
        return counts


class SqlDriver(SqlDefinitions, SqlDocuments, base.Driver):
    name = "sql"
