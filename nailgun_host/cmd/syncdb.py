"""``nailgun-syncdb``: migrate the database (the core and every extension), or report its revisions."""
import argparse
import logging

import sqlalchemy.exc

from nailgun_host import db, errors
from nailgun_host.cmd import startup
from nailgun_host.cmd.startup import StartupError
from nailgun_host.db import migration


def _revision_lines(state):
    """One line per part of a migration status: its revision and whether it is the head."""
    for name, part in state.items():
        current = ", ".join(part["current"]) or "no revision"
        if part["unknown"]:
            verdict = "unknown to this code: the database is newer"
        elif part["current"] == part["head"]:
            verdict = "head"
        else:
            verdict = "not the head {0}: run nailgun-syncdb".format(", ".join(part["head"]))
        yield "{0}: {1} ({2})".format(name, current, verdict)


def build_parser():
    parser = argparse.ArgumentParser(
        prog="nailgun-syncdb",
        description="Migrate the database (the core and every extension) and create the admin network. "
                    "Safe to re-run; a second run at the same time waits for the first. Refuses a database "
                    "that newer code has migrated.")
    startup.common_arguments(parser)
    parser.add_argument("--status", action="store_true",
                        help="only report the revision of the core and of every extension and whether it is the "
                             "head, creating nothing; exit status 1 when one is not (or there is no database)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="also log alembic's lines (each migration it runs, its context) on stderr")
    return parser


def main(args):
    # Quiet for the package's upgrade scriptlets: stderr has a line only when something is wrong, the run waits
    # for another, or a migration ran (one line naming each part's move); alembic's chatter only with -v.
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("alembic").setLevel(logging.INFO if args.verbose else logging.WARNING)
    url = startup.load_settings(args)
    if args.status and startup.missing_sqlite_file(url):  # connecting would create it (and its directories)
        raise StartupError("no database at {0}".format(startup.missing_sqlite_file(url)))
    print("database: {0}".format(startup.shown(url)), flush=True)
    startup.use_database(url, migrate=not args.status, refuse_newer=False)
    try:
        state = migration.read_status(url)
    except sqlalchemy.exc.DBAPIError as exc:
        raise StartupError("cannot use the database {0}: {1}".format(startup.shown(url), errors.first_line(exc)))
    finally:
        db.db.remove()
    for line in _revision_lines(state):
        print(line)
    return 1 if migration.behind(state) else 0


def syncdb(argv=None):
    return startup.run(build_parser(), main, argv)
