"""The log an operator reads: one line per request, and the request id that ties every other line to it.

Every request, whatever answers it (the authentication's 401, a replayed answer of the read cache,
the application, a 405 or 414 before routing), gets one line: method, path, query, status, duration
and identity (``-`` before authentication), at INFO (5xx at ERROR). Its request id is the client's
``X-Request-Id`` when that is a short token of safe characters, else a new ``req-<uuid>``; it goes
back in the answer's ``X-Request-Id`` and into every line logged while the request runs (the
``[req-...]`` of the format), so an error's traceback is found from the answer a user got.

A log file is written by ``LogFile``: a request leaves a tuple of its fields, and a thread of the process
formats and writes whatever has come, in order, one ``write``, ``flush`` and ``stat`` per batch (logrotate's
move is seen as ``WatchedFileHandler`` sees it), the time formatted once per second: a line per request
would otherwise cost more than a replayed answer. The thread wakes at each line, so a line is in the file
a moment after its answer; ``flush()`` (and logging's at exit) writes what is still waiting. A write that
fails (a full disk) loses its batch, as logging loses a record, not the writer; beyond ``MAX_WAITING`` lines
waiting, a request writes them itself, so a stalled disk holds requests rather than fill the memory. When other
handlers are set too (a test's capture), the request's line is a record as any other.

No secret reaches the log at the default level: credentials travel only in headers, which are not
logged; a query parameter whose name the secrets' patterns match (``nailgun_platform.secrets``) is
logged as the mask; SQLAlchemy (statements and their parameters) is held at WARNING, DEBUG or not,
and so is alembic.
"""
import collections
import contextvars
import functools
import logging
import logging.handlers
import os
import queue
import random
import re
import signal
import sys
import threading
import time
import urllib.parse
import weakref

from nailgun_host import auth
from nailgun_platform import secrets
from nailgun_platform.secrets import classify, masking

LOG = logging.getLogger("nailgun.requests")
HEADER = "X-Request-Id"
ENVIRON_KEY = "nailgun.request_id"
FORMAT = "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"
#: how long the log file's writer lets lines gather once woken (each wake of a thread costs the GIL a switch)
BATCH_SECONDS = 0.02
#: lines that may wait for the writer; beyond, a request writes them itself (a stalled disk holds requests, as a
#: handler writing each line would, rather than fill the memory)
MAX_WAITING = 10000
#: the request's line after ``[request id] ``
MESSAGE = '%s "%s %s%s" %s %.2f ms %s'
#: requests (address, method, path, query, user) whose logged fields the writer remembers, then forgets all at once,
#: if their method, path, query and user are at most REMEMBERED_LENGTH long (a client may send hundreds of KB)
REMEMBERED_FIELDS, REMEMBERED_LENGTH = 4096, 2048
#: a client's request id is taken as it is only if it cannot forge a log line or flood one
_SANE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}")
#: what a logged field keeps as it is: printable ASCII but for the space, the quote and the backslash
_KEPT = re.compile(r'[!#-\[\]-~]*')
_KEPT_WHEN_QUOTED = "".join(chr(c) for c in range(0x21, 0x7f) if chr(c) not in '"\\%')
#: loggers whose lower levels would log what must not be (SQLAlchemy's: statements and their parameters;
#: keystoneauth1's and barbicanclient's: the bodies they send, a key stored in the key manager among them),
#: or lines no operator needs on every request (alembic's "Context impl ..." at each health check's
#: revision reading; what a migration ran is logged by nailgun_host.db.migration itself)
_HELD_AT_WARNING = ("sqlalchemy", "alembic", "keystoneauth", "barbicanclient")

current_id = contextvars.ContextVar("nailgun_request_id", default="-")


class RequestIdFilter(logging.Filter):
    """Gives every record the id of the request its thread is serving (``-`` outside one)."""

    def filter(self, record):
        record.request_id = current_id.get()
        return True


