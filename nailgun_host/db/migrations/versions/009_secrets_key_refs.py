"""Which key manager objects hold the secrets' keys (``SECRETS.key_manager: castellan``, issue 28).

Revision ID: c009
Revises: c008
"""
from alembic import op
import sqlalchemy as sa

revision = "c009"
down_revision = "c008"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table("secrets_key_refs",
                    sa.Column("number", sa.Integer(), autoincrement=False, nullable=False),
                    sa.Column("object_id", sa.String(length=255), nullable=False),
                    sa.PrimaryKeyConstraint("number"))


def downgrade():
    op.drop_table("secrets_key_refs")
