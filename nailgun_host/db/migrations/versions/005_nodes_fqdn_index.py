"""An index on nodes' FQDN: ConfigDB names a node by FQDN in every Hiera read (its read cache asks on each).

Revision ID: c005
Revises: c004
"""
from alembic import op

revision = "c005"
down_revision = "c004"
branch_labels = None
depends_on = None


def upgrade():
    op.create_index("nodes_fqdn", "nodes", ["fqdn"])


def downgrade():
    op.drop_index("nodes_fqdn", table_name="nodes")
