"""The extension's own alembic history: its table and version table, up and down on their own."""
import sqlalchemy as sa
from alembic import command

from nailgun_host.db import migration
from nailgun_ext_upgrade.extension import ClusterUpgradeExtension

TABLE = "cluster_upgrade_relations"
VERSION_TABLE = "cluster_upgrade_alembic_version"


def _state(engine):
    inspector = sa.inspect(engine)
    tables = set(inspector.get_table_names())
    version = None
    if VERSION_TABLE in tables:
        with engine.connect() as connection:
            version = connection.execute(sa.text("SELECT version_num FROM " + VERSION_TABLE)).scalar()
    return TABLE in tables, version, inspector


def test_extension_migrates_down_and_up_on_its_own_version_table(migrated_db, db_url):
    engine = migrated_db[0]
    extension = ClusterUpgradeExtension()
    exists, version, inspector = _state(engine)
    assert (exists, version) == (True, "3b5d115d7e49")
    columns = {c["name"]: c for c in inspector.get_columns(TABLE)}
    assert set(columns) == {"id", "orig_cluster_id", "seed_cluster_id", "created_at"}
    assert not columns["orig_cluster_id"]["nullable"] and not columns["seed_cluster_id"]["nullable"]
    unique = {tuple(u["column_names"]) for u in inspector.get_unique_constraints(TABLE)}
    assert {("orig_cluster_id",), ("seed_cluster_id",)} <= unique
    with engine.connect() as connection:
        core_version = connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
    try:
        migration.downgrade_extension(extension, db_url)
        exists, version, _ = _state(engine)
        assert (exists, version) == (False, None)
        assert "clusters" in sa.inspect(engine).get_table_names()  # the core is left alone
        with engine.connect() as connection:
            assert connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar() == core_version
    finally:
        command.upgrade(migration.config_for_extension(extension, db_url), "head")
    assert _state(engine)[:2] == (True, "3b5d115d7e49")
