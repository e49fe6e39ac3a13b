"""``nailgun-users``: add, change, remove and list the users of local authentication."""
import argparse
import getpass
import os
import sys

from nailgun_host.cmd import startup
from nailgun_host.cmd.startup import StartupError
from nailgun_host.settings import settings


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


def build_parser():
    from nailgun_host import policy

    known_roles = policy.known_roles()
    parser = argparse.ArgumentParser(
        prog="nailgun-users",
        description="Keep the users file of AUTH method local (AUTH.users_file): bcrypt password hashes and roles. "
                    "A running server sees changes at its next request. Deleting a user or changing a password "
                    "also revokes the user's tokens in the database, for every host.")
    startup.common_arguments(parser)
    parser.add_argument("--users-file", help="the users file (default: AUTH.users_file of the settings)")
    commands = parser.add_subparsers(title="commands", dest="command", required=True)
    add = startup.subcommand
    setting = add(commands, "set", help="add a user or change its password and roles; the password is read from "
                                        "stdin when it is not a terminal, else prompted")
    setting.add_argument("name")
    setting.add_argument("--role", action="append", required=True,
                         help="a role ({0}); repeat for several".format(", ".join(sorted(known_roles))))
    setting.add_argument("--keep-password", action="store_true", help="change only the roles of an existing user")
    deleting = add(commands, "delete", help="remove a user and revoke their tokens on every host")
    deleting.add_argument("name")
    add(commands, "list", help="the users and their roles")
    rotating = add(commands, "rotate-token-key", help="sign new tokens with a new key; tokens signed before stay "
                                                      "valid until they expire")
    rotating.add_argument("--revoke", action="store_true", help="refuse every token issued so far, at once")
    return parser


def main(args):
    from nailgun_host import policy
    from nailgun_host.auth import local

    url = startup.load_settings(args)
    path = args.users_file or settings["AUTH"]["users_file"]
    if args.command == "rotate-token-key":
        return startup.rotate_token_key(url, args.revoke)
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
        startup.revoke_tokens(url, args.name, content["users"].pop(args.name))
    else:
        if not args.name or ":" in args.name or args.name != args.name.strip():
            raise StartupError("a user name must not be empty, contain ':' (HTTP Basic could not carry it) "
                               "or start or end with a space")
        known_roles = policy.known_roles()
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
            startup.revoke_tokens(url, args.name, entry)
        content["users"][args.name] = {"password": password, "roles": sorted(set(args.role))}
    content.pop("token_secret", None)  # written by earlier versions: tokens are signed with the database's keys
    try:
        local.save(path, content)
    except OSError as exc:
        raise StartupError("cannot write {0}: {1}".format(path, exc))
    return 0


def users(argv=None):
    """``nailgun-users``: add, change, remove and list the users of local authentication."""
    return startup.run(build_parser(), main, argv)
