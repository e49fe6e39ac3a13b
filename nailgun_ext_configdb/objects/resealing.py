"""Stored documents sealed again after what is secret changed (a definition's schema, the patterns).

Documents are sealed by their writer with their definition's schema, so a leaf that became
secret after it was written would stay in clear in the document and every version. A
definition's new content reseals its rows in the same request; ``nailgun-secrets reencrypt``
reseals every definition's (``ConfigDBExtension.on_secrets_reseal``). Both go through the storage
driver, which renews tokens and seals the newly secret leaves, never opens one.

A definition's reseal first locks the environments that use its data source or hold its documents, as
their writers do: a write sealed with the markers of before either commits first, and is resealed, or
waits, and finds the new markers under its lock (``api.documents.drafted_write`` drafts again when the data
source changed); otherwise a write committed after the reseal read the documents would keep a newly secret
leaf in clear.
"""
import sqlalchemy as sa

from nailgun_host.public import db
from nailgun_ext_configdb import storage
from nailgun_ext_configdb.models import Document, Environment, EnvironmentComponent, ResourceDefinition
from nailgun_ext_configdb.objects import secrets, value_schema


def reseal_documents(lineages=None, dry_run=False, commit=True):
    """Reseal the documents and versions of the data sources ``lineages`` (every one when None) with what
    their live versions' schemas make secret; ``{"where": values changed}``."""
    every = lineages is None
    if not every:
        _lock_environments(lineages)
    statement = sa.select(ResourceDefinition.lineage_id, ResourceDefinition.content).where(
        ResourceDefinition.deleted_at.is_(None))
    if not every:
        statement = statement.where(ResourceDefinition.lineage_id.in_(lineages))
    schemas = {}
    for lineage_id, content in db.execute(statement):
        schemas.setdefault(lineage_id, []).append(value_schema.schema_of(content))
    classifiers = {lineage_id: secrets.classifier(found) for lineage_id, found in schemas.items()}
    return storage.driver().reseal(classifiers, None if every else lineages, dry_run, commit)


def _lock_environments(lineages):
    """Take the row locks (FOR UPDATE, in id order) of the environments whose documents of ``lineages`` a
    reseal rewrites, or whose writers may create some: those using the data sources' components."""
    components = sa.select(ResourceDefinition.component_id).where(ResourceDefinition.lineage_id.in_(lineages))
    using = sa.select(EnvironmentComponent.environment_id).where(EnvironmentComponent.component_id.in_(components))
    holding = sa.select(Document.environment_id).where(Document.resource_definition_id.in_(lineages))
    db.execute(sa.select(Environment.id).where(sa.or_(Environment.id.in_(using), Environment.id.in_(holding)))
               .order_by(Environment.id).with_for_update()).all()
