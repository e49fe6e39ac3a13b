"""A generation per environment (``models.Generation``) instead of cdb007's one for everything: a write to
one environment no longer makes every other environment's kept answers misses, and writers of different
environments no longer update one common row (on PostgreSQL they serialized on its lock at every commit).

Row ``0`` counts what every answer depends on (components, resource definitions); the row of an
environment's id counts that environment (its row, so every document written, as ``revision`` grows), its
components and pins, and the nodes its documents may name: a change of a node's id, cluster or FQDN
counts the environments of its old and new cluster, and those of the clusters of every node sharing its
old or new FQDN (a ``nodes`` value names the node of the lowest id with that FQDN, wherever it is: one
taking the name makes another environment's answer a 404). Every environment has its row from the start
(a URL whose rows are missing is not replayed), and rows are never deleted, so an environment deleted and
created again keeps counting up.

As cdb007: triggers, so no writer can change an answer unseen; on PostgreSQL deferred to the commit (the
generation rows are the last locks a transaction takes); a value is the database's time of the change in
microseconds, or one more than the row's last when the clock is not ahead, so it never stands for two
states of its environment.

Revision ID: cdb009
Revises: cdb008
"""
from alembic import context, op
import sqlalchemy as sa

revision = "cdb009"
down_revision = "cdb008"
branch_labels = None
depends_on = None

#: kept here rather than imported: a migration must not change when the models do
EVENTS = ("INSERT", "UPDATE", "DELETE")
NODE_EVENTS = ("INSERT", "UPDATE OF id, cluster_id, fqdn", "DELETE")
#: what every answer depends on: (table, events), counted in row 0
EVERYWHERE = [("components", EVENTS), ("resource_definitions", EVENTS)]
#: per environment: (table, whether it is one of the extension's (prefixed), events, the environments a row
#: counts, given ``{row}`` = OLD or NEW, as a SELECT of ids)
PER_ENVIRONMENT = [
    ("environments", True, EVENTS, "SELECT {row}.id AS id"),
    ("environment_components", True, EVENTS, "SELECT {row}.environment_id AS id"),
    ("environment_pins", True, EVENTS, "SELECT {row}.environment_id AS id"),
    ("nodes", False, NODE_EVENTS,
     "SELECT {row}.cluster_id AS id UNION SELECT cluster_id FROM nodes WHERE fqdn = {row}.fqdn"),
]
TABLE, TRIGGER = "generations", "generation"
#: cdb007's single counter, brought back by the downgrade
OLD_TABLE, OLD_TRIGGER = "state_generation", "state_generation"
OLD_COUNTED = [("environments", True, EVENTS)] + [(t, True, EVENTS) for t in (
    "components", "resource_definitions", "environment_components", "environment_pins")] + [
    ("nodes", False, NODE_EVENTS)]

#: the database's clock in microseconds since 1970, and the larger of two numbers, per dialect
_CLOCK = {"postgresql": "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)",
          "sqlite": "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"}
_GREATEST = {"postgresql": "GREATEST", "sqlite": "MAX"}


def _prefix():
    return context.config.get_main_option("table_prefix") or ""


def _dialect():
    return op.get_bind().dialect.name


def _bump(p, ids):
    """The upsert that counts up the rows of the environment ids ``ids`` selects (NULLs left out), in the
    order of their ids: two transactions counting the same rows lock them in the same order."""
    d = _dialect()
    return ("INSERT INTO {0}{1} (environment_id, generation) SELECT id, {2} FROM ({3}) AS ids "
            "WHERE id IS NOT NULL ORDER BY id ON CONFLICT (environment_id) DO UPDATE SET "
            "generation = {4}({0}{1}.generation + 1, excluded.generation)").format(
                p, TABLE, _CLOCK[d], ids, _GREATEST[d])


def _ids(select, event):
    """The ids a row change counts: of the row before (UPDATE, DELETE) and after (INSERT, UPDATE)."""
    rows = {"INSERT": ["NEW"], "DELETE": ["OLD"]}.get(event.split()[0], ["OLD", "NEW"])
    return " UNION ".join(select.format(row=row) for row in rows)


def _target(p, table, prefixed):
    return (p if prefixed else "") + table


