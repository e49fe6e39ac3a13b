"""``nailgun-api``: serve the API with web.py's server (cheroot; ``nailgun_host.web_server``)."""
import argparse
import sys

from nailgun_host.cmd import startup
from nailgun_host.cmd.startup import StartupError
from nailgun_host.settings import settings
from nailgun_platform import notify


def _tls_adapter(args):
    from cheroot.ssl.builtin import BuiltinSSLAdapter

    try:
        return BuiltinSSLAdapter(args.cert_file, args.key_file)
    except (OSError, ValueError) as exc:
        raise StartupError("cannot use the certificate {0} and key {1}: {2}".format(
            args.cert_file, args.key_file, exc))


def build_parser():
    parser = argparse.ArgumentParser(prog="nailgun-api", description="Serve the Nailgun API with web.py's server.")
    startup.common_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    parser.add_argument("--no-migrate", action="store_true",
                        help="do not migrate the database at start (the default migrates it)")
    parser.add_argument("--cert-file", help="serve HTTPS with this PEM certificate (chain)")
    parser.add_argument("--key-file", help="the PEM private key of --cert-file")
    parser.add_argument("--allow-insecure-no-auth", action="store_true",
                        help="AUTH.allow_insecure_no_auth: with AUTH method none, listen on a non-loopback address "
                             "and serve every client (anyone who reaches the port may read and change everything)")
    return parser


def main(args):
    url = startup.load_settings(args)
    startup.configure_logging()
    startup.check_exposure(args)
    startup.use_database(url, migrate=not args.no_migrate)
    from nailgun_host import web_server

    # Not web.httpserver.runsimple: it also serves ./static/ from the working directory,
    # with directory listings and HTML errors. Only the API is served here.
    server = web_server.make_server((args.host, args.port), startup.build_wsgi())
    scheme = "http"
    if args.cert_file:
        server.ssl_adapter = _tls_adapter(args)
        scheme = "https"
    try:
        server.prepare()
    except OSError as exc:
        raise StartupError("cannot listen on {0}:{1}: {2}".format(args.host, args.port, exc))
    print("Nailgun API on {0}://{1}:{2}/api/v1 ({3}, authentication: {4})".format(
        scheme, args.host, args.port, startup.shown(url), settings["AUTH"]["method"]), file=sys.stderr, flush=True)
    from nailgun_host import stats
    from nailgun_host.app import settle

    settle()
    stats.start_flushing(settings["STATS"]["flush_seconds"])
    try:
        server.serve()
    except KeyboardInterrupt:
        notify.end_waits()  # a feed request waiting in a thread would hold the stop up to its wait
        server.stop()
    return 0


def serve(argv=None):
    return startup.run(build_parser(), main, argv)
