"""Console scripts: ``nailgun-api`` serves the API, ``nailgun-syncdb`` migrates the database,
``nailgun-users`` keeps the users file of local authentication.

An operator's mistake (a settings file that cannot be read, a database URL without its
driver or a database out of reach, an address already in use) ends the command with one
line on stderr and exit status 1, not a traceback.
"""
import argparse
import getpass
import logging
import os
import socket
import sys

import alembic.util
import sqlalchemy as sa
import sqlalchemy.exc
import yaml

from nailgun_host import db, notify
from nailgun_host.db import migration
from nailgun_host.settings import DEFAULT_FILE, settings


class StartupError(Exception):
    """Why a console script cannot start; ``str()`` is the line it prints."""


#: where the settings and the database come from, as --help says (nailgun_host.settings reads them so)
CONFIG_HELP = ("YAML settings file (default: $NAILGUN_CONFIG, else {0} when it exists; "
               "NAILGUN_CONFIG= reads no file)".format(DEFAULT_FILE.replace("%", "%%")))
DB_URL_HELP = ("SQLAlchemy URL (default: $NAILGUN_DB_URL, else DATABASE_URL of the settings file, "
               "else the embedded SQLite file)")


def _common_arguments(parser):
    parser.add_argument("--db-url", help=DB_URL_HELP)
    parser.add_argument("--config", help=CONFIG_HELP)


def _load_settings(args):
    overrides = {"DATABASE_URL": args.db_url} if args.db_url else {}
    if getattr(args, "allow_insecure_no_auth", False):  # nailgun-api's and nailgun-feed's flag
        overrides["AUTH"] = {"allow_insecure_no_auth": True}
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


def _engine(url):
    """An engine of ``url`` (nothing connected yet); StartupError when it cannot be made."""
    try:
        return db.make_engine(url)
    except ImportError as exc:
        raise StartupError("cannot use the database {0}: its driver is not installed ({1})".format(
            _shown(url), exc))
    except sqlalchemy.exc.ArgumentError as exc:
        raise StartupError("the database URL {0} is not valid: {1}".format(_shown(url), exc))
    except OSError as exc:  # the directory of a SQLite file cannot be made
        raise StartupError("cannot use the database {0}: {1}".format(_shown(url), exc))


def _use_database(url, migrate, refuse_newer=True):
    """Migrate (``prepare_database``) or only connect to ``url``; StartupError when it cannot be used,
    or (``refuse_newer``) when newer code has migrated it: this code would misread its tables."""
    _engine(url).dispose()
    try:
        if migrate:
            prepare_database(url)
        else:
            db.configure(url)
            if refuse_newer:
                migration.refuse_newer(migration.read_status(url))
    except (sqlalchemy.exc.DBAPIError, alembic.util.CommandError) as exc:
        raise StartupError("cannot use the database {0}: {1}".format(_shown(url), str(exc).splitlines()[0]))


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


def _missing_sqlite_file(url):
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


def _run(parser, main, argv):
    args = parser.parse_args(argv)
    try:
        return main(args)
    except StartupError as exc:
        parser.exit(1, "{0}: error: {1}\n".format(parser.prog, exc))


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
    _common_arguments(parser)
    parser.add_argument("--status", action="store_true",
                        help="only report the revision of the core and of every extension and whether it is the "
                             "head, creating nothing; exit status 1 when one is not (or there is no database)")

    def main(args):
        # alembic's "Running upgrade" lines when migrating; a report is the lines printed below alone
        logging.basicConfig(level=logging.WARNING if args.status else logging.INFO, format="%(message)s")
        url = _load_settings(args)
        if args.status and _missing_sqlite_file(url):  # connecting would create it (and its directories)
            raise StartupError("no database at {0}".format(_missing_sqlite_file(url)))
        print("database: {0}".format(_shown(url)), flush=True)
        _use_database(url, migrate=not args.status, refuse_newer=False)
        try:
            state = migration.read_status(url)
        except sqlalchemy.exc.DBAPIError as exc:
            raise StartupError("cannot use the database {0}: {1}".format(_shown(url), str(exc).splitlines()[0]))
        finally:
            db.db.remove()
        for line in _revision_lines(state):
            print(line)
        return 1 if migration.behind(state) else 0

    return _run(parser, main, argv)


