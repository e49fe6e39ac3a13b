"""The relations table: which seed cluster clones which original cluster.

Revision ID: 3b5d115d7e49
Revises:
"""
from alembic import context, op
import sqlalchemy as sa

revision = "3b5d115d7e49"
down_revision = None
branch_labels = None
depends_on = None


def _table():
    return context.config.get_main_option("table_prefix") + "relations"


def upgrade():
    op.create_table(
        _table(),
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("orig_cluster_id", sa.Integer(), nullable=False),
        sa.Column("seed_cluster_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("orig_cluster_id"),
        sa.UniqueConstraint("seed_cluster_id"),
    )


def downgrade():
    op.drop_table(_table())
