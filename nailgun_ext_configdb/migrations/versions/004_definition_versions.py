"""Resource definitions have versions; environments pin the version of each data source they use.

Every existing definition becomes version 1 of its own lineage, and every environment is pinned to
the definitions of its components. A name is no longer unique in its component (its versions share
it): the first versions' names are, by a partial unique index.

Revision ID: cdb004
Revises: cdb003
"""
from alembic import context, op
import sqlalchemy as sa

revision = "cdb004"
down_revision = "cdb003"
branch_labels = None
depends_on = None

#: names unnamed unique constraints when SQLite's batch mode reflects them, so the old one can be dropped
NAMING = {"uq": "uq_%(table_name)s_%(column_0_name)s_%(column_1_name)s"}


def _prefix():
    return context.config.get_main_option("table_prefix") or ""


def upgrade():
    p = _prefix()
    table = p + "resource_definitions"
    old_unique = next((found["name"] or "uq_{0}_component_id_name".format(table)
                       for found in sa.inspect(op.get_bind()).get_unique_constraints(table)
                       if found["column_names"] == ["component_id", "name"]), None)
    with op.batch_alter_table(table, naming_convention=NAMING) as batch:
        if old_unique is not None:
            batch.drop_constraint(old_unique, type_="unique")
        batch.add_column(sa.Column("lineage_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
        batch.add_column(sa.Column("created_at", sa.DateTime(), nullable=True))
        batch.add_column(sa.Column("deleted_at", sa.DateTime(), nullable=True))
        batch.create_unique_constraint(p + "resource_definitions_lineage_version", ["lineage_id", "version"])
    definitions = sa.table(table, sa.column("id"), sa.column("lineage_id"), sa.column("component_id"))
    op.execute(definitions.update().values(lineage_id=definitions.c.id))
    op.create_index(p + "resource_definitions_first_names", table, ["component_id", "name"], unique=True,
                    sqlite_where=sa.text("version = 1"), postgresql_where=sa.text("version = 1"))
    op.create_index(p + "resource_definitions_name", table, ["name"])
    op.create_table(p + "environment_pins",
                    sa.Column("environment_id", sa.Integer(),
                              sa.ForeignKey(p + "environments.id", ondelete="CASCADE"), primary_key=True),
                    sa.Column("lineage_id", sa.Integer(), primary_key=True),
                    sa.Column("definition_id", sa.Integer(),
                              sa.ForeignKey(table + ".id", ondelete="CASCADE"), nullable=False))
    op.create_index(p + "environment_pins_definition_id", p + "environment_pins", ["definition_id"])
    links = sa.table(p + "environment_components", sa.column("environment_id"), sa.column("component_id"))
    pins = sa.table(p + "environment_pins", sa.column("environment_id"), sa.column("lineage_id"),
                    sa.column("definition_id"))
    op.execute(pins.insert().from_select(
        ["environment_id", "lineage_id", "definition_id"],
        sa.select(links.c.environment_id, definitions.c.id, definitions.c.id)
        .join(definitions, definitions.c.component_id == links.c.component_id)))


def downgrade():
    p = _prefix()
    table = p + "resource_definitions"
    op.drop_table(p + "environment_pins")
    definitions = sa.table(table, sa.column("id"), sa.column("version"), sa.column("deleted_at"))
    # what a version-less store can hold: the first version of each data source (the one its documents
    # refer to; a deleted one comes back)
    op.execute(definitions.delete().where(definitions.c.version > 1))
    op.drop_index(p + "resource_definitions_name", table_name=table)
    op.drop_index(p + "resource_definitions_first_names", table_name=table)
    with op.batch_alter_table(table) as batch:
        batch.drop_constraint(p + "resource_definitions_lineage_version", type_="unique")
        batch.drop_column("deleted_at")
        batch.drop_column("created_at")
        batch.drop_column("version")
        batch.drop_column("lineage_id")
        batch.create_unique_constraint(table + "_component_id_name_key", ["component_id", "name"])
