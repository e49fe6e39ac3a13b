"""A generation the database counts up on every change to components, definitions, environments'
components and pins (``models.DefinitionsGeneration``), for readers' caches.

Triggers rather than application code, so that no writer (a bulk statement, a cascade, a future
handler) can change what a document URL resolves to without the readers' caches seeing it. On
PostgreSQL they are deferred to the commit: the generation row is then the last lock a transaction
takes, so writers never deadlock over it. The row is an upsert (SQLite 3.24+, PostgreSQL 9.5+).

Revision ID: cdb006
Revises: cdb005
"""
from alembic import context, op
import sqlalchemy as sa

revision = "cdb006"
down_revision = "cdb005"
branch_labels = None
depends_on = None

#: kept here rather than imported: a migration must not change when the models do
TABLES = ("components", "resource_definitions", "environment_components", "environment_pins")
EVENTS = ("INSERT", "UPDATE", "DELETE")


def _prefix():
    return context.config.get_main_option("table_prefix") or ""


def _bump(p):
    return ("INSERT INTO {0}definitions_generation (id, generation) VALUES (1, 1) "
            "ON CONFLICT (id) DO UPDATE SET generation = {0}definitions_generation.generation + 1").format(p)


def upgrade():
    p = _prefix()
    op.create_table(p + "definitions_generation",
                    sa.Column("id", sa.Integer, primary_key=True),
                    sa.Column("generation", sa.BigInteger, nullable=False))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE FUNCTION {0}count_definitions_generation() RETURNS trigger LANGUAGE plpgsql AS $$ "
                   "BEGIN {1}; RETURN NULL; END $$".format(p, _bump(p)))
        for table in TABLES:
            op.execute("CREATE CONSTRAINT TRIGGER {0}{1}_generation AFTER INSERT OR UPDATE OR DELETE ON {0}{1} "
                       "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
                       "EXECUTE FUNCTION {0}count_definitions_generation()".format(p, table))
    else:
        for table in TABLES:
            for event in EVENTS:
                op.execute("CREATE TRIGGER {0}{1}_{2}_generation AFTER {3} ON {0}{1} BEGIN {4}; END".format(
                    p, table, event.lower(), event, _bump(p)))


def downgrade():
    p = _prefix()
    if op.get_bind().dialect.name == "postgresql":
        for table in TABLES:
            op.execute("DROP TRIGGER {0}{1}_generation ON {0}{1}".format(p, table))
        op.execute("DROP FUNCTION {0}count_definitions_generation()".format(p))
    else:
        for table in TABLES:
            for event in EVENTS:
                op.execute("DROP TRIGGER {0}{1}_{2}_generation".format(p, table, event.lower()))
    op.drop_table(p + "definitions_generation")
