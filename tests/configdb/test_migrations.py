"""The extension's own alembic history: prefixed tables on their own version table, down and up."""
import datetime
import json

import sqlalchemy as sa
from alembic import command

from nailgun_host.db import migration
from nailgun_ext_configdb.extension import ConfigDBExtension

TABLES = {"configdb_components", "configdb_resource_definitions", "configdb_environments",
          "configdb_environment_components", "configdb_documents", "configdb_document_versions",
          "configdb_changes", "configdb_environment_pins", "configdb_generations"}
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
    assert TABLES <= tables and version == "cdb009"
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
    assert _state(engine)[1] == "cdb009"


#: deployed sessions as c007/cdb007 kept them: (id, scope, environment id, revision), and the feed's entries
#: (environment id, revision, session id)
DEPLOYED = [("a" * 32, "cluster", 1, 1), ("b" * 32, "cluster", 1, 2), ("c" * 32, "config", 2, 3)]
FEED = [(1, 4, "a" * 32), (1, 4, "a" * 32), (1, 5, None), (2, 1, None)]


def _seed_before_revisions(engine):
    at = datetime.datetime(2026, 11, 27)
    with engine.begin() as connection:
        for environment_id in (1, 2):
            connection.execute(sa.text(
                "INSERT INTO configdb_environments (id, hierarchy_levels, revision, created_at, linked) "
                "VALUES (:id, '[]', 5, :at, :linked)"), {"id": environment_id, "at": at, "linked": environment_id == 1})
        for session_id, scope, environment_id, revision in DEPLOYED + [("d" * 32, "cluster", 1, None)]:
            connection.execute(sa.text(
                "INSERT INTO config_sessions (id, scope, environment_id, owner, state, version, base, created_at, "
                "updated_at, expires_at, revision) VALUES (:id, :scope, :env, 'admin', :state, 0, '{}', :at, :at, "
                ":at, :revision)"), {"id": session_id, "scope": scope, "env": environment_id, "at": at,
                                     "state": "open" if revision is None else "deployed", "revision": revision})
        for environment_id, revision, session_id in FEED:
            connection.execute(sa.text(
                "INSERT INTO configdb_changes (environment_id, revision, resource_definition_id, level_path, kind, "
                "change, session_id, created_at) VALUES (:env, :revision, 1, '', 'values', 'write', :session, :at)"),
                {"env": environment_id, "revision": revision, "session": session_id, "at": at})


def _revisions(engine):
    with engine.connect() as connection:
        rows = connection.execute(sa.text("SELECT id, revisions FROM config_sessions ORDER BY id")).all()
    return {row.id[0]: json.loads(row.revisions) if isinstance(row.revisions, str) else row.revisions
            for row in rows}


def test_sessions_deployed_before_get_the_revisions_they_moved(empty_db_url):
    """c008 names the cluster's revision of each cluster deploy, cdb008 the ConfigDB environment's where the
    feed shows the deploy's entries (an unlinked environment's: its own revision); both go back down."""
    extension = ConfigDBExtension()
    core, configdb = (migration.make_config(migration.CORE_MIGRATIONS, empty_db_url),
                      migration.config_for_extension(extension, empty_db_url))
    command.upgrade(core, "c007")
    command.upgrade(configdb, "cdb007")
    engine = sa.create_engine(empty_db_url)
    try:
        _seed_before_revisions(engine)
        command.upgrade(core, "head")
        assert _revisions(engine) == {"a": {"cluster": {"id": 1, "revision": 1}},
                                      "b": {"cluster": {"id": 1, "revision": 2}}, "c": None, "d": None}
        command.upgrade(configdb, "head")
        assert _revisions(engine) == {
            "a": {"cluster": {"id": 1, "revision": 1}, "configdb_environment": {"id": 1, "revision": 4}},
            "b": {"cluster": {"id": 1, "revision": 2}},
            "c": {"configdb_environment": {"id": 2, "revision": 3}}, "d": None}
        command.downgrade(configdb, "cdb007")
        assert _revisions(engine) == {"a": {"cluster": {"id": 1, "revision": 1}},
                                      "b": {"cluster": {"id": 1, "revision": 2}}, "c": None, "d": None}
        command.downgrade(core, "c007")
        assert "revisions" not in {c["name"] for c in sa.inspect(engine).get_columns("config_sessions")}
    finally:
        engine.dispose()
