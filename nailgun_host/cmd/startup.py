"""What every console command does at start: read the settings, use the database, refuse an exposed
server without authentication, build the application; and how an operator's mistake ends it.

An operator's mistake (a settings file that cannot be read, a database URL without its
driver or a database out of reach, an address already in use) ends the command with one
line on stderr and exit status 1, not a traceback.
"""
import argparse
import os
import socket

import alembic.util
import sqlalchemy as sa
import sqlalchemy.exc
import yaml

import nailgun_host
from nailgun_host import db, errors
from nailgun_host.db import migration
from nailgun_host.settings import DEFAULT_FILE, settings


class StartupError(Exception):
    """Why a console script cannot start; ``str()`` is the line it prints."""


#: where the settings and the database come from, as --help says (nailgun_host.settings reads them so)
CONFIG_HELP = ("YAML settings file (default: $NAILGUN_CONFIG, else {0} when it exists; "
               "NAILGUN_CONFIG= reads no file)".format(DEFAULT_FILE.replace("%", "%%")))
DB_URL_HELP = ("SQLAlchemy URL (default: $NAILGUN_DB_URL, else DATABASE_URL of the settings file, "
               "else the embedded SQLite file)")


def common_arguments(parser):
    """--version, --db-url and --config: what every server command takes (``fuel-ext --version`` is cliff's,
    the same argparse action and line)."""
    parser.add_argument("--version", action="version", version="%(prog)s " + nailgun_host.__version__,
                        help="print the version of fuel-nailgun-extensions and exit")
    parser.add_argument("--db-url", help=DB_URL_HELP)
    parser.add_argument("--config", help=CONFIG_HELP)


def _database_options():
    """--db-url and --config again, for after a subcommand's name; unset unless given (the main parser's stay)."""
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument("--db-url", default=argparse.SUPPRESS, help=DB_URL_HELP)
    options.add_argument("--config", default=argparse.SUPPRESS, help=CONFIG_HELP)
    return options


def subcommand(commands, name, **kwargs):
    """A subcommand that takes --db-url and --config after its name too: ``nailgun-secrets status --db-url URL``
    as well as ``nailgun-secrets --db-url URL status``."""
    return commands.add_parser(name, parents=[_database_options()], **kwargs)


def load_settings(args):
    overrides = {"DATABASE_URL": args.db_url} if args.db_url else {}
    if getattr(args, "allow_insecure_no_auth", False):  # nailgun-api's and nailgun-feed's flag
        overrides["AUTH"] = {"allow_insecure_no_auth": True}
    try:
        settings.reload(args.config, overrides)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise StartupError("cannot read the settings file: {0}".format(exc))
    return settings.database_url


def shown(url):
    """The URL as logs may show it: without its password."""
    try:
        return sa.make_url(url).render_as_string()
    except sqlalchemy.exc.ArgumentError:
        return url


def database_engine(url):
    """An engine of ``url`` (nothing connected yet); StartupError when it cannot be made."""
    try:
        return db.make_engine(url)
    except ImportError as exc:
        raise StartupError("cannot use the database {0}: its driver is not installed ({1})".format(
            shown(url), exc))
    except sqlalchemy.exc.ArgumentError as exc:
        raise StartupError("the database URL {0} is not valid: {1}".format(shown(url), exc))
    except OSError as exc:  # the directory of a SQLite file cannot be made
        raise StartupError("cannot use the database {0}: {1}".format(shown(url), exc))


def use_database(url, migrate, refuse_newer=True):
    """Migrate (``prepare_database``) or only connect to ``url``; StartupError when it cannot be used,
    or (``refuse_newer``) when newer code has migrated it: this code would misread its tables."""
    database_engine(url).dispose()
    try:
        if migrate:
            prepare_database(url)
        else:
            db.configure(url)
            if refuse_newer:
                migration.refuse_newer(migration.read_status(url))
    except (sqlalchemy.exc.DBAPIError, alembic.util.CommandError) as exc:
        raise StartupError("cannot use the database {0}: {1}".format(shown(url), errors.first_line(exc)))


def prepare_database(url):
    """Migrate the core and every extension, make sure the admin network exists, and collect the
    configuration sessions' garbage (expired sessions, ended ones past ``SESSIONS.keep_days``)."""
    from nailgun_host.objects import config_session, network

    migration.syncdb(url)
    db.configure(url)
    try:
        network.admin_network()
        db.db.commit()
        config_session.collect_garbage()
        db.db.commit()
    finally:
        db.db.remove()


