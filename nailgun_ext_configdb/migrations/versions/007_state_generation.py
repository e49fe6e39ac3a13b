"""One generation the database counts up on every change a document's answer depends on
(``models.StateGeneration``): environments, components, definitions, environments' components and
pins (as cdb006 counted), and now also nodes' ids, clusters and FQDNs. It replaces cdb006's
generation of definitions alone: a reader's cache then asks one row, whatever the URL, and may
trust it for a moment (``nailgun_platform.read_cache``).

Triggers rather than application code, so that no writer (a bulk statement, a cascade, a future
handler) can change an answer without the readers' caches seeing it. On PostgreSQL they are
deferred to the commit: the generation row is then the last lock a transaction takes, so writers
never deadlock over it. The row exists from the start, and the generation is the time of the last
change in microseconds (``_bump``), so it never repeats for another state.

Revision ID: cdb007
Revises: cdb006
"""
from alembic import context, op
import sqlalchemy as sa

revision = "cdb007"
down_revision = "cdb006"
branch_labels = None
depends_on = None

#: kept here rather than imported: a migration must not change when the models do
EVENTS = ("INSERT", "UPDATE", "DELETE")
#: (table, whether it is one of the extension's (prefixed), events): what cdb006 counted
DEFINITIONS = [(table, True, EVENTS) for table in
               ("components", "resource_definitions", "environment_components", "environment_pins")]
#: and what is counted now: also environments, and of nodes' changes only the three a document URL
#: resolves by (not status, progress, ...)
COUNTED = [("environments", True, EVENTS)] + DEFINITIONS + [
    ("nodes", False, ("INSERT", "UPDATE OF id, cluster_id, fqdn", "DELETE"))]
#: (counter table, what it counts, the suffix of its triggers' names)
OLD = ("definitions_generation", DEFINITIONS, "generation")
NEW = ("state_generation", COUNTED, "state_generation")


def _prefix():
    return context.config.get_main_option("table_prefix") or ""


#: the database's clock in microseconds since 1970, and the larger of two numbers, per dialect
_CLOCK = {"postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)",
          "sqlite": "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"}
_GREATEST = {"postgresql": "GREATEST", "sqlite": "MAX"}


def _bump(p, table):
    """The upsert that counts ``table`` up. cdb006's counted from 1; the state generation is the time
    of the change (one more than the last when that is not earlier), so it never takes a value it had
    for another state, even after the row was emptied or the database restored from a backup."""
    if table == OLD[0]:
        return ("INSERT INTO {0}{1} (id, generation) VALUES (1, 1) "
                "ON CONFLICT (id) DO UPDATE SET generation = {0}{1}.generation + 1").format(p, table)
    dialect = op.get_bind().dialect.name
    return ("INSERT INTO {0}{1} (id, generation) VALUES (1, {2}) ON CONFLICT (id) DO UPDATE SET "
            "generation = {3}({0}{1}.generation + 1, {2})").format(p, table, _CLOCK[dialect], _GREATEST[dialect])


def _postgresql():
    return op.get_bind().dialect.name == "postgresql"


def _create_triggers(p, counter, counted, name):
    """Triggers on ``counted`` tables that count ``counter`` up (a function ``count_<counter>`` on
    PostgreSQL); ``name`` ends the triggers' names, which start with the prefix whatever the table."""
    if _postgresql():
        op.execute("CREATE FUNCTION {0}count_{1}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                   "BEGIN {2}; RETURN NULL; END $$".format(p, counter, _bump(p, counter)))
    for table, prefixed, events in counted:
        target = (p if prefixed else "") + table
        if _postgresql():
            op.execute("CREATE CONSTRAINT TRIGGER {0}{1}_{2} AFTER {3} ON {4} DEFERRABLE INITIALLY DEFERRED "
                       "FOR EACH ROW EXECUTE FUNCTION {0}count_{5}()".format(
                           p, table, name, " OR ".join(events), target, counter))
            continue
        for event in events:
            op.execute("CREATE TRIGGER {0}{1}_{2}_{3} AFTER {4} ON {5} BEGIN {6}; END".format(
                p, table, event.split()[0].lower(), name, event, target, _bump(p, counter)))


def _drop_triggers(p, counter, counted, name):
    for table, prefixed, events in counted:
        target = (p if prefixed else "") + table
        if _postgresql():
            op.execute("DROP TRIGGER {0}{1}_{2} ON {3}".format(p, table, name, target))
            continue
        for event in events:
            op.execute("DROP TRIGGER {0}{1}_{2}_{3}".format(p, table, event.split()[0].lower(), name))
    if _postgresql():
        op.execute("DROP FUNCTION {0}count_{1}()".format(p, counter))


def _replace(p, old, new):
    """Drop the counter ``old`` = (table, counted, trigger name) and its triggers; create ``new``'s."""
    (old_table, old_counted, old_name), (table, counted, name) = old, new
    _drop_triggers(p, old_table, old_counted, old_name)
    op.drop_table(p + old_table)
    op.create_table(p + table, sa.Column("id", sa.Integer, primary_key=True),
                    sa.Column("generation", sa.BigInteger, nullable=False))
    op.execute(_bump(p, table))
    _create_triggers(p, table, counted, name)


def upgrade():
    _replace(_prefix(), OLD, NEW)


def downgrade():
    _replace(_prefix(), NEW, OLD)