class LogFile(logging.handlers.WatchedFileHandler):
    """The log file (see the module): records are formatted by the thread that logs them (their arguments
    may change afterwards), requests' lines by the writer from their fields (``request``); both wait in
    one queue, so the file keeps their order."""

    def __init__(self, path):
        super().__init__(path)
        self._waiting = collections.deque()
        self._wake = queue.SimpleQueue()
        self._writing = False  # whether this process's writer thread runs (a forked child's does not)
        _log_files.add(self)
        self._idle = True  # the writer waits for a wake: the next line wakes it (the others find it busy)
        self._second = (None, "")
        #: (address, method, path, query, user) -> logged form around the status and time, under ``_patterns``
        self._fields = {}
        self._patterns = None
        self._patterns_checked = False
        #: level number -> the line's level and logger name
        self._levels = {}

    def emit(self, record):
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self._queue(line)

    def request(self, fields):
        """A request's line: ``(time.time(), level number, request id, remote address, method, path,
        query string, status, seconds, user name or None)``."""
        self._queue(fields)

    def _queue(self, line):
        """Leave ``line`` to the writer, and wake it; write what waits here when too much does (``MAX_WAITING``)."""
        self._waiting.append(line)
        if not self._writing:  # the first line of this process (a server may fork after configure)
            with self.lock:
                if not self._writing:
                    self._writing = True
                    self._idle = True
                    threading.Thread(target=self._write_forever, name="nailgun-log", daemon=True).start()
        if self._idle:
            self._idle = False
            self._wake.put(True)
        if len(self._waiting) > MAX_WAITING:
            self.flush()

    def _write_forever(self):
        going = True
        while going:
            going = self._wake.get()
            if going:
                time.sleep(BATCH_SECONDS)
            self._idle = True  # before the batch is taken: a line that misses it wakes the writer again
            self.flush()

    def flush(self):
        """Write every line waiting, then flush the file."""
        with self.lock:
            lines = []
            waiting = self._waiting
            self._patterns_checked = False  # once per batch, at its first query
            while waiting:
                line = waiting.popleft()
                try:
                    lines.append(line if line.__class__ is str else self._request_line(*line))
                except Exception:  # as logging does with a record it cannot format: said on stderr, not raised
                    self.handleError(None)
            try:  # a failure (a full disk) loses this batch, as logging loses a record, never the writer
                if lines:
                    self.reopenIfNeeded()
                    if self.stream is None:
                        self.stream = self._open()
                        self._statstream()
                    self.stream.write("\n".join(lines) + "\n")
                super().flush()
            except Exception:
                self.handleError(None)

    def _check_patterns(self):
        """Forget the remembered fields when the secrets' patterns changed (a query's mask depends on them)."""
        self._patterns_checked = True
        patterns = secrets.patterns()
        if patterns != self._patterns:
            self._patterns = patterns
            self._fields.clear()

    def _request_line(self, created, level, rid, remote, method, path, query, status, seconds, user):
        if query and not self._patterns_checked:
            self._check_patterns()
        second = int(created)
        if self._second[0] != second:
            self._second = (second, time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second)))
        key = (remote, method, path, query, user)
        fields = self._fields.get(key)
        if fields is None:  # the same few requests come over and over: their fields escaped and masked once
            fields = (
                '%s "%s %s%s" ' % (remote, _printable(method), _printable(path, "latin-1"),
                                   _shown_query(query, self._patterns) if query else ""),
                " ms " + ("-" if user is None else _printable(user)))
            if len(method) + len(path) + len(query or "") + len(user or "") <= REMEMBERED_LENGTH:
                if len(self._fields) >= REMEMBERED_FIELDS:
                    self._fields.clear()
                self._fields[key] = fields
        named = self._levels.get(level)
        if named is None:
            named = self._levels[level] = "%s %s [" % (logging.getLevelName(level), LOG.name)
        return "%s,%03d %s%s] %s%s %.2f%s" % (
            self._second[1], (created - second) * 1000, named, rid, fields[0], status, seconds * 1000.0, fields[1])

    def close(self):
        self._wake.put(False)  # the writer's last batch
        self.flush()
        super().close()


