"""The ConfigDB environment's revision in the ``revisions`` of the sessions deployed before (issue 26).

A deploy that wrote documents left change-feed entries with its session id, at the revision it landed in:
that revision is recorded as the session's ``configdb_environment`` counter. An unlinked environment's
session whose entries were pruned landed in its own ``revision`` (the environment's counter); a cluster's
whose entries were pruned is left with the cluster's alone, as the feed can no longer show them anyway.

Revision ID: cdb008
Revises: cdb007
"""
from alembic import context, op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = "cdb008"
down_revision = "cdb007"
branch_labels = None
depends_on = None

#: kept here rather than imported: a migration must not change when the code does
COUNTER = "configdb_environment"
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
SESSIONS = sa.table("config_sessions", sa.column("id", sa.String), sa.column("scope", sa.String),
                    sa.column("environment_id", sa.Integer), sa.column("state", sa.String),
                    sa.column("revision", sa.BigInteger), sa.column("revisions", JSONType))


def _changes():
    return sa.table(context.config.get_main_option("table_prefix") + "changes", sa.column("environment_id"),
                    sa.column("revision"), sa.column("session_id"))


def _store(bind, moved):
    if moved:
        bind.execute(sa.update(SESSIONS).where(SESSIONS.c.id == sa.bindparam("session"))
                     .values(revisions=sa.bindparam("moved")),
                     [{"session": session, "moved": revisions} for session, revisions in moved.items()])


def upgrade():
    bind, changes = op.get_bind(), _changes()
    landed = dict(bind.execute(sa.select(changes.c.session_id, sa.func.max(changes.c.revision))
                               .where(changes.c.session_id.is_not(None)).group_by(changes.c.session_id)).all())
    moved = {}
    for row in bind.execute(sa.select(SESSIONS).where(SESSIONS.c.state == "deployed")).all():
        revision_landed = landed.get(row.id, row.revision if row.scope == "config" else None)
        if revision_landed is not None:
            moved[row.id] = dict(row.revisions or {}, **{COUNTER: {"id": row.environment_id,
                                                                   "revision": revision_landed}})
    _store(bind, moved)


def downgrade():
    bind = op.get_bind()
    moved = {row.id: {k: v for k, v in row.revisions.items() if k != COUNTER} or None
             for row in bind.execute(sa.select(SESSIONS.c.id, SESSIONS.c.revisions)
                                     .where(SESSIONS.c.revisions.is_not(None))).all()
             if row.revisions and COUNTER in row.revisions}
    _store(bind, moved)
