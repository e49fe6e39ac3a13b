"""Request statistics (``GET /stats``): each host's counts, added to by its processes now and then.

Revision ID: c006
Revises: c005
"""
from alembic import op
import sqlalchemy as sa

revision = "c006"
down_revision = "c005"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "request_stats_hosts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.Column("cpu_percent", sa.Float(), nullable=False),
        sa.Column("cpu_count", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("host"))
    op.create_table(
        "request_stats_counts",
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("tenant", sa.String(length=255), nullable=False),
        sa.Column("user_name", sa.String(length=512), nullable=False),
        sa.Column("requests", sa.BigInteger(), nullable=False),
        sa.Column("errors", sa.BigInteger(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("host", "tenant", "user_name"))


def downgrade():
    op.drop_table("request_stats_counts")
    op.drop_table("request_stats_hosts")
