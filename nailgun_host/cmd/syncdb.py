"""``nailgun-syncdb``: migrate the database (the core and every extension), or report its revisions."""
import argparse
import logging

import sqlalchemy.exc

from nailgun_host import db
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


def syncdb(argv=None):
    parser = argparse.ArgumentParser(
        prog="nailgun-syncdb",
        description="Migrate the database (the core and every extension) and create the admin network. "
                    "Safe to re-run; a second run at the same time waits for the first. Refuses a database "
                    "that newer code has migrated.")
    startup.common_arguments(parser)
    parser.add_argument("--status", action="store_true",
                        help="only report the revision of the core and of every extension and whether it is the "
                             "head, creating nothing; exit status 1 when one is not (or there is no database)")

    def main(args):
        # alembic's "Running upgrade" lines when migrating; a report is the lines printed below alone
        logging.basicConfig(level=logging.WARNING if args.status else logging.INFO, format="%(message)s")
        url = startup.load_settings(args)
        if args.status and startup.missing_sqlite_file(url):  # connecting would create it (and its directories)
            raise StartupError("no database at {0}".format(startup.missing_sqlite_file(url)))
        print("database: {0}".format(startup.shown(url)), flush=True)
        startup.use_database(url, migrate=not args.status, refuse_newer=False)
        try:
            state = migration.read_status(url)
        except sqlalchemy.exc.DBAPIError as exc:
            raise StartupError("cannot use the database {0}: {1}".format(startup.shown(url), str(exc).splitlines()[0]))
        finally:
            db.db.remove()
        for line in _revision_lines(state):
            print(line)
        return 1 if migration.behind(state) else 0

    return startup.run(parser, main, argv)
