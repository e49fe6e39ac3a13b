"""ConfigDB tables: components, resource definitions, environments, documents and their versions.

Revision ID: cdb001
Revises:
"""
from alembic import context, op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = "cdb001"
down_revision = None
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _prefix():
    return context.config.get_main_option("table_prefix") or ""


def upgrade():
    p = _prefix()
    op.create_table(p + "components",
                    sa.Column("id", sa.Integer(), primary_key=True),
                    sa.Column("name", sa.String(128), nullable=False, unique=True))
    op.create_table(p + "resource_definitions",
                    sa.Column("id", sa.Integer(), primary_key=True),
                    sa.Column("name", sa.String(255), nullable=False),
                    sa.Column("component_id", sa.Integer(),
                              sa.ForeignKey(p + "components.id", ondelete="CASCADE"), nullable=False),
                    sa.Column("content", JSONType, nullable=True),
                    sa.UniqueConstraint("component_id", "name"))
    op.create_index(p + "resource_definitions_component_id", p + "resource_definitions", ["component_id"])
    op.create_table(p + "environments",
                    sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
                    sa.Column("hierarchy_levels", JSONType, nullable=False),
                    sa.Column("revision", sa.Integer(), nullable=False),
                    sa.Column("created_at", sa.DateTime(), nullable=False))
    op.create_table(p + "environment_components",
                    sa.Column("environment_id", sa.Integer(),
                              sa.ForeignKey(p + "environments.id", ondelete="CASCADE"), primary_key=True),
                    sa.Column("component_id", sa.Integer(),
                              sa.ForeignKey(p + "components.id", ondelete="CASCADE"), primary_key=True),
                    sa.Column("position", sa.Integer(), nullable=False))
    op.create_index(p + "environment_components_component_id", p + "environment_components", ["component_id"])
    op.create_table(p + "documents",
                    sa.Column("id", sa.Integer(), primary_key=True),
                    sa.Column("environment_id", sa.Integer(),
                              sa.ForeignKey(p + "environments.id", ondelete="CASCADE"), nullable=False),
                    sa.Column("resource_definition_id", sa.Integer(),
                              sa.ForeignKey(p + "resource_definitions.id", ondelete="CASCADE"), nullable=False),
                    sa.Column("level_path", sa.String(1024), nullable=False),
                    sa.Column("kind", sa.String(16), nullable=False),
                    sa.Column("version", sa.Integer(), nullable=False),
                    sa.Column("data", JSONType, nullable=False),
                    sa.UniqueConstraint("environment_id", "resource_definition_id", "level_path", "kind"))
    op.create_index(p + "documents_resource_definition_id", p + "documents", ["resource_definition_id"])
    op.create_table(p + "document_versions",
                    sa.Column("id", sa.Integer(), primary_key=True),
                    sa.Column("document_id", sa.Integer(),
                              sa.ForeignKey(p + "documents.id", ondelete="CASCADE"), nullable=False),
                    sa.Column("version", sa.Integer(), nullable=False),
                    sa.Column("revision", sa.Integer(), nullable=False),
                    sa.Column("data", JSONType, nullable=False),
                    sa.Column("author", sa.String(255), nullable=False),
                    sa.Column("changed_keys", JSONType, nullable=False),
                    sa.Column("created_at", sa.DateTime(), nullable=False),
                    sa.UniqueConstraint("document_id", "version"))
    op.create_index(p + "document_versions_revision", p + "document_versions", ["document_id", "revision"])


def downgrade():
    p = _prefix()
    for table in ("document_versions", "documents", "environment_components", "environments",
                  "resource_definitions", "components"):
        op.drop_table(p + table)
