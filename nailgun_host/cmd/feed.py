"""``nailgun-feed``: serve the API for long-waiting readers (``nailgun_platform.feed_server``)."""
import argparse
import resource
import sys

from nailgun_host.cmd import startup
from nailgun_host.cmd.startup import StartupError
from nailgun_host.settings import settings
from nailgun_platform import feed_server

#: connections waiting to be accepted (the kernel caps it at net.core.somaxconn): a thousand readers
#: coming back at once after a write are not made to retry their SYN
BACKLOG = 4096
#: the soft limit of open files taken when the hard one is infinite (the kernel's default fs.nr_open)
OPEN_FILES_WITHOUT_LIMIT = 1024 * 1024


def raise_open_files_limit():
    """Every parked reader holds a socket: the soft limit of open files up to the hard one (a 1024 soft limit
    would refuse the 1,000th reader); the limit it is now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = OPEN_FILES_WITHOUT_LIMIT if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < wanted:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):  # above the kernel's fs.nr_open
            return soft
        return wanted
    return soft


def build_parser():
    parser = argparse.ArgumentParser(
        prog="nailgun-feed",
        description="Serve the Nailgun API for long-waiting readers (GET .../changes?wait=): parked waiters "
                    "hold no thread and no database connection. Put it behind the load balancer for the feed routes.")
    startup.common_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8011, help="port to listen on (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=8,
                        help="threads running requests (parked ones use none; default: %(default)s)")
    parser.add_argument("--trusted-proxy", metavar="ADDRESS",
                        help="the proxy in front (nginx: 127.0.0.1) whose X-Forwarded-For names the client, as "
                             "waitress-serve's --trusted-proxy with x-forwarded-for")
    parser.add_argument("--allow-insecure-no-auth", action="store_true",
                        help="AUTH.allow_insecure_no_auth: with AUTH method none, listen on a non-loopback address "
                             "and serve every client")
    return parser


def main(args):
    try:
        from aiohttp import web as aioweb
    except ImportError:
        raise StartupError("aiohttp is not installed: pip install 'fuel-nailgun-extensions[feed]'")
    url = startup.load_settings(args)
    startup.configure_logging()
    args.cert_file = args.key_file = None
    startup.check_exposure(args)
    startup.use_database(url, migrate=False)
    app = feed_server.make_app(startup.build_wsgi(), max(1, args.threads), int(settings["MAX_REQUEST_BODY"]),
                                  args.trusted_proxy)
    open_files = raise_open_files_limit()
    print("Nailgun feed server on http://{0}:{1}/api/v1 ({2}, authentication: {3}, open files: {4})".format(
        args.host, args.port, startup.shown(url), settings["AUTH"]["method"], open_files), file=sys.stderr,
        flush=True)
    from nailgun_host import stats
    from nailgun_host.app import settle

    settle()
    stats.start_flushing(settings["STATS"]["flush_seconds"])
    try:
        aioweb.run_app(app, host=args.host, port=args.port, print=None, access_log=None, backlog=BACKLOG)
    except OSError as exc:
        raise StartupError("cannot listen on {0}:{1}: {2}".format(args.host, args.port, exc))
    return 0


def serve(argv=None):
    return startup.run(build_parser(), main, argv)
