"""``fuel2 config changes --env E --since N [--follow]``: what changed in a ConfigDB environment.

Without ``--follow`` one request lists the changes after revision N (a table, or ``-f json|yaml|
value``). With ``--follow`` the command long-polls the feed (``wait``) and prints one line per
change as it arrives (a JSON object per line with ``-f json``), continuing after the last revision
it saw, until Ctrl-C; a server out of reach (refused, silent, 5xx) is retried with backoff, one line each saying
why and when, while a 4xx or a TLS failure (which only a changed setting cures) ends the command.
"""
import json
import os
import signal
import threading
import time

from cliff import lister

from nailgun_platform.client import APIError, ClientMixin, passes
from nailgun_ext_configdb.cli.paths import ROOT

COLUMNS = ("revision", "resource", "resource_name", "level", "kind", "change", "version", "author", "session",
           "created")
#: seconds a --follow request asks the server to hold it (the server's FEED.max_wait bounds it, default 60)
FOLLOW_WAIT = 30
#: the server did not wait (all its waiting threads busy): pause this long before asking again
NOT_WAITED_PAUSE = 1.0
MAX_BACKOFF = 30.0
WAITED_HEADER = "X-Feed-Waited"


def line(change):
    """``12 write values of astute at /nodes/5/ version 3 by bob session <id>``."""
    text = "{0} {1} {2} of {3} at {4}".format(change.get("revision"), change.get("change"), change.get("kind"),
                                             change.get("resource_name") or change.get("resource"),
                                             change.get("level") or "/")
    if change.get("version") is not None:
        text += " version {0}".format(change["version"])
    if change.get("author"):
        text += " by {0}".format(change["author"])
    if change.get("session"):
        text += " session {0}".format(change["session"])
    return text


class ConfigChanges(ClientMixin, lister.Lister):
    """List the changes of a ConfigDB environment after a revision; --follow waits for new ones."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument("-e", "--env", type=int, required=True, help="ID of the ConfigDB environment")
        parser.add_argument("--since", type=int, required=True, metavar="REVISION",
                            help="changes after this revision (0: all that are kept)")
        parser.add_argument("--limit", type=int, help="at most this many per request (server default 500)")
        parser.add_argument("--wait", type=int, metavar="SECONDS",
                            help="hold the request until a change comes or this time passes "
                                 "(default: 0, with --follow {0})".format(FOLLOW_WAIT))
        parser.add_argument("--follow", action="store_true",
                            help="keep waiting for changes and print one line each, until Ctrl-C")
        return parser

    def fetch(self, args, since, wait):
        """One request of the feed: (its JSON, whether the server held it as asked)."""
        params = {"since": str(since)}
        if wait:
            params["wait"] = str(wait)
        if args.limit is not None:
            params["limit"] = str(args.limit)
        body, headers = self.client.get_with_headers(
            "{0}environments/{1}/changes".format(ROOT, args.env), params=params,
            timeout=self.client.timeout + (wait or 0))
        if body.get("truncated"):
            self.app.stderr.write("Some changes after revision {0} are no longer kept (pruned): read the current "
                                  "state again; the feed goes on from the oldest one kept.\n".format(since))
        return body, headers.get(WAITED_HEADER) != "0"

    def take_action(self, args):
        body, _waited = self.fetch(args, args.since, args.wait)
        return COLUMNS, [tuple(change.get(c) for c in COLUMNS) for change in body.get("changes", [])]

    def run(self, parsed_args):
        if not parsed_args.follow:
            return super().run(parsed_args)
        # Ctrl-C is how a follow ends. Not as a KeyboardInterrupt: raised between two bytecodes of urllib3 taking a
        # connection from its pool (the pool's queue lock acquired, its ``with`` not yet entered), it leaves that lock
        # held and urllib3's own clean-up then waits for it for ever. The handler ends the process itself.
        ends_here = (threading.current_thread() is threading.main_thread()
                     and signal.getsignal(signal.SIGINT) is signal.default_int_handler)  # not if SIGINT is ignored
        previous = signal.signal(signal.SIGINT, self._end_on_ctrl_c) if ends_here else None
        try:
            self.follow(parsed_args)
        except KeyboardInterrupt:  # SIGINT left to another handler that raises it (an app embedding the command)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        finally:
            if ends_here:
                signal.signal(signal.SIGINT, previous)
        return 0

    def _end_on_ctrl_c(self, _signum, _frame):
        """SIGINT during --follow: what was printed is flushed, and the process exits 0 at once, whatever the
        interrupted code held (no exception unwinds through it, no exit handler runs)."""
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # another interrupt while exiting is no traceback
        for stream in (self.app.stdout, self.app.stderr):  # (``timeout -s INT`` sends it to the process and its group)
            try:
                stream.flush()
            except (OSError, ValueError, RuntimeError):  # a closed pipe; a flush this signal interrupted
                pass
        os._exit(0)

    def follow(self, args):
        since, backoff = args.since, 1.0
        wait = FOLLOW_WAIT if args.wait is None else args.wait
        as_json = getattr(args, "formatter", None) == "json"
        while True:
            try:
                body, waited = self.fetch(args, since, wait)
            except APIError as exc:
                if not passes(exc):
                    raise
                self.app.stderr.write("{0}; retrying in {1:g} s\n".format(exc, backoff))
                time.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF)
                continue
            backoff = 1.0
            for change in body.get("changes", []):
                self.app.stdout.write((json.dumps(change, sort_keys=True) if as_json else line(change)) + "\n")
            self.app.stdout.flush()
            since = max(since, body.get("revision", since))
            if not body.get("changes") and not (waited and wait):
                time.sleep(NOT_WAITED_PAUSE)  # the server answered at once: do not ask it in a busy loop
