"""The ``SealedJSON`` column type: secret leaves stored as Fernet tokens, clear values above the database.

A ``SealedJSON(classifier)`` column seals, on its way to the database, the leaves
``classifier(value)`` names (``nailgun_platform.secrets.classify``), and opens every sealed leaf
on its way back, so the code above the database sees clear values only. A column without a
classifier stores what its writer sealed (ConfigDB seals with the resource's schema, which
the column cannot know) and opens the same way. The keys are the configured repository's
(``secrets.keyset``); the host checks them at start and reseals (``nailgun_host.db.sealed``).
"""
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from nailgun_platform import secrets
from nailgun_platform.secrets import sealing


class SealedJSON(sa.types.TypeDecorator):
    """JSON (JSONB on PostgreSQL) whose secret leaves are stored as Fernet tokens."""

    impl = sa.JSON
    cache_ok = True

    def __init__(self, classifier=None):
        super().__init__()
        self.classifier = classifier

    def load_dialect_impl(self, dialect):
        return dialect.type_descriptor(JSONB() if dialect.name == "postgresql" else sa.JSON())

    def process_bind_param(self, value, dialect):
        if value is None or self.classifier is None:
            return value
        return sealing.seal(value, self.classifier(value), secrets.keyset())

    def process_result_value(self, value, dialect):
        if value is None:
            return value
        return sealing.unseal(value, secrets.keyset())
