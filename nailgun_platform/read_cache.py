"""GET answers replayed from memory while what they were computed from is unchanged.

The product's hot read (Hiera and lifecycle tools reading effective values) asks for the same
answer many times between changes that come a few times a day. A route may declare a
``fingerprint`` (``api.base.route``): an object with ``read(rows)``, which reads in one cheap
statement (``rows(statement)``) a state the database changes with every change any of the route's
answers depend on (generations its triggers count), and ``of(state, path)``, the part of that state
the answers of ``path`` depend on (hashable; None when it cannot tell). So a write need only change
the part of the answers it changes (ConfigDB: one environment's). The first GET of a URL is answered
by the application as usual and its 200 answer (body, headers, ETag) is kept; later GETs of the same
URL and query by identities that see the same (secrets shown, or masked) get those bytes while the
URL's fingerprint is equal, and a 304 for a matching ``If-None-Match``, without the web framework,
the ORM or any decoding.

Why no write can leave a stale answer, on any worker or host, although a worker reads the state
at most once per lease (``READ_CACHE.lease_ms``) rather than on every request: a request is served
under a state read that *started* less than a lease before the request arrived (or after it
arrived), and the answer of every write (any other method) is held for a lease after the
application committed it. So a request sent after a write's answer arrives more than a lease after
that commit, and is served only under a read that started after it, which sees it. Reads are
single-flight: of the threads finding the lease run out, one reads while the others wait for it,
and each then takes that read if it meets the same condition for its own request (it started less
than a lease before that request arrived), or reads again itself; so at most one statement per
route per lease per process, and a failed read is remembered like a state (the application then
answers, whatever the threads). (Only elapsed times are compared, each on one host's monotonic
clock; pauses, and waiting for another thread's read, only make reads older or answers later, both
safe.) An answer is kept under the fingerprint read *before* the application computed it, so it
can only be newer than that state; fingerprints never repeat a past state (generations only grow).

Everything else goes to the application untouched: a request in a configuration session
(``X-Configuration-Session``), HEAD, an identity the route's read rule refuses, any answer but 200,
and every request when the database cannot be asked. Memory: at most ``READ_CACHE.max_bytes`` of
bodies per process, least recently used out first.

The host hands in what it knows: its ``StatementReader`` (the one statement outside transactions)
and ``access``, which asks its policy whether the request's identity may read through a route's rule
and whether it sees secrets (``nailgun_host.api.base.read_access``).
"""
import collections
import logging
import threading
import time

from nailgun_platform import hosting, routing
from nailgun_platform.etags import none_match
from nailgun_platform.whole_answer import answered

LOG = logging.getLogger(__name__)


class StatementFailed(Exception):
    """The database did not answer a ``StatementReader`` statement (down, busy, not migrated)."""


#: methods that never write (everything else is held for a lease)
READS = ("GET", "HEAD", "OPTIONS")
#: what an answer costs beside its body and key: the objects holding it, its headers and state (measured)
ENTRY_OVERHEAD = 2048
#: answers larger than this share of the budget are not kept (one would push out all the others)
LARGEST_SHARE = 4


class Answer:
    """A 200 answer as the application gave it, and the state (fingerprint) it was computed from."""

    __slots__ = ("fingerprint", "headers", "body", "etag", "size")

    def __init__(self, key, fingerprint, headers, body):
        self.fingerprint = fingerprint
        self.body = body
        self.headers = [(k, v) for k, v in headers if k.lower() != "content-length"] + [
            ("Content-Length", str(len(body)))]
        self.etag = next((v for k, v in headers if k.lower() == "etag"), None)
        self.size = len(body) + sum(len(part) for part in key[:2]) + ENTRY_OVERHEAD


class AnswerStore:
    """Answers by request key, least recently used out first, within ``max_bytes``."""

    def __init__(self, max_bytes):
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = self.misses = 0
        self._answers = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
            return answer

    def put(self, key, answer):
        if answer.size * LARGEST_SHARE > self.max_bytes:
            return
        with self._lock:
            old = self._answers.pop(key, None)
            if old is not None:
                self.size -= old.size
            self._answers[key] = answer
            self.size += answer.size
            while self.size > self.max_bytes:
                _, dropped = self._answers.popitem(last=False)
                self.size -= dropped.size

    def __len__(self):
        return len(self._answers)


class CachedRoute:
    """A route whose GET answers may be replayed: its read rule and fingerprint (module)."""

    __slots__ = ("rule", "fingerprint")

    def __init__(self, rule, fingerprint):
        self.rule = rule
        self.fingerprint = fingerprint