_log_files = weakref.WeakSet()


def _forked():
    """In a forked child (a worker): no writer yet, and the lines the parent left waiting are the parent's to write."""
    for log_file in _log_files:
        log_file._writing = False
        log_file._waiting.clear()


os.register_at_fork(after_in_child=_forked)


def configure(log_settings):
    """The process's logging as the ``LOG`` settings say: the file (``LogFile``: reopened when logrotate
    moved it) or stderr, the level, and the format with time, level, logger and request id. Called once
    by each entry point; calling it again replaces what it set up before."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "nailgun_log", False)]:
        root.removeHandler(handler)
        handler.close()
    path = log_settings.get("file")
    handler = LogFile(path) if path else logging.StreamHandler(sys.stderr)
    handler.nailgun_log = True
    handler.setFormatter(logging.Formatter(FORMAT))
    handler.addFilter(RequestIdFilter())
    root.addHandler(handler)
    if path:
        _flush_at_sigterm()
    root.setLevel(log_settings.get("level", "INFO"))
    for name in _HELD_AT_WARNING:
        logging.getLogger(name).setLevel(logging.WARNING)
    return handler


def _flush_at_sigterm():
    """A server stopped by SIGTERM (waitress, cheroot: no handler of their own) first writes the lines that wait,
    then dies of it as it would have. Only where nobody set a handler, and from the main thread (Python's rule)."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, _terminated):
        return
    signal.signal(signal.SIGTERM, _terminated)


def _terminated(signum, frame):
    for handler in logging.getLogger().handlers:
        if isinstance(handler, LogFile):
            handler.flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _log_file(level):
    """The ``LogFile`` that alone would write a request's record at ``level``, else None (no handler, other
    handlers or filters too: the record is made as any other)."""
    found = None
    logger = LOG
    while logger is not None:
        if logger.filters:
            return None
        for handler in logger.handlers:
            if found is not None or not isinstance(handler, LogFile) or handler.filters[1:] \
                    or level < handler.level:
                return None
            found = handler
        logger = logger.parent if logger.propagate else None
    return found


def request_id(environ):
    """The client's ``X-Request-Id`` when it is sane, else a new random one (``req-`` and 32 hex digits)."""
    given = environ.get("HTTP_X_REQUEST_ID")
    # random's generator, seeded from os.urandom (again in a forked child): an id needs to be unique, not secret,
    # and os.urandom's system call cost more than a replayed answer
    return given if given and _SANE_ID.fullmatch(given) else "req-%032x" % random.getrandbits(128)


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


def _path(environ):
    """The path the client asked for: the console's mount (``SCRIPT_NAME`` ``/ui``) and the API's path under it."""
    return environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")


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
        if not LOG.isEnabledFor(level):
            return
        identity = environ.get(auth.ENVIRON_KEY)
        log_file = _log_file(level)
        if log_file is not None:
            log_file.request((time.time(), level, environ[ENVIRON_KEY], environ.get("REMOTE_ADDR", "-"),
                              environ.get("REQUEST_METHOD", "-"), _path(environ),
                              environ.get("QUERY_STRING", ""), status, seconds,
                              None if identity is None else identity.name))
            return
        # a record made here, not by LOG.log, which would walk the stack for a caller the format never shows
        LOG.handle(LOG.makeRecord(LOG.name, level, __file__, 0, MESSAGE, (
            environ.get("REMOTE_ADDR", "-"), _printable(environ.get("REQUEST_METHOD", "-")),
            _printable(_path(environ), "latin-1"), shown_query(environ.get("QUERY_STRING", "")),
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
