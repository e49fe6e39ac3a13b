"""Alembic for the core and for every extension, each with its own version table.

The core's scripts live in ``nailgun_host/db/migrations`` (version table
``alembic_version``); an extension's live where its ``alembic_migrations_path()``
says (version table ``<name>_alembic_version``), and read the ``table_prefix``
main option to name their tables, as in Nailgun. Every script directory's env.py
is just ``run_env()``.
"""
import os

from alembic import command, context
from alembic.config import Config

from nailgun_host.db import make_engine

CORE_MIGRATIONS = os.path.join(os.path.dirname(__file__), "migrations")


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


def downgrade_extension(extension, url, revision="base"):
    command.downgrade(config_for_extension(extension, url), revision)
