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

    def column_expression(self, column):
        """Read as JSON text on every database (PostgreSQL would hand JSONB over parsed), so that
        ``result_processor`` opens the sealed leaves while it parses, in one pass."""
        return sa.type_coerce(sa.cast(column, sa.Text), self)

    def result_processor(self, dialect, coltype):
        def process(value):
            if value is None:
                return None
            if type(value) is str:
                return sealing.loads(value, secrets.keyset())
            return sealing.unseal(value, secrets.keyset())  # a value not selected as a column (RETURNING)
        return process
