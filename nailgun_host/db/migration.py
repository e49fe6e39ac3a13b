"""Alembic for the core and for every extension, each with its own version table.

The core's scripts live in ``nailgun_host/db/migrations`` (version table
``alembic_version``); an extension's live where its ``alembic_migrations_path()``
says (version table ``<name>_alembic_version``), and read the ``table_prefix``
main option to name their tables, as in Nailgun. Every script directory's env.py
is just ``run_env()``.

Operators migrate with ``nailgun-syncdb``; what makes that safe lives here: one
migration at a time per database (``migration_lock``), and a refusal, in one line, to
touch a database that newer code has migrated (``DatabaseNewerThanCode``).
"""
import contextlib
import fcntl
import importlib.metadata
import os

import functools
import logging

import alembic.util
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
NEWER_MESSAGE = "The database is newer than this code: install the version that migrated it"
#: PostgreSQL advisory lock key of nailgun-syncdb ("nailgun" in ASCII): one migration per database at a time
LOCK_KEY = 0x6E61696C67756E


class DatabaseNewerThanCode(alembic.util.CommandError):
    """The database is at a revision this code does not know: newer code migrated it.

    A CommandError, so every caller that turns alembic's errors into one line does so here too.
    """

    def __init__(self, migration_status):
        super().__init__("the database is newer than this code: {0}, which {1} does not know; install the "
                         "version that migrated it (or restore the backup taken before)".format(
                             "; ".join(_newer_parts(migration_status)), _code_version()))


def _code_version():
    try:
        return "fuel-nailgun-extensions " + importlib.metadata.version("fuel-nailgun-extensions")
    except importlib.metadata.PackageNotFoundError:
        return "this code"


def _newer_parts(migration_status):
    return ["{0} is at {1}".format(name, ", ".join(migration_status[name]["unknown"]))
            for name in unknown(migration_status)]


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
    """Upgrade the core, then every extension that has migrations, to head; returns the final ``status``.

    Idempotent, one run at a time per database (``migration_lock``), and refused before any change
    (``DatabaseNewerThanCode``) when a part is at a revision this code does not know.
    """
    from nailgun_host.extensions import get_all_extensions

    extensions = list(extensions if extensions is not None else get_all_extensions())
    with migration_lock(url):
        before = read_status(url, extensions)
        refuse_newer(before)
        command.upgrade(make_config(CORE_MIGRATIONS, url), "head")
        for extension in extensions:
            if extension.alembic_migrations_path():
                command.upgrade(config_for_extension(extension, url), "head")
        after = read_status(url, extensions)
    moved = moves(before, after)
    if moved:  # one line, and none when there was nothing to do
        LOG.info("migrated %s", "; ".join(moved))
    return after


def moves(before, after):
    """``"PART: FROM -> TO"`` for each part that two ``status`` readings find at other revisions:
    the record of what a migration ran (alembic's own lines are held at WARNING in the API's log)."""
    return ["{0}: {1} -> {2}".format(name, ", ".join(before.get(name, {}).get("current", [])) or
                                     "no revision", ", ".join(part["current"]) or "no revision")
            for name, part in after.items() if before.get(name, {}).get("current") != part["current"]]


