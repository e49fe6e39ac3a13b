"""Environments are linked to a cluster only when asked: a ``linked`` column.

Before, an environment was linked whenever a cluster had its id; those that are so
now stay linked, and nothing becomes linked by coincidence later.

Revision ID: cdb002
Revises: cdb001
"""
from alembic import context, op
import sqlalchemy as sa

revision = "cdb002"
down_revision = "cdb001"
branch_labels = None
depends_on = None


def _table():
    return (context.config.get_main_option("table_prefix") or "") + "environments"


def upgrade():
    op.add_column(_table(), sa.Column("linked", sa.Boolean(), nullable=False, server_default=sa.false()))
    environments = sa.table(_table(), sa.column("id"), sa.column("linked"))
    clusters = sa.table("clusters", sa.column("id"))
    op.execute(environments.update().where(environments.c.id.in_(sa.select(clusters.c.id)))
               .values(linked=sa.true()))


def downgrade():
    with op.batch_alter_table(_table()) as batch:
        batch.drop_column("linked")
