"""Console scripts: ``nailgun-api`` serves the API, ``nailgun-syncdb`` migrates the database."""
import argparse
import logging
import sys

from nailgun_host import db
from nailgun_host.db import migration
from nailgun_host.settings import settings


def _common_arguments(parser):
    parser.add_argument("--db-url", help="SQLAlchemy URL (default: $NAILGUN_DB_URL or the embedded SQLite file)")
    parser.add_argument("--config", help="YAML settings file (default: $NAILGUN_CONFIG)")


def _load_settings(args):
    overrides = {"DATABASE_URL": args.db_url} if args.db_url else {}
    settings.reload(args.config, overrides)
    return settings.database_url


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


def syncdb(argv=None):
    parser = argparse.ArgumentParser(prog="nailgun-syncdb", description=__doc__)
    _common_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO)
    prepare_database(_load_settings(args))
    return 0


def serve(argv=None):
    parser = argparse.ArgumentParser(prog="nailgun-api", description="Serve the Nailgun API with web.py's server.")
    _common_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--no-migrate", action="store_true",
                        help="do not migrate the database at start (the default migrates it)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    url = _load_settings(args)
    if args.no_migrate:
        db.configure(url)
    else:
        prepare_database(url)
    from web.httpserver import LogMiddleware, WSGIServer

    from nailgun_host.app import build_wsgi

    # Not web.httpserver.runsimple: it also serves ./static/ from the working directory,
    # with directory listings and HTML errors. Only the API is served here.
    server = WSGIServer((args.host, args.port), LogMiddleware(build_wsgi()))
    print("Nailgun API on http://{0}:{1}/api/v1 ({2})".format(
        args.host, args.port, db.get_engine().url.render_as_string()), file=sys.stderr, flush=True)
    try:
        server.start()
    except KeyboardInterrupt:
        server.stop()
    return 0
