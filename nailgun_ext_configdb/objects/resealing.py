"""Stored documents sealed again after what is secret changed (a definition's schema, the patterns).

Documents are sealed by their writer with their definition's schema, so a leaf that became
secret after it was written would stay in clear in the document and every version. A
definition's new content reseals its rows in the same request; ``nailgun-secrets reencrypt``
reseals every definition's (``ConfigDBExtension.on_secrets_reseal``). Both go through the storage
driver, which renews tokens and seals the newly secret leaves, never opens one.
"""
import sqlalchemy as sa

from nailgun_host.public import db
from nailgun_ext_configdb import storage
from nailgun_ext_configdb.models import ResourceDefinition
from nailgun_ext_configdb.objects import secrets, value_schema


def reseal_documents(lineages=None, dry_run=False, commit=True):
    """Reseal the documents and versions of the data sources ``lineages`` (every one when None) with what
    their live versions' schemas make secret; ``{"where": values changed}``."""
    every = lineages is None
    statement = sa.select(ResourceDefinition.lineage_id, ResourceDefinition.content).where(
        ResourceDefinition.deleted_at.is_(None))
    if not every:
        statement = statement.where(ResourceDefinition.lineage_id.in_(lineages))
    schemas = {}
    for lineage_id, content in db.execute(statement):
        schemas.setdefault(lineage_id, []).append(value_schema.schema_of(content))
    classifiers = {lineage_id: secrets.classifier(found) for lineage_id, found in schemas.items()}
    return storage.driver().reseal(classifiers, None if every else lineages, dry_run, commit)
