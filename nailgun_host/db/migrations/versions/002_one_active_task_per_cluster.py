"""At most one pending or running provision/deployment task per cluster, held by a partial unique index.

Tasks that already break the rule (left by concurrent requests before it) are ended
as errors, all but the newest of each cluster, so the index can be built.

Revision ID: c002
Revises: c001
"""
from alembic import op
import sqlalchemy as sa

revision = "c002"
down_revision = "c001"
branch_labels = None
depends_on = None

WHERE = "status IN ('pending', 'running') AND name IN ('provision', 'deployment', 'deploy')"


def upgrade():
    op.execute(
        "UPDATE tasks SET status = 'error', message = 'Superseded: another task was running for the cluster' "
        "WHERE " + WHERE + " AND cluster_id IS NOT NULL AND id < "
        "(SELECT max(newer.id) FROM tasks newer WHERE newer.cluster_id = tasks.cluster_id AND "
        "newer.status IN ('pending', 'running') AND newer.name IN ('provision', 'deployment', 'deploy'))")
    op.create_index("tasks_one_active_per_cluster", "tasks", ["cluster_id"], unique=True,
                    postgresql_where=sa.text(WHERE), sqlite_where=sa.text(WHERE))


def downgrade():
    op.drop_index("tasks_one_active_per_cluster", table_name="tasks")
