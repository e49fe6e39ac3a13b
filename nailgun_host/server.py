"""Console scripts: ``nailgun-api`` serves the API, ``nailgun-syncdb`` migrates the database.

An operator's mistake (a settings file that cannot be read, a database URL without its
driver or a database out of reach, an address already in use) ends the command with one
line on stderr and exit status 1, not a traceback.
"""
import argparse
import logging
import sys

import alembic.util
import sqlalchemy as sa
import sqlalchemy.exc
import yaml

from nailgun_host import db
from nailgun_host.db import migration
from nailgun_host.settings import settings


class StartupError(Exception):
    """Why a console script cannot start; ``str()`` is the line it prints."""


def _common_arguments(parser):
    parser.add_argument("--db-url", help="SQLAlchemy URL (default: $NAILGUN_DB_URL or the embedded SQLite file)")
    parser.add_argument("--config", help="YAML settings file (default: $NAILGUN_CONFIG)")


def _load_settings(args):
    overrides = {"DATABASE_URL": args.db_url} if args.db_url else {}
    try:
        settings.reload(args.config, overrides)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise StartupError("cannot read the settings file: {0}".format(exc))
    return settings.database_url


def _shown(url):
    """The URL as logs may show it: without its password."""
    try:
        return sa.make_url(url).render_as_string()
    except sqlalchemy.exc.ArgumentError:
        return url


def _use_database(url, migrate):
    """Migrate (``prepare_database``) or only connect to ``url``; StartupError when it cannot be used."""
    try:
        db.make_engine(url).dispose()
    except ImportError as exc:
        raise StartupError("cannot use the database {0}: its driver is not installed ({1})".format(
            _shown(url), exc))
    except sqlalchemy.exc.ArgumentError as exc:
        raise StartupError("the database URL {0} is not valid: {1}".format(_shown(url), exc))
    except OSError as exc:  # the directory of a SQLite file cannot be made
        raise StartupError("cannot use the database {0}: {1}".format(_shown(url), exc))
    try:
        if migrate:
            prepare_database(url)
        else:
            db.configure(url)
    except (sqlalchemy.exc.DBAPIError, alembic.util.CommandError) as exc:
        raise StartupError("cannot use the database {0}: {1}".format(_shown(url), str(exc).splitlines()[0]))


def prepare_database(url):
    """Migrate the core and every extension, and make sure the admin network exists."""
    from nailgun_host.objects import network

    migration.syncdb(url)
    db.configure(url)
    try:
        network.admin_network()
        db.db.commit()
    finally:
        db.db.remove()


def _run(parser, main, argv):
    args = parser.parse_args(argv)
    try:
        return main(args)
    except StartupError as exc:
        parser.exit(1, "{0}: error: {1}\n".format(parser.prog, exc))


def syncdb(argv=None):
    parser = argparse.ArgumentParser(
        prog="nailgun-syncdb",
        description="Migrate the database (the core and every extension) and create the admin network. "
                    "Safe to re-run.")
    _common_arguments(parser)

    def main(args):
        logging.basicConfig(level=logging.INFO)
        _use_database(_load_settings(args), migrate=True)
        return 0

    return _run(parser, main, argv)


def serve(argv=None):
    parser = argparse.ArgumentParser(prog="nailgun-api", description="Serve the Nailgun API with web.py's server.")
    _common_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    parser.add_argument("--no-migrate", action="store_true",
                        help="do not migrate the database at start (the default migrates it)")

    def main(args):
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        url = _load_settings(args)
        _use_database(url, migrate=not args.no_migrate)
        from web.httpserver import LogMiddleware, WSGIServer

        from nailgun_host.app import build_wsgi

        # Not web.httpserver.runsimple: it also serves ./static/ from the working directory,
        # with directory listings and HTML errors. Only the API is served here.
        server = WSGIServer((args.host, args.port), LogMiddleware(build_wsgi()))
        try:
            server.prepare()
        except OSError as exc:
            raise StartupError("cannot listen on {0}:{1}: {2}".format(args.host, args.port, exc))
        print("Nailgun API on http://{0}:{1}/api/v1 ({2})".format(args.host, args.port, _shown(url)),
              file=sys.stderr, flush=True)
        try:
            server.serve()
        except KeyboardInterrupt:
            server.stop()
        return 0

    return _run(parser, main, argv)