def missing_sqlite_file(url):
    """The path of the SQLite file ``url`` names when that file does not exist (else None)."""
    try:
        parsed = sa.make_url(url)
    except sqlalchemy.exc.ArgumentError:
        return None
    database = parsed.database
    if parsed.get_backend_name() != "sqlite" or not database or database == ":memory:" or \
            database.startswith("file:") or os.path.exists(database):
        return None
    return os.path.abspath(database)


def run(parser, main, argv):
    args = parser.parse_args(argv)
    try:
        return main(args)
    except StartupError as exc:
        parser.exit(1, "{0}: error: {1}\n".format(parser.prog, exc))


def _is_loopback(host):
    """Whether every address ``host`` names is a loopback one (an unknown name is not)."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        return False
    from nailgun_host.auth import middleware

    return bool(addresses) and all(middleware.is_loopback(address.split("%")[0]) for address in addresses)


def check_exposure(args):
    """Refuse to serve everyone's credentials to the network without authentication."""
    auth = settings["AUTH"]
    if auth["method"] == "none" and not _is_loopback(args.host) and not auth["allow_insecure_no_auth"]:
        raise StartupError(
            "refusing to listen on {0} with AUTH method none: it would answer every client off this host 401. "
            "Set AUTH.method to local or keystone, listen on 127.0.0.1, or pass --allow-insecure-no-auth "
            "(AUTH.allow_insecure_no_auth: anyone who reaches the port could read and change every cluster and "
            "credential)".format(args.host))
    if bool(args.cert_file) != bool(args.key_file):
        raise StartupError("--cert-file and --key-file go together")


def configure_logging():
    """The request log as ``LOG`` says (a file that cannot be opened stops the start)."""
    from nailgun_host import request_log

    try:
        request_log.configure(settings["LOG"])
    except OSError as exc:
        raise StartupError("cannot write the log file {0}: {1}".format(settings["LOG"]["file"], exc))


def build_wsgi():
    from nailgun_host.app import build_wsgi
    from nailgun_host.auth import middleware
    from nailgun_host.auth.local import UsersFileError
    from nailgun_host.stats import MetricsDirError
    from nailgun_platform.secrets.keys import KeyRepositoryError

    from nailgun_host.extensions import SettingsError

    middleware.warn_at_start(settings["AUTH"])
    try:
        application = build_wsgi()
    except (SettingsError, MetricsDirError) as exc:
        raise StartupError(str(exc))
    except (UsersFileError, ValueError) as exc:
        raise StartupError("cannot set up authentication: {0}".format(exc))
    except KeyRepositoryError as exc:
        raise StartupError("cannot use the secrets' keys: {0}".format(exc))
    return application


def on_token_keys(url, doing, change):
    """``change(engine)`` on the database whose token keys and revocations the servers read (it must exist);
    ``doing`` says what, in the error."""
    if missing_sqlite_file(url):
        raise StartupError("no database at {0}: name the servers' database (--db-url or DATABASE_URL)".format(
            missing_sqlite_file(url)))
    engine = database_engine(url)
    try:
        return change(engine)
    except sqlalchemy.exc.DBAPIError as exc:
        raise StartupError("cannot {0} in the database {1} (run nailgun-syncdb if it is not migrated): {2}".format(
            doing, shown(url), errors.first_line(exc)))
    finally:
        engine.dispose()


def revoke_tokens(url, name, entry):
    """Refuse the tokens of ``name`` under the password of ``entry`` (users file) on every host of ``url``."""
    from nailgun_host.auth import local, token_keys

    on_token_keys(url, "revoke the tokens of {0} (the users file is unchanged)".format(name),
                  lambda engine: token_keys.revoke(engine, name, local.fingerprint(entry)))


def rotate_token_key(url, revoke):
    from nailgun_host.auth import token_keys

    primary, kept = on_token_keys(url, "rotate the token keys", lambda engine: token_keys.rotate(
        engine, settings["AUTH"]["token_ttl"], revoke=revoke))
    print("token key {0} signs new tokens in {1}; keys that still open tokens: {2}".format(
        primary, shown(url), ", ".join(map(str, kept))))
    return 0