def _is_loopback(host):
    """Whether every address ``host`` names is a loopback one (an unknown name is not)."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except socket.gaierror:
        return False
    from nailgun_host.auth import middleware

    return bool(addresses) and all(middleware.is_loopback(address.split("%")[0]) for address in addresses)


def _check_exposure(args):
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


def _configure_logging():
    """The request log as ``LOG`` says (a file that cannot be opened stops the start)."""
    from nailgun_host import request_log

    try:
        request_log.configure(settings["LOG"])
    except OSError as exc:
        raise StartupError("cannot write the log file {0}: {1}".format(settings["LOG"]["file"], exc))


def _build_wsgi():
    from nailgun_host.app import build_wsgi
    from nailgun_host.auth import middleware
    from nailgun_host.auth.local import UsersFileError
    from nailgun_host.secrets.keys import KeyRepositoryError
    from nailgun_host.stats import MetricsDirError

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


def _tls_adapter(args):
    from cheroot.ssl.builtin import BuiltinSSLAdapter

    try:
        return BuiltinSSLAdapter(args.cert_file, args.key_file)
    except (OSError, ValueError) as exc:
        raise StartupError("cannot use the certificate {0} and key {1}: {2}".format(
            args.cert_file, args.key_file, exc))


def serve(argv=None):
    parser = argparse.ArgumentParser(prog="nailgun-api", description="Serve the Nailgun API with web.py's server.")
    _common_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default: %(default)s)")
    parser.add_argument("--no-migrate", action="store_true",
                        help="do not migrate the database at start (the default migrates it)")
    parser.add_argument("--cert-file", help="serve HTTPS with this PEM certificate (chain)")
    parser.add_argument("--key-file", help="the PEM private key of --cert-file")
    parser.add_argument("--allow-insecure-no-auth", action="store_true",
                        help="AUTH.allow_insecure_no_auth: with AUTH method none, listen on a non-loopback address "
                             "and serve every client (anyone who reaches the port may read and change everything)")

    def main(args):
        url = _load_settings(args)
        _configure_logging()
        _check_exposure(args)
        _use_database(url, migrate=not args.no_migrate)
        from nailgun_host import web_server

        # Not web.httpserver.runsimple: it also serves ./static/ from the working directory,
        # with directory listings and HTML errors. Only the API is served here.
        server = web_server.make_server((args.host, args.port), _build_wsgi())
        scheme = "http"
        if args.cert_file:
            server.ssl_adapter = _tls_adapter(args)
            scheme = "https"
        try:
            server.prepare()
        except OSError as exc:
            raise StartupError("cannot listen on {0}:{1}: {2}".format(args.host, args.port, exc))
        print("Nailgun API on {0}://{1}:{2}/api/v1 ({3}, authentication: {4})".format(
            scheme, args.host, args.port, _shown(url), settings["AUTH"]["method"]), file=sys.stderr, flush=True)
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

    return _run(parser, main, argv)


def _read_password(args):
    if not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = getpass.getpass("Password for {0}: ".format(args.name))
        if getpass.getpass("Again: ") != password:
            raise StartupError("the passwords differ")
    if not password:
        raise StartupError("the password is empty")
    return password


def users(argv=None):
    """``nailgun-users``: add, change, remove and list the users of local authentication."""
    from nailgun_host import policy
    from nailgun_host.auth import local

    known_roles = policy.known_roles()
    parser = argparse.ArgumentParser(
        prog="nailgun-users",
        description="Keep the users file of AUTH method local (AUTH.users_file): bcrypt password hashes and roles. "
                    "A running server sees changes at its next request. Deleting a user or changing a password "
                    "also revokes the user's tokens in the database, for every host.")
    _common_arguments(parser)
    parser.add_argument("--users-file", help="the users file (default: AUTH.users_file of the settings)")
    commands = parser.add_subparsers(dest="command", required=True)
    setting = commands.add_parser("set", help="add a user or change its password and roles; the password is read "
                                              "from stdin when it is not a terminal, else prompted")
    setting.add_argument("name")
    setting.add_argument("--role", action="append", required=True,
                         help="a role ({0}); repeat for several".format(", ".join(sorted(known_roles))))
    setting.add_argument("--keep-password", action="store_true", help="change only the roles of an existing user")
    deleting = commands.add_parser("delete", help="remove a user and revoke their tokens on every host")
    deleting.add_argument("name")
    commands.add_parser("list", help="the users and their roles")
    rotating = commands.add_parser(
        "rotate-token-key", help="sign new tokens with a new key; tokens signed before stay valid until they expire")
    rotating.add_argument("--revoke", action="store_true", help="refuse every token issued so far, at once")

    def main(args):
        url = _load_settings(args)
        path = args.users_file or settings["AUTH"]["users_file"]
        if args.command == "rotate-token-key":
            return _rotate_token_key(url, args.revoke)
        try:
            content = local.load(path) if os.path.exists(path) else local.new_users_file()
        except local.UsersFileError as exc:
            raise StartupError(str(exc))
        if args.command == "list":
            for name, entry in sorted(content["users"].items()):
                print("{0}: {1}".format(name, ", ".join(entry.get("roles", []))))
            return 0
        if args.command == "delete":
            if args.name not in content["users"]:
                raise StartupError("no user {0} in {1}".format(args.name, path))
            _revoke_tokens(url, args.name, content["users"].pop(args.name))
        else:
            if not args.name or ":" in args.name or args.name != args.name.strip():
                raise StartupError("a user name must not be empty, contain ':' (HTTP Basic could not carry it) "
                                   "or start or end with a space")
            unknown = sorted(set(args.role) - known_roles)
            if unknown:
                print("nailgun-users: warning: no rule in code names the role(s) {0} (known: {1}); only a policy "
                      "file can give them rights".format(", ".join(unknown), ", ".join(sorted(known_roles))),
                      file=sys.stderr)
            entry = content["users"].get(args.name)
            if args.keep_password and entry is None:
                raise StartupError("no user {0} in {1}: give a password".format(args.name, path))
            try:
                password = entry["password"] if args.keep_password else local.hash_password(_read_password(args))
            except ValueError as exc:
                raise StartupError(str(exc))
            if entry is not None and password != entry["password"]:
                _revoke_tokens(url, args.name, entry)
            content["users"][args.name] = {"password": password, "roles": sorted(set(args.role))}
        content.pop("token_secret", None)  # written by earlier versions: tokens are signed with the database's keys
        try:
            local.save(path, content)
        except OSError as exc:
            raise StartupError("cannot write {0}: {1}".format(path, exc))
        return 0

    return _run(parser, main, argv)


def _on_token_keys(url, doing, change):
    """``change(engine)`` on the database whose token keys and revocations the servers read (it must exist);
    ``doing`` says what, in the error."""
    if _missing_sqlite_file(url):
        raise StartupError("no database at {0}: name the servers' database (--db-url or DATABASE_URL)".format(
            _missing_sqlite_file(url)))
    engine = _engine(url)
    try:
        return change(engine)
    except sqlalchemy.exc.DBAPIError as exc:
        raise StartupError("cannot {0} in the database {1} (run nailgun-syncdb if it is not migrated): {2}".format(
            doing, _shown(url), str(exc).splitlines()[0]))
    finally:
        engine.dispose()


def _revoke_tokens(url, name, entry):
    """Refuse the tokens of ``name`` under the password of ``entry`` (users file) on every host of ``url``."""
    from nailgun_host.auth import local, token_keys

    _on_token_keys(url, "revoke the tokens of {0} (the users file is unchanged)".format(name),
                   lambda engine: token_keys.revoke(engine, name, local.fingerprint(entry)))


def _rotate_token_key(url, revoke):
    from nailgun_host.auth import token_keys

    primary, kept = _on_token_keys(url, "rotate the token keys", lambda engine: token_keys.rotate(
        engine, settings["AUTH"]["token_ttl"], revoke=revoke))
    print("token key {0} signs new tokens in {1}; keys that still open tokens: {2}".format(
        primary, _shown(url), ", ".join(map(str, kept))))
    return 0


def _migrated_database(url):
    """Use the database at ``url`` (``db.configure``) if it exists and is migrated; StartupError otherwise."""
    if _missing_sqlite_file(url):
        raise StartupError("no database at {0}: name the servers' database (--db-url, NAILGUN_DB_URL or "
                           "DATABASE_URL)".format(_missing_sqlite_file(url)))
    _use_database(url, migrate=False)
    try:
        late = migration.behind(migration.read_status(url))
    except sqlalchemy.exc.DBAPIError as exc:
        raise StartupError("cannot use the database {0}: {1}".format(_shown(url), str(exc).splitlines()[0]))
    if late:
        raise StartupError("the database {0} is not migrated ({1} not at the head): run nailgun-syncdb".format(
            _shown(url), ", ".join(late)))


def secrets_keys(argv=None):
    """``nailgun-secrets``: the key repository of the secrets at rest (README "Secrets")."""
    from nailgun_host import secrets
    from nailgun_host.db import sealed
    from nailgun_host.extensions import get_all_extensions
    from nailgun_host.secrets import keys

    parser = argparse.ArgumentParser(
        prog="nailgun-secrets",
        description="Look after the Fernet keys that encrypt secrets at rest (SECRETS.key_repository). "
                    "Rotation: rotate, then reencrypt, then retire.")
    _common_arguments(parser)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("status", help="the repository, its keys, and how many stored values are not yet under "
                                       "the primary key (or not yet sealed)")
    commands.add_parser("rotate", help="make the staged key the primary and stage a new one (running servers "
                                       "read what the new primary encrypts at once)")
    commands.add_parser("reencrypt", help="encrypt every stored secret again under the primary key, and seal "
                                          "what is secret today but stored in clear (an older version, a new "
                                          "pattern, a schema's new marker)")
    retiring = commands.add_parser("retire", help="remove the keys older than the primary, once nothing needs them")
    retiring.add_argument("--force", action="store_true",
                          help="retire even if stored values still need an old key (they become unreadable)")

    def main(args):
        url = _load_settings(args)
        path = secrets.repository_path()
        print("database: {0}\nkey repository: {1}".format(_shown(url), path), flush=True)
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
            raise StartupError("cannot use the database {0}: {1}".format(_shown(url), str(exc).splitlines()[0]))
        finally:
            db.db.remove()

    return _run(parser, main, argv)
