"""Configuration sessions from the command line (seeds 000 and 001): ``fuel2 env session ...``.

``open`` stages nothing by itself: a command given ``--session ID`` (or ``$FUEL_SESSION``) sends
``X-Configuration-Session`` and its writes are staged in that session, its reads show the staged
state. ``diff`` shows what is staged, ``deploy`` writes it all at once (409 names the documents
another change wrote since the session opened), ``abandon`` forgets it. The commands here act on
a cluster (``--env``: the cluster id); ConfigDB's ``config session ...`` subclass them for its
environments. ``env deployments`` lists the deployed sessions with their diffs.
"""
import os
from urllib.parse import quote

from cliff import lister, show

from nailgun_platform.client.base import ClientMixin
from nailgun_platform.client.documents import Conflicts, Document, Documents, JSONValue, Lines, entries, label

HEADER = "X-Configuration-Session"
STATE_HEADER = "X-Configuration-Session-State"
#: the session the commands use when ``--session`` is not given
ENV_VARIABLE = "FUEL_SESSION"

SESSION_COLUMNS = ("id", "environment_id", "environment_type", "user_id", "state", "version", "revision",
                   "revisions", "created", "updated", "expires", "deployed", "documents")
LIST_COLUMNS = ("id", "user_id", "state", "version", "created", "expires", "documents")
DIFF_COLUMNS = ("document", "op", "path", "from", "value")
DEPLOYMENT_COLUMNS = ("id", "revision", "revisions", "user_id", "started", "finished", "state", "documents",
                      "sections")


class Revisions(JSONValue):
    """A deployment's ``revisions``: each counter it moved, ``<counter> <id>: <revision>``, one a line
    (``configdb_environment 1: 4`` is the revision the ConfigDB change feed shows)."""

    def human_readable(self):
        moved = self._value if isinstance(self._value, dict) else {}
        return "\n".join("{0} {1}: {2}".format(counter, landed.get("id"), landed.get("revision"))
                         if isinstance(landed, dict) else "{0}: {1}".format(counter, landed)
                         for counter, landed in sorted(moved.items()))


FORMATTED = {"documents": Documents, "conflicts": Conflicts, "sections": Lines, "revisions": Revisions}


class SessionError(Exception):
    """A client-side problem with the session arguments; ``str()`` is the message shown."""


def default_session():
    return os.environ.get(ENV_VARIABLE) or None


def add_session_option(parser, what="writes are staged in it and reads show its staged state"):
    parser.add_argument("--session", metavar="ID", default=default_session(),
                        help="configuration session (default: ${0}); {1}".format(ENV_VARIABLE, what))


def headers(session_id):
    return {HEADER: session_id} if session_id else {}


def state_note(session_id, answer_headers):
    """What to tell on stderr when a read through a session that is no longer open shows the current state."""
    state = answer_headers.get(STATE_HEADER)
    if session_id and state and state != "open":
        return "Session {0} is {1}: this is the current state, not staged changes.\n".format(session_id, state)
    return None


class SessionOption:
    """``--session`` on a command that writes or reads documents (``fuel2 config set``, ``env model edit``...)."""

    session_help = "writes are staged in it and reads show its staged state"

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        add_session_option(parser, self.session_help)
        return parser

    def session_headers(self, args):
        return headers(args.session)

    def note_state(self, args, answer_headers):
        note = state_note(args.session, answer_headers)
        if note:
            self.app.stderr.write(note)


def _cell(column, value):
    formatter = FORMATTED.get(column)
    return formatter(value) if formatter else value


def session_row(session, columns=SESSION_COLUMNS):
    columns = tuple(columns) + (("conflicts",) if session.get("conflicts") else ())
    return columns, tuple(_cell(column, session.get(column)) for column in columns)


class EnvironmentCommand(ClientMixin):
    """``--env``: the environment whose sessions these are; its URL prefix on the API."""

    env_help = "ID of the environment (cluster)"
    env_positional = False

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        if self.env_positional:
            parser.add_argument("env", type=int, help=self.env_help)
        else:
            parser.add_argument("-e", "--env", type=int, required=True, help=self.env_help)
        return parser

    def prefix(self, env):
        return "clusters/{0}".format(env)