@contextlib.contextmanager
def migration_lock(url):
    """Hold the database's migration lock: a second ``nailgun-syncdb`` waits here for the first.

    PostgreSQL: a session advisory lock (``LOCK_KEY``) on a connection of its own, so it covers
    every host, and goes with the connection if the process dies. SQLite: ``flock`` on
    ``<database file>.lock`` next to the file (only processes of one host can share a SQLite
    file); an in-memory database needs none. Logs a line when it has to wait.
    """
    engine = make_engine(url)
    try:
        if engine.dialect.name == "postgresql":
            with engine.connect() as connection:
                if not connection.execute(sqlalchemy.text("SELECT pg_try_advisory_lock(:key)"),
                                          {"key": LOCK_KEY}).scalar():
                    LOG.info("Waiting for another nailgun-syncdb on this database to finish")
                    connection.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": LOCK_KEY})
                connection.commit()
                try:
                    yield
                finally:
                    connection.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:key)"), {"key": LOCK_KEY})
                    connection.commit()
            return
        database = engine.url.database if engine.dialect.name == "sqlite" else None
    finally:
        engine.dispose()
    if not database or database == ":memory:":
        yield
        return
    try:
        lock_file = open(os.path.abspath(database) + ".lock", "a")
    except OSError as exc:
        raise alembic.util.CommandError("cannot take the migration lock: {0}".format(exc))
    with lock_file:
        try:
            fcntl.flock(lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            LOG.info("Waiting for another nailgun-syncdb on this database to finish")
            fcntl.flock(lock_file, fcntl.LOCK_EX)
        yield


@functools.lru_cache(maxsize=None)
def _scripts(script_location):
    return ScriptDirectory.from_config(make_config(script_location, ""))


def _heads(script_location):
    return sorted(_scripts(script_location).get_heads())


def _known(script_location, revision):
    try:
        return _scripts(script_location).get_revision(revision) is not None
    except alembic.util.CommandError:
        return False


def status(connection, extensions=None):
    """``{part: {"current": [...], "head": [...], "unknown": [...]}}`` for the core and every extension
    with migrations; ``unknown``: the current revisions this code has no script for (newer code's).

    What the health route and ``nailgun-syncdb --status`` report, and how a request that finds no
    table tells an unmigrated database (run ``nailgun-syncdb``) from a bug. Reads only the version tables.
    """
    from nailgun_host.extensions import get_all_extensions

    parts = [("core", CORE_MIGRATIONS, "alembic_version")]
    for extension in extensions if extensions is not None else get_all_extensions():
        if extension.alembic_migrations_path():
            parts.append((extension.name, extension.alembic_migrations_path(), extension.alembic_table_version()))
    result = {}
    for name, location, version_table in parts:
        current = MigrationContext.configure(connection, opts={"version_table": version_table}).get_current_heads()
        result[name] = {"current": sorted(current), "head": _heads(location),
                        "unknown": sorted(r for r in current if not _known(location, r))}
    return result


def read_status(url, extensions=None):
    """``status`` of the database at ``url``, on a connection of its own."""
    engine = make_engine(url)
    try:
        with engine.connect() as connection:
            return status(connection, extensions)
    finally:
        engine.dispose()


def behind(migration_status):
    """The parts of a ``status`` that are not at their head revision (newer ones included)."""
    return sorted(name for name, part in migration_status.items() if part["current"] != part["head"])


def unknown(migration_status):
    """The parts of a ``status`` at a revision this code does not know: newer code migrated them."""
    return sorted(name for name, part in migration_status.items() if part["unknown"])


def refuse_newer(migration_status):
    """Raise ``DatabaseNewerThanCode`` when a part of the database is ahead of this code."""
    if unknown(migration_status):
        raise DatabaseNewerThanCode(migration_status)


def check_database(engine):
    """``(fault, status)``: fault is a ServiceUnavailable (503) when the database cannot serve requests.

    Down or unreachable: no status. Reachable but a part behind its head: the parts, and
    the command that fixes it. The health route and the request processor both ask this.
    """
    try:
        with engine.connect() as connection:
            state = status(connection)
    except sqlalchemy.exc.SQLAlchemyError as exc:
        LOG.warning("The database is unavailable: %s", errors.first_line(exc))
        return errors.ServiceUnavailable(UNAVAILABLE_MESSAGE), None
    if unknown(state):
        return errors.ServiceUnavailable(NEWER_MESSAGE, _newer_parts(state)), state
    late = behind(state)
    if late:
        return errors.ServiceUnavailable(SYNCDB_MESSAGE, ["{0} is at {1}, not at its head {2}".format(
            name, ", ".join(state[name]["current"]) or "no revision", ", ".join(state[name]["head"]))
            for name in late]), state
    return None, state


def downgrade_extension(extension, url, revision="base"):
    command.downgrade(config_for_extension(extension, url), revision)