def _create(p):
    op.create_table(p + TABLE, sa.Column("environment_id", sa.Integer, primary_key=True, autoincrement=False),
                    sa.Column("generation", sa.BigInteger, nullable=False))
    op.execute(_bump(p, "SELECT 0 AS id UNION SELECT id FROM {0}environments".format(p)))
    counted = [(table, True, events, "SELECT 0 AS id") for table, events in EVERYWHERE] + PER_ENVIRONMENT
    for table, prefixed, events, select in counted:
        if _dialect() == "postgresql":
            # OLD is NULL on INSERT and NEW on DELETE (PostgreSQL 11+): their ids are left out
            op.execute("CREATE FUNCTION {0}count_{1}_{2}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                       "BEGIN {3}; RETURN NULL; END $$".format(p, table, TRIGGER, _bump(p, _ids(select, "UPDATE"))))
            op.execute("CREATE CONSTRAINT TRIGGER {0}{1}_{2} AFTER {3} ON {4} DEFERRABLE INITIALLY DEFERRED "
                       "FOR EACH ROW EXECUTE FUNCTION {0}count_{1}_{2}()".format(
                           p, table, TRIGGER, " OR ".join(events), _target(p, table, prefixed)))
            continue
        for event in events:
            op.execute("CREATE TRIGGER {0}{1}_{2}_{3} AFTER {4} ON {5} BEGIN {6}; END".format(
                p, table, event.split()[0].lower(), TRIGGER, event, _target(p, table, prefixed),
                _bump(p, _ids(select, event))))


def _drop(p):
    counted = [(table, True, events) for table, events in EVERYWHERE] + [e[:3] for e in PER_ENVIRONMENT]
    for table, prefixed, events in counted:
        if _dialect() == "postgresql":
            op.execute("DROP TRIGGER {0}{1}_{2} ON {3}".format(p, table, TRIGGER, _target(p, table, prefixed)))
            op.execute("DROP FUNCTION {0}count_{1}_{2}()".format(p, table, TRIGGER))
            continue
        for event in events:
            op.execute("DROP TRIGGER {0}{1}_{2}_{3}".format(p, table, event.split()[0].lower(), TRIGGER))
    op.drop_table(p + TABLE)


def _old_bump(p):
    d = _dialect()
    return ("INSERT INTO {0}{1} (id, generation) VALUES (1, {2}) ON CONFLICT (id) DO UPDATE SET "
            "generation = {3}({0}{1}.generation + 1, {2})").format(p, OLD_TABLE, _CLOCK[d], _GREATEST[d])


def _create_old(p):
    """cdb007's state: one row counted up by every change of what any answer depends on."""
    op.create_table(p + OLD_TABLE, sa.Column("id", sa.Integer, primary_key=True),
                    sa.Column("generation", sa.BigInteger, nullable=False))
    op.execute(_old_bump(p))
    if _dialect() == "postgresql":
        op.execute("CREATE FUNCTION {0}count_{1}() RETURNS trigger LANGUAGE plpgsql AS $$ "
                   "BEGIN {2}; RETURN NULL; END $$".format(p, OLD_TABLE, _old_bump(p)))
    for table, prefixed, events in OLD_COUNTED:
        if _dialect() == "postgresql":
            op.execute("CREATE CONSTRAINT TRIGGER {0}{1}_{2} AFTER {3} ON {4} DEFERRABLE INITIALLY DEFERRED "
                       "FOR EACH ROW EXECUTE FUNCTION {0}count_{5}()".format(
                           p, table, OLD_TRIGGER, " OR ".join(events), _target(p, table, prefixed), OLD_TABLE))
            continue
        for event in events:
            op.execute("CREATE TRIGGER {0}{1}_{2}_{3} AFTER {4} ON {5} BEGIN {6}; END".format(
                p, table, event.split()[0].lower(), OLD_TRIGGER, event, _target(p, table, prefixed), _old_bump(p)))


def _drop_old(p):
    for table, prefixed, events in OLD_COUNTED:
        if _dialect() == "postgresql":
            op.execute("DROP TRIGGER {0}{1}_{2} ON {3}".format(p, table, OLD_TRIGGER, _target(p, table, prefixed)))
            continue
        for event in events:
            op.execute("DROP TRIGGER {0}{1}_{2}_{3}".format(p, table, event.split()[0].lower(), OLD_TRIGGER))
    if _dialect() == "postgresql":
        op.execute("DROP FUNCTION {0}count_{1}()".format(p, OLD_TABLE))
    op.drop_table(p + OLD_TABLE)


def upgrade():
    _drop_old(_prefix())
    _create(_prefix())


def downgrade():
    _drop(_prefix())
    _create_old(_prefix())
