"""Every revision counter a session's deploy moved (issue 26): ``config_sessions.revisions``.

A deployed session of a cluster names the cluster's revision it landed in; the extensions add their own
counters in their own migrations (the host does not know them).

Revision ID: c008
Revises: c007
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = "c008"
down_revision = "c007"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

SESSIONS = sa.table("config_sessions", sa.column("id", sa.String), sa.column("scope", sa.String),
                    sa.column("environment_id", sa.Integer), sa.column("state", sa.String),
                    sa.column("revision", sa.BigInteger), sa.column("revisions", JSONType))


def upgrade():
    with op.batch_alter_table("config_sessions") as batch:
        batch.add_column(sa.Column("revisions", JSONType, nullable=True))
    bind = op.get_bind()
    deployed = bind.execute(sa.select(SESSIONS.c.id, SESSIONS.c.environment_id, SESSIONS.c.revision).where(
        SESSIONS.c.scope == "cluster", SESSIONS.c.state == "deployed")).all()
    if deployed:
        bind.execute(sa.update(SESSIONS).where(SESSIONS.c.id == sa.bindparam("session"))
                     .values(revisions=sa.bindparam("moved")),
                     [{"session": row.id, "moved": {"cluster": {"id": row.environment_id, "revision": row.revision}}}
                      for row in deployed])


def downgrade():
    with op.batch_alter_table("config_sessions") as batch:
        batch.drop_column("revisions")
