"""The log an operator reads: one line per request, and the request id that ties every other line to it.

Every request, whatever answers it (the authentication's 401, a replayed answer of the read cache,
the application, a 405 or 414 before routing), gets one line: method, path, query, status, duration
and identity (``-`` before authentication), at INFO (5xx at ERROR). Its request id is the client's
``X-Request-Id`` when that is a short token of safe characters, else a new ``req-<uuid>``; it goes
back in the answer's ``X-Request-Id`` and into every line logged while the request runs (the
``[req-...]`` of the format), so an error's traceback is found from the answer a user got.

No secret reaches the log at the default level: credentials travel only in headers, which are not
logged; a query parameter whose name the secrets' patterns match (``nailgun_platform.secrets``) is
logged as the mask; SQLAlchemy (statements and their parameters) is held at WARNING, DEBUG or not,
and so is alembic.
"""
import contextvars
import functools
import logging
import logging.handlers
import os
import re
import sys
import time
import urllib.parse

from nailgun_host import auth
from nailgun_platform import secrets
from nailgun_platform.secrets import classify, masking

LOG = logging.getLogger("nailgun.requests")
HEADER = "X-Request-Id"
ENVIRON_KEY = "nailgun.request_id"
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
#: a client's request id is taken as it is only if it cannot forge a log line or flood one
_SANE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
#: what a logged field keeps as it is: printable ASCII but for the space, the quote and the backslash
_KEPT = re.compile(r'[!#-\[\]-~]*')
_KEPT_WHEN_QUOTED = "".join(chr(c) for c in range(0x21, 0x7f) if chr(c) not in '"\\%')
#: loggers whose lower levels would log what must not be (SQLAlchemy's: statements and their parameters),
#: or lines no operator needs on every request (alembic's "Context impl ..." at each health check's
#: revision reading; what a migration ran is logged by nailgun_host.db.migration itself)
_HELD_AT_WARNING = ("sqlalchemy", "alembic")

current_id = contextvars.ContextVar("nailgun_request_id", default="-")


class RequestIdFilter(logging.Filter):
    """Gives every record the id of the request its thread is serving (``-`` outside one)."""

    def filter(self, record):
        record.request_id = current_id.get()
        return True


def configure(log_settings):
    """The process's logging as the ``LOG`` settings say: the file (reopened when logrotate moved it) or
    stderr, the level, and the format with time, level, logger and request id. Called once by each entry
    point; calling it again replaces what it set up before."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "nailgun_log", False)]:
        root.removeHandler(handler)
        handler.close()
    path = log_settings.get("file")
    handler = logging.handlers.WatchedFileHandler(path) if path else logging.StreamHandler(sys.stderr)
    handler.nailgun_log = True
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(RequestIdFilter())
    root.addHandler(handler)
    root.setLevel(log_settings.get("level", "INFO"))
    for name in _HELD_AT_WARNING:
        logging.getLogger(name).setLevel(logging.WARNING)
    return handler


def request_id(environ):
    """The client's ``X-Request-Id`` when it is sane, else a new random one (``req-`` and 32 hex digits)."""
    given = environ.get("HTTP_X_REQUEST_ID")
    return given if given and _SANE_ID.fullmatch(given) else "req-" + os.urandom(16).hex()


def _printable(text, encoding="utf-8"):
    """``text`` as one field of a line: URL-encoded if it holds anything that could break or forge a line
    (a control character, a space, a quote, a backslash, non-ASCII). A path is ``latin-1``: its bytes."""
    if _KEPT.fullmatch(text):
        return text
    return urllib.parse.quote(text.encode(encoding, "backslashreplace"), safe=_KEPT_WHEN_QUOTED)


def shown_query(query_string):
    """The query string as logged (decoded, escaped): the values of parameters named like secrets are the mask."""
    if not query_string:
        return ""
    return _shown_query(query_string, secrets.patterns())


@functools.lru_cache(maxsize=1024)
def _shown_query(query_string, patterns):
    """``shown_query`` for ``patterns``: remembered, as the same few queries come on every hot read."""
    secret = classify.name_matcher(patterns)
    pairs = urllib.parse.parse_qsl(query_string, keep_blank_values=True)
    return _printable("?" + "&".join(
        "{0}={1}".format(name, masking.MASK if secret(name) else value) if value else name for name, value in pairs))


class RequestLog:
    """WSGI middleware around the whole application: see the module. ``observe(environ, status code,
    seconds)`` is told of every answer too (the statistics)."""

    def __init__(self, app, observe=None):
        self.app = app
        self.observe = observe

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        rid = environ[ENVIRON_KEY] = request_id(environ)
        token = current_id.set(rid)
        status = ["500"]

        def start(line, headers, exc_info=None):
            status[0] = line[:3]
            return start_response(line, list(headers) + [(HEADER, rid)], exc_info)

        try:
            body = self.app(environ, start)
            if isinstance(body, list):
                self._done(environ, status[0], started)
                return body
        except BaseException:
            self._done(environ, "500", started)
            raise
        finally:
            current_id.reset(token)
        return _LoggedBody(body, rid, lambda: self._done(environ, status[0], started))

    def _done(self, environ, status, started):
        seconds = time.perf_counter() - started
        code = int(status) if status.isdigit() else 500
        if self.observe is not None:
            self.observe(environ, code, seconds)
        level = logging.ERROR if code >= 500 else logging.INFO
        if LOG.isEnabledFor(level):
            identity = environ.get(auth.ENVIRON_KEY)
            # a record made here, not by LOG.log, which would walk the stack for a caller the format never shows
            LOG.handle(LOG.makeRecord(LOG.name, level, __file__, 0, '%s "%s %s%s" %s %.2f ms %s', (
                environ.get("REMOTE_ADDR", "-"), _printable(environ.get("REQUEST_METHOD", "-")),
                _printable(environ.get("PATH_INFO", ""), "latin-1"), shown_query(environ.get("QUERY_STRING", "")),
                status, seconds * 1000.0, _printable(identity.name) if identity is not None else "-"), None))


class _LoggedBody:
    """A streamed answer: logged (under its request's id) when the server closes it, its last byte sent."""

    def __init__(self, body, rid, done):
        self._body = body
        self._rid = rid
        self._done = done

    def __iter__(self):
        return iter(self._body)

    def close(self):
        token = current_id.set(self._rid)
        try:
            if hasattr(self._body, "close"):
                self._body.close()
        finally:
            self._done()
            current_id.reset(token)
