"""The extension's own alembic history: prefixed tables on their own version table, down and up."""
import sqlalchemy as sa
from alembic import command

from nailgun_host.db import migration
from nailgun_ext_configdb.extension import ConfigDBExtension

TABLES = {"configdb_components", "configdb_resource_definitions", "configdb_environments",
          "configdb_environment_components", "configdb_documents", "configdb_document_versions",
          "configdb_changes", "configdb_environment_pins", "configdb_state_generation"}
VERSION_TABLE = "configdb_alembic_version"


def _state(engine):
    tables = set(sa.inspect(engine).get_table_names())
    version = None
    if VERSION_TABLE in tables:
        with engine.connect() as connection:
            version = connection.execute(sa.text("SELECT version_num FROM " + VERSION_TABLE)).scalar()
    return tables, version


def test_configdb_migrates_down_and_up_alone(migrated_db, db_url):
    engine = migrated_db[0]
    extension = ConfigDBExtension()
    tables, version = _state(engine)
    assert TABLES <= tables and version == "cdb007"
    assert {t for t in tables if t.startswith("configdb_")} == TABLES | {VERSION_TABLE}
    unique = {tuple(u["column_names"]) for u in sa.inspect(engine).get_unique_constraints("configdb_documents")}
    assert ("environment_id", "resource_definition_id", "level_path", "kind") in unique
    try:
        migration.downgrade_extension(extension, db_url)
        tables, version = _state(engine)
        assert not TABLES & tables and version is None
        assert "clusters" in tables  # the core is left alone
    finally:
        command.upgrade(migration.config_for_extension(extension, db_url), "head")
    assert _state(engine)[1] == "cdb007"
