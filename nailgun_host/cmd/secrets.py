"""``nailgun-secrets``: the secrets' key repository (status, rotation, re-encryption of every sealed value)."""
import argparse

import sqlalchemy.exc

from nailgun_host import db
from nailgun_host.cmd import startup
from nailgun_host.cmd.startup import StartupError
from nailgun_host.db import migration


def _migrated_database(url):
    """Use the database at ``url`` (``db.configure``) if it exists and is migrated; StartupError otherwise."""
    if startup.missing_sqlite_file(url):
        raise StartupError("no database at {0}: name the servers' database (--db-url, NAILGUN_DB_URL or "
                           "DATABASE_URL)".format(startup.missing_sqlite_file(url)))
    startup.use_database(url, migrate=False)
    try:
        late = migration.behind(migration.read_status(url))
    except sqlalchemy.exc.DBAPIError as exc:
        raise StartupError("cannot use the database {0}: {1}".format(startup.shown(url), str(exc).splitlines()[0]))
    if late:
        raise StartupError("the database {0} is not migrated ({1} not at the head): run nailgun-syncdb".format(
            startup.shown(url), ", ".join(late)))


def build_parser():
    parser = argparse.ArgumentParser(
        prog="nailgun-secrets",
        description="Look after the Fernet keys that encrypt secrets at rest (SECRETS.key_repository). "
                    "Rotation: rotate, then reencrypt, then retire.")
    startup.common_arguments(parser)
    commands = parser.add_subparsers(title="commands", dest="command", required=True)
    add = startup.subcommand
    add(commands, "status", help="the repository, its keys, and how many stored values are not yet under the "
                                 "primary key (or not yet sealed)")
    add(commands, "rotate", help="make the staged key the primary and stage a new one (running servers read what "
                                 "the new primary encrypts at once)")
    add(commands, "reencrypt", help="encrypt every stored secret again under the primary key, and seal what is "
                                    "secret today but stored in clear (an older version, a new pattern, a schema's "
                                    "new marker)")
    retiring = add(commands, "retire", help="remove the keys older than the primary, once nothing needs them")
    retiring.add_argument("--force", action="store_true",
                          help="retire even if stored values still need an old key (they become unreadable)")
    return parser


def main(args):
    from nailgun_host.db import sealed
    from nailgun_host.extensions import get_all_extensions
    from nailgun_platform import secrets
    from nailgun_platform.secrets import keys

    url = startup.load_settings(args)
    path = secrets.repository_path()
    print("database: {0}\nkey repository: {1}".format(startup.shown(url), path), flush=True)
    _migrated_database(url)
    try:
        get_all_extensions()  # their tables hold secrets too
        sealed.check_keys(db.get_engine())  # the keys are this database's (a first use creates them)
        if args.command == "rotate":
            print("key {0} is the primary; now run: nailgun-secrets reencrypt".format(keys.rotate(path)))
            return 0
        if args.command == "reencrypt":
            for column, count in sealed.reencrypt_all().items():
                print("{0}: {1} value(s) encrypted again".format(column, count))
            return 0
        stale = sum(sealed.reencrypt_all(dry_run=True).values())
        if args.command == "status":
            for number, role in secrets.keyset().roles():
                print("  key {0}: {1}".format(number, role))
            print("{0} stored value(s) not yet under the primary key".format(stale))
            return 0
        if stale and not args.force:
            raise StartupError("{0} stored value(s) are not yet under the primary key: run nailgun-secrets "
                               "reencrypt first".format(stale))
        print("retired key(s): {0}".format(", ".join(map(str, keys.retire(path))) or "none"))
        return 0
    except keys.KeyRepositoryError as exc:
        raise StartupError(str(exc))
    except sqlalchemy.exc.DBAPIError as exc:
        raise StartupError("cannot use the database {0}: {1}".format(startup.shown(url), str(exc).splitlines()[0]))
    finally:
        db.db.remove()


def secrets_keys(argv=None):
    """``nailgun-secrets``: the key repository of the secrets at rest (docs/operator/secrets.md)."""
    return startup.run(build_parser(), main, argv)
