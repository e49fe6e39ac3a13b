"""The core tables: releases, clusters, node groups, networks, IP addresses, nodes, tasks.

Revision ID: c001
Revises:
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = "c001"
down_revision = None
branch_labels = None
depends_on = None

JSONType = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def upgrade():
    op.create_table('releases',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('version', sa.String(length=30), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('operating_system', sa.String(length=50), nullable=False),
    sa.Column('state', sa.String(length=20), nullable=False),
    sa.Column('modes_metadata', JSONType, nullable=False),
    sa.Column('roles_metadata', JSONType, nullable=False),
    sa.Column('attributes_metadata', JSONType, nullable=False),
    sa.Column('networks_metadata', JSONType, nullable=False),
    sa.Column('network_roles_metadata', JSONType, nullable=False),
    sa.Column('components_metadata', JSONType, nullable=False),
    sa.Column('deployment_tasks', JSONType, nullable=False),
    sa.Column('extensions', JSONType, nullable=False),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name', 'version')
    )
    op.create_table('clusters',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=50), nullable=False),
    sa.Column('mode', sa.String(length=20), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('net_provider', sa.String(length=20), nullable=False),
    sa.Column('release_id', sa.Integer(), nullable=False),
    sa.Column('is_customized', sa.Boolean(), nullable=False),
    sa.Column('ui_settings', JSONType, nullable=False),
    sa.Column('extensions', JSONType, nullable=False),
    sa.Column('editable_attributes', JSONType, nullable=False),
    sa.Column('generated_attributes', JSONType, nullable=False),
    sa.Column('networking_parameters', JSONType, nullable=False),
    sa.Column('network_template', JSONType, nullable=True),
    sa.Column('pending_changes', JSONType, nullable=False),
    sa.Column('created_at', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['release_id'], ['releases.id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('name')
    )
    op.create_table('nodegroups',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('cluster_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=50), nullable=False),
    sa.Column('is_default', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['clusters.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('cluster_id', 'name')
    )
    op.create_table('tasks',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=50), nullable=False),
    sa.Column('cluster_id', sa.Integer(), nullable=True),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('progress', sa.Integer(), nullable=False),
    sa.Column('message', sa.Text(), nullable=True),
    sa.Column('result', JSONType, nullable=False),
    sa.Column('parent_id', sa.Integer(), nullable=True),
    sa.Column('dry_run', sa.Boolean(), nullable=False),
    sa.Column('graph_type', sa.String(length=255), nullable=True),
    sa.Column('time_start', sa.DateTime(), nullable=True),
    sa.Column('time_end', sa.DateTime(), nullable=True),
    sa.Column('cache', JSONType, nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['clusters.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['parent_id'], ['tasks.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('uuid')
    )
    op.create_index(op.f('ix_tasks_cluster_id'), 'tasks', ['cluster_id'], unique=False)
    op.create_table('network_groups',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=50), nullable=False),
    sa.Column('release', sa.Integer(), nullable=True),
    sa.Column('vlan_start', sa.Integer(), nullable=True),
    sa.Column('cidr', sa.String(length=25), nullable=True),
    sa.Column('gateway', sa.String(length=25), nullable=True),
    sa.Column('group_id', sa.Integer(), nullable=True),
    sa.Column('meta', JSONType, nullable=False),
    sa.ForeignKeyConstraint(['group_id'], ['nodegroups.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('nodes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('uuid', sa.String(length=36), nullable=False),
    sa.Column('name', sa.String(length=100), nullable=False),
    sa.Column('hostname', sa.String(length=255), nullable=False),
    sa.Column('fqdn', sa.String(length=255), nullable=True),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('error_type', sa.String(length=30), nullable=True),
    sa.Column('error_msg', sa.Text(), nullable=True),
    sa.Column('online', sa.Boolean(), nullable=False),
    sa.Column('mac', sa.String(length=17), nullable=False),
    sa.Column('ip', sa.String(length=25), nullable=True),
    sa.Column('manufacturer', sa.String(length=50), nullable=True),
    sa.Column('platform_name', sa.String(length=150), nullable=True),
    sa.Column('os_platform', sa.String(length=150), nullable=True),
    sa.Column('cluster_id', sa.Integer(), nullable=True),
    sa.Column('group_id', sa.Integer(), nullable=True),
    sa.Column('roles', JSONType, nullable=False),
    sa.Column('pending_roles', JSONType, nullable=False),
    sa.Column('primary_tags', JSONType, nullable=False),
    sa.Column('pending_addition', sa.Boolean(), nullable=False),
    sa.Column('pending_deletion', sa.Boolean(), nullable=False),
    sa.Column('meta', JSONType, nullable=False),
    sa.Column('volumes', JSONType, nullable=False),
    sa.Column('kernel_params', sa.Text(), nullable=True),
    sa.Column('progress', sa.Integer(), nullable=False),
    sa.Column('replaced_deployment_info', JSONType, nullable=False),
    sa.Column('replaced_provisioning_info', JSONType, nullable=False),
    sa.Column('network_template', JSONType, nullable=True),
    sa.Column('pending_changes', JSONType, nullable=False),
    sa.Column('timestamp', sa.DateTime(), nullable=False),
    sa.ForeignKeyConstraint(['cluster_id'], ['clusters.id'], ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['group_id'], ['nodegroups.id'], ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('mac'),
    sa.UniqueConstraint('uuid')
    )
    op.create_index(op.f('ix_nodes_cluster_id'), 'nodes', ['cluster_id'], unique=False)
    op.create_table('ip_addr_ranges',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('network_group_id', sa.Integer(), nullable=False),
    sa.Column('first', sa.String(length=25), nullable=False),
    sa.Column('last', sa.String(length=25), nullable=False),
    sa.ForeignKeyConstraint(['network_group_id'], ['network_groups.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    op.create_table('ip_addrs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('network', sa.Integer(), nullable=False),
    sa.Column('node', sa.Integer(), nullable=True),
    sa.Column('ip_addr', sa.String(length=25), nullable=False),
    sa.Column('vip_name', sa.String(length=50), nullable=True),
    sa.Column('vip_namespace', sa.String(length=50), nullable=True),
    sa.Column('is_user_defined', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['network'], ['network_groups.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['node'], ['nodes.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('network', 'ip_addr', name='ip_addrs_network_ip_addr_key')
    )
    op.create_table('node_interfaces',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('node_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('type', sa.String(length=10), nullable=False),
    sa.Column('mac', sa.String(length=17), nullable=True),
    sa.Column('pxe', sa.Boolean(), nullable=False),
    sa.Column('mode', sa.String(length=30), nullable=True),
    sa.Column('slaves', JSONType, nullable=False),
    sa.ForeignKeyConstraint(['node_id'], ['nodes.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('node_id', 'name')
    )
    op.create_table('interface_networks',
    sa.Column('interface_id', sa.Integer(), nullable=False),
    sa.Column('network_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['interface_id'], ['node_interfaces.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['network_id'], ['network_groups.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('interface_id', 'network_id')
    )


def downgrade():

    op.drop_table('interface_networks')
    op.drop_table('node_interfaces')
    op.drop_table('ip_addrs')
    op.drop_table('ip_addr_ranges')
    op.drop_index(op.f('ix_nodes_cluster_id'), table_name='nodes')
    op.drop_table('nodes')
    op.drop_table('network_groups')
    op.drop_index(op.f('ix_tasks_cluster_id'), table_name='tasks')
    op.drop_table('tasks')
    op.drop_table('nodegroups')
    op.drop_table('clusters')
    op.drop_table('releases')
