"""Migrations from an empty database, on SQLite and (with NAILGUN_TEST_DB_URL) PostgreSQL."""

import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from nailgun_host.db import Base, make_engine, migration
from nailgun_host.extensions import get_all_extensions


def _tables(url):
    engine = make_engine(url)
    try:
        return set(sa.inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_syncdb_builds_everything_from_empty_and_is_idempotent(empty_db_url):
    migration.syncdb(empty_db_url)
    tables = _tables(empty_db_url)
    assert {"releases", "clusters", "nodegroups", "network_groups", "ip_addrs", "nodes", "tasks",
            "alembic_version"} <= tables
    for extension in get_all_extensions():
        if extension.alembic_migrations_path():
            assert extension.alembic_table_version() in tables
    migration.syncdb(empty_db_url)
    assert _tables(empty_db_url) == tables


def test_models_match_the_migrations(empty_db_url):
    import nailgun_host.db.models  # noqa: F401  (the core's tables)

    migration.syncdb(empty_db_url)  # imports every extension, and so their models
    engine = make_engine(empty_db_url)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": False})
            differences = compare_metadata(context, Base.metadata)
    finally:
        engine.dispose()
    # each extension's version table is alembic's, not a model's
    differences = [d for d in differences
                   if not (d[0] == "remove_table" and d[1].name.endswith("_alembic_version"))]
    assert differences == []


def test_an_extension_downgrades_alone(empty_db_url):
    migration.syncdb(empty_db_url)
    before = _tables(empty_db_url)
    with_tables = [e for e in get_all_extensions() if e.alembic_migrations_path()]
    assert {e.name for e in with_tables} >= {"cluster_upgrade", "configdb"}
    extension = with_tables[0]
    migration.downgrade_extension(extension, empty_db_url)
    after = _tables(empty_db_url)
    removed = before - after
    assert removed and all(t.startswith(extension.table_prefix()) for t in removed)
    assert "releases" in after
    migration.syncdb(empty_db_url)
    assert _tables(empty_db_url) == before
