"""The secrets canary: one token that tells at start whether the key repository fits the database.

Revision ID: c003
Revises: c002
"""
from alembic import op
import sqlalchemy as sa

revision = "c003"
down_revision = "c002"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table("secrets_canary",
                    sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
                    sa.Column("token", sa.String(length=512), nullable=False),
                    sa.PrimaryKeyConstraint("id"))


def downgrade():
    op.drop_table("secrets_canary")
