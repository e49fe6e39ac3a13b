"""Storage drivers may keep a document's content outside its row: ``storage_ref`` on documents and
their versions, and each environment's ``storage_head`` (the git driver's last commit).

Revision ID: cdb005
Revises: cdb004
"""
from alembic import context, op
import sqlalchemy as sa

revision = "cdb005"
down_revision = "cdb004"
branch_labels = None
depends_on = None


def _prefix():
    return context.config.get_main_option("table_prefix") or ""


def upgrade():
    p = _prefix()
    op.add_column(p + "environments", sa.Column("storage_head", sa.String(64), nullable=True))
    for table in ("documents", "document_versions"):
        op.add_column(p + table, sa.Column("storage_ref", sa.String(64), nullable=True))


def downgrade():
    p = _prefix()
    documents = sa.table(p + "documents", sa.column("storage_ref"))
    if op.get_bind().execute(sa.select(sa.func.count()).where(documents.c.storage_ref.isnot(None))).scalar():
        raise RuntimeError("Documents are stored by the git driver: a downgrade would lose them (their content is "
                           "not in the database)")
    for table in ("environments", "documents", "document_versions"):
        with op.batch_alter_table(p + table) as batch:
            batch.drop_column("storage_head" if table == "environments" else "storage_ref")
