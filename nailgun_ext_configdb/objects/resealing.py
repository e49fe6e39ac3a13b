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


def reseal_documents(definitions=None, dry_run=False, commit=True):
    """Reseal the documents and versions of ``definitions`` (every one when None) with their schemas;
    ``{"table.column": values changed}``."""
    every = definitions is None
    if every:
        definitions = db.scalars(sa.select(ResourceDefinition)).all()
    classifiers = {d.id: secrets.classifier(value_schema.schema_of(d.content)) for d in definitions}
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
