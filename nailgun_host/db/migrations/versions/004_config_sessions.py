"""Configuration sessions and their staged documents; the cluster's model revision.

Revision ID: c004
Revises: c003
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = "c004"
down_revision = "c003"
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade():
    with op.batch_alter_table("clusters") as batch:
        batch.add_column(sa.Column("revision", sa.BigInteger(), nullable=False, server_default="0"))
    op.create_table(
        "config_sessions",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("environment_id", sa.Integer(), nullable=False),
        sa.Column("owner", sa.String(length=255), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("base", JSONType, nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.Column("deployed_at", sa.DateTime(), nullable=True),
        sa.Column("revision", sa.BigInteger(), nullable=True),
        sa.Column("conflicts", JSONType, nullable=True),
        sa.Column("deployed_changes", JSONType, nullable=True),
        sa.CheckConstraint("scope IN ('cluster', 'config')", name="config_sessions_scope"),
        sa.CheckConstraint("state IN ('open', 'deploying', 'deployed', 'invalid', 'abandoned', 'expired')",
                           name="config_sessions_state"),
        sa.PrimaryKeyConstraint("id"))
    op.create_index("config_sessions_environment", "config_sessions", ["scope", "environment_id", "state"])
    op.create_index("config_sessions_deployed", "config_sessions", ["scope", "environment_id", "deployed_at"])
    op.create_table(
        "config_session_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=32), nullable=False),
        sa.Column("extension", sa.String(length=64), nullable=False),
        sa.Column("document_key", sa.String(length=1100), nullable=False),
        sa.Column("descriptor", JSONType, nullable=False),
        sa.Column("data", JSONType, nullable=False),
        sa.Column("base", JSONType, nullable=True),
        sa.Column("changed_keys", JSONType, nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["config_sessions.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("session_id", "document_key"))


def downgrade():
    op.drop_table("config_session_changes")
    op.drop_index("config_sessions_deployed", table_name="config_sessions")
    op.drop_index("config_sessions_environment", table_name="config_sessions")
    op.drop_table("config_sessions")
    with op.batch_alter_table("clusters") as batch:
        batch.drop_column("revision")
