"""Alembic for the core and for every extension, each with its own version table.

The core's scripts live in ``nailgun_host/db/migrations`` (version table
``alembic_version``); an extension's live where its ``alembic_migrations_path()``
says (version table ``<name>_alembic_version``), and read the ``table_prefix``
main option to name their tables, as in Nailgun. Every script directory's env.py
is just ``run_env()``.
"""
import os

import functools
import logging

from alembic import command, context
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

import sqlalchemy.exc

from nailgun_host import errors
from nailgun_host.db import make_engine

LOG = logging.getLogger(__name__)

CORE_MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")
SYNCDB_MESSAGE = "The database is not migrated: run nailgun-syncdb"
UNAVAILABLE_MESSAGE = "The database is unavailable; try again later"


def make_config(script_location, url, version_table="alembic_version", table_prefix=""):
    cfg = Config()
    cfg.set_main_option("script_location", script_location)
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    cfg.set_main_option("version_table", version_table)
    cfg.set_main_option("table_prefix", table_prefix)
    return cfg


def config_for_extension(extension, url):
    return make_config(
        extension.alembic_migrations_path(),
        url,
        extension.alembic_table_version(),
        extension.table_prefix(),
    )


def run_env():
    """The body of every env.py: online or offline, on an injected connection or a new engine."""
    cfg = context.config
    version_table = cfg.get_main_option("version_table", "alembic_version")
    if context.is_offline_mode():
        context.configure(url=cfg.get_main_option("sqlalchemy.url"), version_table=version_table,
                          literal_binds=True, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    connection = cfg.attributes.get("connection")
    if connection is not None:
        _run_online(connection, version_table)
        return
    engine = make_engine(cfg.get_main_option("sqlalchemy.url"))
    try:
        with engine.connect() as connection:
            if connection.dialect.name == "sqlite":
                # batch mode copies a table and drops the old one: with foreign keys on, the drop
                # would cascade to every row referring to it (set outside a transaction, or it is a no-op)
                connection.connection.driver_connection.execute("PRAGMA foreign_keys=OFF")
            _run_online(connection, version_table)
            connection.commit()
    finally:
        engine.dispose()


def _run_online(connection, version_table):
    context.configure(connection=connection, version_table=version_table, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def syncdb(url, extensions=None):
    """Upgrade the core, then every extension that has migrations, to head. Idempotent."""
    from nailgun_host.extensions import get_all_extensions

    command.upgrade(make_config(CORE_MIGRATIONS, url), "head")
    for extension in extensions if extensions is not None else get_all_extensions():
        if extension.alembic_migrations_path():
            command.upgrade(config_for_extension(extension, url), "head")


@functools.lru_cache(maxsize=None)
def _heads(script_location):
    return tuple(sorted(ScriptDirectory.from_config(make_config(script_location, "")).get_heads()))


def status(connection, extensions=None):
    """``{part: {"current": [...], "head": [...]}}`` for the core and every extension with migrations.

    What the health route reports, and how a request that finds no table tells an
    unmigrated database (run ``nailgun-syncdb``) from a bug. Reads only the version tables.
    """
    from nailgun_host.extensions import get_all_extensions

    parts = [("core", CORE_MIGRATIONS, "alembic_version")]
    for extension in extensions if extensions is not None else get_all_extensions():
        if extension.alembic_migrations_path():
            parts.append((extension.name, extension.alembic_migrations_path(), extension.alembic_table_version()))
    result = {}
    for name, location, version_table in parts:
        current = MigrationContext.configure(connection, opts={"version_table": version_table}).get_current_heads()
        result[name] = {"current": sorted(current), "head": list(_heads(location))}
    return result


def behind(migration_status):
    """The parts of a ``status`` that are not at their head revision."""
    return sorted(name for name, part in migration_status.items() if part["current"] != part["head"])


def check_database(engine):
    """``(fault, status)``: fault is a ServiceUnavailable (503) when the database cannot serve requests.

    Down or unreachable: no status. Reachable but a part behind its head: the parts, and
    the command that fixes it. The health route and the request processor both ask this.
    """
    try:
        with engine.connect() as connection:
            state = status(connection)
    except sqlalchemy.exc.SQLAlchemyError as exc:
        LOG.warning("The database is unavailable: %s", str(getattr(exc, "orig", exc)).splitlines()[0])
        return errors.ServiceUnavailable(UNAVAILABLE_MESSAGE), None
    late = behind(state)
    if late:
        return errors.ServiceUnavailable(SYNCDB_MESSAGE, ["{0} is at {1}, not at its head {2}".format(
            name, ", ".join(state[name]["current"]) or "no revision", ", ".join(state[name]["head"]))
            for name in late]), state
    return None, state


def downgrade_extension(extension, url, revision="base"):
    command.downgrade(config_for_extension(extension, url), revision)
