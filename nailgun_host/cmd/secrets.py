"""``nailgun-secrets``: the secrets' keys (status, rotation, re-encryption of every sealed value, and moving them
between a key repository on disk and the cloud's key manager), wherever ``SECRETS.key_manager`` keeps them."""
import argparse
import os

import sqlalchemy.exc

from nailgun_host import db, errors
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
        raise StartupError("cannot use the database {0}: {1}".format(startup.shown(url), errors.first_line(exc)))
    if late:
        raise StartupError("the database {0} is not migrated ({1} not at the head): run nailgun-syncdb".format(
            startup.shown(url), ", ".join(late)))


def build_parser():
    parser = argparse.ArgumentParser(
        prog="nailgun-secrets",
        description="Look after the Fernet keys that encrypt secrets at rest: in a key repository "
                    "(SECRETS.key_repository) or the cloud's key manager (SECRETS.key_manager: castellan). "
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
    moving = add(commands, "move-keys", help="copy the keys to the key manager (--to castellan) or to the key "
                                             "repository (--to local), proved on the database's canary")
    moving.add_argument("--to", required=True, choices=["castellan", "local"], help="where the keys go")
    moving.add_argument("--replace", action="store_true",
                        help="replace other keys the destination holds (they are lost)")
    moving.add_argument("--remove-source", action="store_true",
                        help="then delete the keys where they were (SECRETS.key_manager must already name the "
                             "destination, every server restarted with it)")
    return parser


def main(args):
    from nailgun_host.db import sealed
    from nailgun_host.extensions import get_all_extensions
    from nailgun_platform import secrets
    from nailgun_platform.secrets import keys

    url = startup.load_settings(args)
    print("database: {0}".format(startup.shown(url)), flush=True)
    try:
        path = None if secrets.managed() else secrets.repository_path()
        print("key manager: " + secrets.manager().describe if path is None else "key repository: " + path,
              flush=True)
        _migrated_database(url)
        get_all_extensions()  # their tables hold secrets too
        if args.command == "move-keys":
            return _move_keys(args)
        sealed.check_keys(db.get_engine())  # the keys are this database's (a first use creates them)
        if args.command == "rotate":
            primary = sealed.rotate_keys(db.get_engine())
            print("key {0} is the primary; now run: nailgun-secrets reencrypt".format(primary))
            return 0
        if args.command == "reencrypt":
            for column, count in sealed.reencrypt_all().items():
                print("{0}: {1} value(s) encrypted again".format(column, count))
            return 0
        stale = sum(sealed.reencrypt_all(dry_run=True).values())
        db.db.rollback()  # the count's transaction: a retirement in the key manager writes on a connection of its own
        if args.command == "status":
            for number, role in secrets.keyset().roles():
                print("  key {0}: {1}".format(number, role))
            print("{0} stored value(s) not yet under the primary key".format(stale))
            return 0
        if stale and not args.force:
            raise StartupError("{0} stored value(s) are not yet under the primary key: run nailgun-secrets "
                               "reencrypt first".format(stale))
        print("retired key(s): {0}".format(", ".join(map(str, sealed.retire_keys(db.get_engine()))) or "none"))
        return 0
    except (keys.KeyRepositoryError, keys.KeyManagerUnavailable, keys.UndecryptableValue) as exc:
        raise StartupError(str(exc))
    except sqlalchemy.exc.DBAPIError as exc:
        raise StartupError("cannot use the database {0}: {1}".format(startup.shown(url), errors.first_line(exc)))
    finally:
        db.db.remove()


def _move_keys(args):
    """Copy the keys in force to the other place, prove the copy on the database's canary, and (``--remove-source``)
    delete them where they were. Run again, a move does only what is left: a destination that holds every key
    of the source (and those of later rotations) is the move done, a source already removed is nothing to do."""
    from nailgun_host.db import managed_keys, sealed
    from nailgun_platform import secrets
    from nailgun_platform.secrets import keys

    engine = db.get_engine()
    path = secrets.repository_path()
    in_repository = os.path.isdir(path) and bool(os.listdir(path))
    repository = ("the key repository " + path, lambda: keys.load(path, create=False).keys, in_repository)
    manager = (secrets.manager().describe, lambda: managed_keys.fetched(engine), bool(managed_keys.refs()))
    (source_name, read_source, source_here), (where, read_destination, destination_here) = \
        (repository, manager) if args.to == "castellan" else (manager, repository)
    if args.remove_source and secrets.managed() != (args.to == "castellan"):
        raise StartupError("--remove-source deletes the keys the settings still use: set SECRETS.key_manager to {0} "
                           "and restart every server first".format(args.to))
    broken = None
    try:
        there = read_destination() if destination_here else {}
    except keys.KeyRepositoryError as exc:  # incomplete, or an object gone: only --replace goes on
        there, broken = None, exc
    if not source_here:
        if there and sealed.canary_opens(engine, keys.KeySet(where, there)):
            print("the keys are in {0}, and {1} holds none: nothing to do".format(where, source_name))
            return 0
        raise StartupError("{0} holds no key to move".format(source_name))
    source = read_source()
    if not sealed.canary_opens(engine, keys.KeySet(source_name, source)):
        raise StartupError("the keys to move do not open this database's canary: nothing was moved")
    in_force = secrets.managed() == (args.to == "castellan")  # the servers use the destination already
    done = bool(there) and (set(source.values()) <= set(there.values()) or
                            in_force and _serves_alone(engine, keys.KeySet(where, there)))
    lacking = there and set(there.values()) - set(source.values())  # keys a copy over them would lose
    if not done and (lacking or broken) and not args.replace:
        raise StartupError(
            "{0} already holds {1} for this database: nothing was moved. If the settings use them already, run "
            "nailgun-secrets reencrypt and this again; else --replace puts the keys of {2} in their place, and "
            "whatever only they encrypted is lost".format(
                where, "broken keys ({0})".format(broken) if broken else "keys the source lacks", source_name))
    if not done:
        if args.to == "castellan":
            managed_keys.put(engine, source)
        else:
            keys.write(path, source)
        there = read_destination()
        if there != source:
            raise StartupError("the keys read back from {0} are not those moved".format(where))
    if not sealed.canary_opens(engine, keys.KeySet(where, there)):
        raise StartupError("the keys of {0} do not open this database's canary".format(where))
    print("{0} key(s) {1} to {2}".format("already moved" if done else "moved", ", ".join(map(str, sorted(source))),
                                         where))
    if args.remove_source:
        if args.to == "castellan":
            keys.remove(path)
            print("removed the key repository " + path)
        else:
            managed_keys.remove(engine)
            print("removed the keys from the key manager")
    else:
        print("next: set SECRETS.key_manager: {0}, restart every server, then run nailgun-secrets move-keys --to {0} "
              "--remove-source".format(args.to))
    return 0


def _serves_alone(engine, keyset):
    """Whether ``keyset``, the keys the settings use already, open the canary and hold every stored value under
    their primary: the source's keys they lack (retired there since the move) seal nothing any more."""
    from nailgun_host.db import sealed

    if not sealed.canary_opens(engine, keyset):
        return False
    stale = sum(sealed.reencrypt_all(dry_run=True).values())
    db.db.rollback()  # the count's transaction (a removal of the key manager's rows writes on its own connection)
    return not stale


def secrets_keys(argv=None):
    """``nailgun-secrets``: the key repository of the secrets at rest (docs/operator/secrets.md)."""
    return startup.run(build_parser(), main, argv)