class ReadCache:
    """WSGI middleware in front of the application (behind authentication): see the module."""

    def __init__(self, app, routes, max_bytes, lease_seconds, reader, access, start_board=None):
        self.app = app
        self.store = AnswerStore(max_bytes)
        self.lease_seconds = lease_seconds
        self.reader = reader
        self.access = access
        #: fingerprint -> (the state it last read, or None if that failed; the monotonic time it was sent)
        self._leases = {}
        #: fingerprint -> the lock its one reader holds (single flight)
        self._reading = {}
        #: the application's routes (``routing.Routes``), and by their position the ones cached or None
        self.routes = routes
        self._cached = []
        for entry in routes.routes:
            cached = None
            if "fingerprint" in entry:
                cached = CachedRoute(entry["handler"].policy_rule("GET"), entry["fingerprint"])
                self._reading.setdefault(entry["fingerprint"], threading.Lock())
            self._cached.append(cached)
        self._rules = [None if cached is None else cached.rule for cached in self._cached]
        #: the routes' fingerprints, each once, in order: their states' places on the board
        self.fingerprints = tuple(self._reading)
        self._place = {fingerprint: place for place, fingerprint in enumerate(self.fingerprints)}
        #: with ``READ_CACHE.state_reader: process``, what answers ``lease(asked_at, lease_seconds)`` from the reads of
        #: a process of their own (``state_board``, the host's ``state_reader``), else None
        self.board = start_board(self.fingerprints, lease_seconds) \
            if start_board is not None and lease_seconds and max_bytes and reader.available() else None

    def _key(self, environ):
        """(route, key) of a request whose answer may be replayed, or None."""
        found = self.routes.read_key(environ, self._rules, self.access)
        return None if found is None else (self._cached[found[0]], found[1])

    def _fingerprint(self, route, path, asked_at):
        """The fingerprint of ``path`` (a URL of ``route``) under a state read that started less than a
        lease before ``asked_at`` (or after it), or None when it cannot be told."""
        if self.board is not None:  # asked first, on every request: the reader reads while requests come often
            published = self.board.lease(asked_at, self.lease_seconds)
            if published is not None:
                return route.fingerprint.of(published[0][self._place[route.fingerprint]], path)
        lease = self._leases.get(route.fingerprint)
        if lease is None or asked_at - lease[1] >= self.lease_seconds:
            lease = self._leased(route, path, asked_at)
        return route.fingerprint.of(lease[0], path) if lease[0] is not None else None

    def _leased(self, route, path, asked_at):
        """A read of the route's state that meets ``_fingerprint``'s condition: one thread reads, the
        others arriving meanwhile wait for it and take it (module)."""
        fingerprint = route.fingerprint
        with self._reading[fingerprint]:
            lease = self._leases.get(fingerprint)
            if lease is not None and asked_at - lease[1] < self.lease_seconds:
                return lease
            sent_at = time.monotonic()
            try:
                state = fingerprint.read(self.reader.rows)
            except StatementFailed:  # the database cannot be asked now: the application says how it fails
                state = None
            except Exception:
                LOG.exception("The read cache cannot tell the state of %s; the application answers", path)
                state = None
            lease = self._leases[fingerprint] = (state, sent_at)
            return lease

    def __call__(self, environ, start_response):
        if not self.reader.available():
            return self.app(environ, start_response)
        if environ.get("REQUEST_METHOD") not in READS:
            return self._held_for_a_lease(environ, start_response)
        found = self._key(environ) if self.store.max_bytes else None
        if found is None:
            return self.app(environ, start_response)
        route, key = found
        fingerprint = self._fingerprint(route, key[0], time.monotonic())
        if fingerprint is None:
            return self.app(environ, start_response)
        answer = self.store.get(key)
        if answer is not None and answer.fingerprint == fingerprint:
            self.store.hits += 1
            return self._send(answer, environ, start_response)
        self.store.misses += 1
        return self._compute(key, fingerprint, environ, start_response)

    def _held_for_a_lease(self, environ, start_response):
        """A write's answer, sent once every lease read before its commit has run out (module)."""
        if not self.lease_seconds:
            return self.app(environ, start_response)
        status, headers, body = answered(self.app, environ)
        time.sleep(self.lease_seconds)
        start_response(status, headers)
        return [body]

    def _compute(self, key, fingerprint, environ, start_response):
        """The application's answer, kept when it is a 200; ``If-None-Match`` is then applied here,
        so that a revalidation also leaves the whole answer behind."""
        wanted = environ.pop("HTTP_IF_NONE_MATCH", None)
        status, headers, body = answered(self.app, environ)
        if wanted is not None:
            environ["HTTP_IF_NONE_MATCH"] = wanted
        if not status.startswith("200 "):
            start_response(status, headers)
            return [body]
        answer = Answer(key, fingerprint, headers, body)
        self.store.put(key, answer)
        return self._send(answer, environ, start_response)

    @staticmethod
    def _send(answer, environ, start_response):
        wanted = environ.get("HTTP_IF_NONE_MATCH")
        if wanted is not None and answer.etag is not None and none_match(wanted, answer.etag):
            start_response("304 Not Modified", [("ETag", answer.etag)])
            return []
        start_response("200 OK", answer.headers)
        return [answer.body]


def build(app, routes, reader, access, start_board=None):
    """``app`` behind a ``ReadCache`` of the routes (``routing.Routes``) that declare a fingerprint (READ_CACHE
    settings); with ``state_reader: process``, its states read by ``start_board(fingerprints, lease_seconds)``, an
    object answering ``lease`` as ``state_board.StateBoard`` does."""
    if not any("fingerprint" in entry for entry in routes.routes):
        return app
    settings = hosting.settings["READ_CACHE"]
    return ReadCache(app, routes, int(settings["max_bytes"]), settings["lease_ms"] / 1000.0, reader, access,
                     start_board if settings["state_reader"] == "process" else None)
