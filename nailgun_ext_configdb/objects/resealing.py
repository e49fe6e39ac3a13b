"""Stored documents sealed again after what is secret changed (a definition's schema, the patterns).

Documents are sealed by their writer with their definition's schema, so a leaf that became
secret after it was written would stay in clear in the document and every version. A
definition's new content reseals its rows in the same request; ``nailgun-secrets reencrypt``
reseals every definition's (``ConfigDBExtension.on_secrets_reseal``). Both go through the
host's ``sealed.reseal``, which renews tokens and seals the newly secret leaves, never opens one.
"""
import sqlalchemy as sa

from nailgun_host.db import db
from nailgun_host.db.sealed import reseal
from nailgun_ext_configdb.models import Document, DocumentVersion, ResourceDefinition
from nailgun_ext_configdb.objects import secrets, value_schema

_DEFINITION = "resource_definition_id"


def reseal_documents(lineages=None, dry_run=False, commit=True):
    """Reseal the documents and versions of the data sources ``lineages`` (every one when None) with what
    their live versions' schemas make secret; ``{"table.column": values changed}``."""
    every = lineages is None
    statement = sa.select(ResourceDefinition.lineage_id, ResourceDefinition.content).where(
        ResourceDefinition.deleted_at.is_(None))
    if not every:
        statement = statement.where(ResourceDefinition.lineage_id.in_(lineages))
    schemas = {}
    for lineage_id, content in db.execute(statement):
        schemas.setdefault(lineage_id, []).append(value_schema.schema_of(content))
    classifiers = {lineage_id: secrets.classifier(found) for lineage_id, found in schemas.items()}
    documents = sa.select(Document.id)
    if not every:
        documents = documents.where(Document.resource_definition_id.in_(sorted(classifiers)))
    of_version = sa.select(Document.resource_definition_id).where(
        Document.id == DocumentVersion.document_id).scalar_subquery()
    counts = {}
    for model, definition, where in (
            (Document, Document.resource_definition_id, Document.id.in_(documents)),
            (DocumentVersion, of_version, DocumentVersion.document_id.in_(documents))):
        counts["{0}.data".format(model.__tablename__)] = reseal(
            model.__table__, model.__table__.c.data,
            lambda row: classifiers.get(getattr(row, _DEFINITION)),
            where=None if every else where, columns=[definition.label(_DEFINITION)],
            dry_run=dry_run, commit=commit)
    return counts