class SessionCommand(EnvironmentCommand):
    """A command on one session: its id as the argument, or ``$FUEL_SESSION``."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("session", nargs="?", default=default_session(),
                            help="the session id (default: ${0})".format(ENV_VARIABLE))
        return parser

    def session_path(self, args, suffix=""):
        if not args.session:
            raise SessionError("Give the session id (or set {0})".format(ENV_VARIABLE))
        return "{0}/sessions/{1}{2}".format(self.prefix(args.env), quote(args.session, safe=""), suffix)


class SessionOpen(EnvironmentCommand, show.ShowOne):
    """Open a configuration session on an environment (``-f value -c id`` prints just its id)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--ttl", type=int, metavar="SECONDS",
                            help="expire after this long without a staged write (default: the server's)")
        return parser

    def take_action(self, args):
        body = None if args.ttl is None else {"ttl": args.ttl}
        return session_row(self.client.post(self.prefix(args.env) + "/configure", body))


class SessionList(EnvironmentCommand, lister.Lister):
    """List the open configuration sessions of an environment (an admin sees everyone's)."""

    def take_action(self, args):
        sessions = self.client.get(self.prefix(args.env) + "/sessions")["sessions"]
        return LIST_COLUMNS, [session_row(s, LIST_COLUMNS)[1] for s in sessions]


class SessionShow(SessionCommand, show.ShowOne):
    """Show a configuration session and the documents it stages."""

    def take_action(self, args):
        return session_row(self.client.get(self.session_path(args)))


class SessionDiff(SessionCommand, lister.Lister):
    """Show what a session stages: an RFC 6902 operation per row, current -> staged, for each document."""

    def take_action(self, args):
        rows = []
        for entry in entries(self.client.get(self.session_path(args, "/diff")).get("documents")):
            for operation in entries(entry.get("patch")):
                rows.append((Document(entry.get("document")), operation.get("op"), operation.get("path"),
                             operation.get("from"), JSONValue(operation.get("value"))))
        return DIFF_COLUMNS, rows


class SessionDeploy(SessionCommand, show.ShowOne):
    """Deploy a session: all its staged documents at once, or nothing (409 names what changed meanwhile)."""

    def take_action(self, args):
        return session_row(self.client.post(self.session_path(args, "/deploy")))


class SessionAbandon(SessionCommand, show.ShowOne):
    """Abandon a session: its staged changes are dropped."""

    def take_action(self, args):
        return session_row(self.client.delete(self.session_path(args)))


class Diffs(JSONValue):
    """A deployment's ``diff``: per document, its operations, one a line."""

    def human_readable(self):
        lines = []
        for entry in entries(self._value):
            lines.append(label(entry.get("document")) + ":")
            for op in entries(entry.get("patch")):
                value = "" if "value" not in op else " " + JSONValue(op["value"]).human_readable()
                source = " from {0}".format(op["from"]) if op.get("from") else ""
                lines.append("  {0} {1}{2}{3}".format(op.get("op"), op.get("path"), source, value))
        return "\n".join(lines)


class Deployments(EnvironmentCommand, lister.Lister):
    """List the deployed sessions of an environment, newest first: who, when, which documents."""

    env_positional = True

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("--limit", type=int, help="at most this many (default: the server's, 50)")
        parser.add_argument("--before", type=int, metavar="REVISION", help="only those below this revision")
        parser.add_argument("--diff", action="store_true", help="add each deployment's diff (secrets masked)")
        return parser

    def take_action(self, args):
        params = {name: str(value) for name, value in (("limit", args.limit), ("before", args.before))
                  if value is not None}
        deployments = self.client.get(self.prefix(args.env) + "/deployments", params=params)["deployments"]
        columns = DEPLOYMENT_COLUMNS + (("diff",) if args.diff else ())
        return columns, [tuple(Diffs(d.get(c)) if c == "diff" else _cell(c, d.get(c)) for c in columns)
                         for d in deployments]
