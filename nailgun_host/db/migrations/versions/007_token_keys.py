"""Local mode's token keys and revocations, shared by every host of the database (issue 24).

Revision ID: c007
Revises: c006
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

#: the JSON the sealed key is kept in (``SealedJSON``: JSONB on PostgreSQL)
JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")

revision = "c007"
down_revision = "c006"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table("auth_token_keys",
                    sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
                    sa.Column("key", JSONType, nullable=False),
                    sa.Column("superseded_at", sa.DateTime(), nullable=True),
                    sa.PrimaryKeyConstraint("id"))
    op.create_table("auth_revocations",
                    sa.Column("user_name", sa.String(length=512), nullable=False),
                    sa.Column("password_fingerprint", sa.String(length=64), nullable=False),
                    sa.Column("revoked_at", sa.DateTime(), nullable=False),
                    sa.PrimaryKeyConstraint("user_name", "password_fingerprint"))


def downgrade():
    op.drop_table("auth_revocations")
    op.drop_table("auth_token_keys")
