"""``fuel2 config env pin``: move an environment to another version of a data source (seed 004).

An environment stays on the version of each data source it is pinned to, whatever newer versions
are written. ``pin`` moves one pin. The server first lists the stored values documents the target
version's schema rejects: ``--dry-run`` only shows that report; a move that would leave rejected
documents is refused (409: the message and the documents on stderr, exit 1) unless ``--force``;
a move is one new revision of the environment. The ``Pins`` column shows an environment's pins
in ``config env show|list`` tables, and the server's list in ``-f json|yaml``.
"""
import json
from urllib.parse import quote

from cliff import columns
from cliff.show import ShowOne

from nailgun_platform.client import APIError, ClientMixin, entries
from nailgun_ext_configdb.cli.paths import ROOT

REPORT_COLUMNS = ("resource", "from", "to", "moved", "dry_run", "revision", "rejected")


def pin_label(pin):
    """``astute=2`` on the latest version, ``astute=1 (latest 2)`` behind it."""
    text = "{0}={1}".format(pin.get("resource"), pin.get("version"))
    latest = pin.get("latest_version")
    if latest is not None and latest != pin.get("version"):
        text += " (latest {0})".format(latest)
    return text


class Pins(columns.FormattableColumn):
    """An environment's ``pins``: one ``name=version`` a line in a table."""

    def human_readable(self):
        return "\n".join(pin_label(pin) for pin in entries(self._value))


def rejected_line(entry, resource=None):
    """``values of astute at /nodes/1/: <why the target schema rejects it>``."""
    document = entry.get("document")
    if not isinstance(document, str):
        document = "{0} of {1} at {2}".format(entry.get("kind", "values"), resource or entry.get("resource"),
                                              entry.get("level") or "/")
    return "{0}: {1}".format(document, entry.get("message"))


class Rejected(columns.FormattableColumn):
    """A report's ``rejected`` documents, one a line (``resource`` names their data source)."""

    def __init__(self, value, resource=None):
        super().__init__(value)
        self.resource = resource

    def human_readable(self):
        return "\n".join(rejected_line(entry, self.resource) for entry in entries(self._value))


def refused(exc):
    """The APIError to show for a 409: the server's message, then each rejected document on its own line.

    (The generic lines for a 409's ``errors`` name documents a session conflicts with, "changed in revision
    N"; a refused move's entries are documents the target schema rejects, with the reason.)"""
    try:
        body = json.loads(exc.body or "")
    except ValueError:
        return exc
    if not isinstance(body, dict) or not body.get("message"):
        return exc
    lines = ["{0} ({1})".format(body["message"], exc.status)]
    lines += ["  " + rejected_line(entry) for entry in entries(body.get("errors")) if "message" in entry]
    return APIError(exc.status, "\n".join(lines), exc.body)


class EnvironmentPin(ClientMixin, ShowOne):
    """Move an environment's pin of a data source to version N (--to) or the latest (--latest).

    The report lists the stored values documents the target version's schema rejects. --dry-run only
    reports; with rejected documents the move is refused (exit 1) unless --force. One new revision."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("env", type=int, help="environment id")
        parser.add_argument("resource", help="data source name, or the id of any of its versions")
        target = parser.add_mutually_exclusive_group(required=True)
        target.add_argument("--to", type=int, metavar="VERSION", help="the version to pin (not --version: cliff's)")
        target.add_argument("--latest", action="store_true", help="pin the latest version")
        parser.add_argument("--dry-run", action="store_true",
                            help="only report the documents the target version rejects; move nothing")
        parser.add_argument("--force", action="store_true", help="move even when stored documents are rejected")
        return parser

    def take_action(self, args):
        path = "{0}environments/{1}/pins/{2}".format(ROOT, args.env, quote(args.resource, safe="/"))
        body = {"version": "latest" if args.latest else args.to, "force": args.force, "dry_run": args.dry_run}
        try:
            report = self.client.put(path, body)
        except APIError as exc:
            if exc.status != 409:
                raise
            raise refused(exc) from None
        shown = [c for c in REPORT_COLUMNS if c in report or c == "rejected"]
        return shown, tuple(Rejected(report.get(c), report.get("resource")) if c == "rejected" else report.get(c)
                            for c in shown)
