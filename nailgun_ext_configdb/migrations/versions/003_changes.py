"""The change feed: ``changes``, one row per document written or deleted, by environment revision.

Revision ID: cdb003
Revises: cdb002
"""
from alembic import context, op
import sqlalchemy as sa

revision = "cdb003"
down_revision = "cdb002"
branch_labels = None
depends_on = None


def _prefix():
    return context.config.get_main_option("table_prefix") or ""


def upgrade():
    p = _prefix()
    op.create_table(p + "changes",
                    sa.Column("id", sa.Integer(), primary_key=True),
                    sa.Column("environment_id", sa.Integer(),
                              sa.ForeignKey(p + "environments.id", ondelete="CASCADE"), nullable=False),
                    sa.Column("revision", sa.BigInteger(), nullable=False),
                    sa.Column("document_id", sa.Integer(), nullable=True),
                    sa.Column("resource_definition_id", sa.Integer(), nullable=False),
                    sa.Column("level_path", sa.String(1024), nullable=False),
                    sa.Column("kind", sa.String(16), nullable=False),
                    sa.Column("change", sa.String(16), nullable=False),
                    sa.Column("version", sa.Integer(), nullable=True),
                    sa.Column("author", sa.String(255), nullable=True),
                    sa.Column("session_id", sa.String(32), nullable=True),
                    sa.Column("created_at", sa.DateTime(), nullable=False))
    op.create_index(p + "changes_environment_revision", p + "changes", ["environment_id", "revision"])


def downgrade():
    op.drop_table(_prefix() + "changes")
