"""The server of ``nailgun-feed`` (``nailgun_host.cmd.feed``): the API for long-waiting readers (the change
feed), without a thread per waiter.

It serves the same WSGI application as ``nailgun-api``/waitress, each request run in a bounded
thread pool, so identity, policy, bodies and errors are identical. When a handler may wait
(``notify.CAN_PARK`` in its environ) and has nothing to answer yet, it answers with
``notify.PARK_HEADER`` instead: this server then parks the client on an asyncio future of that
topic (no thread, no database connection), woken by the process's one ``notify.Listener``, runs the
request again once the topic moves, and at the deadline of its first park answers the body of its
last run. The header never reaches the client. A load balancer sends the feed routes here
(docs/api/change-feed.md).

A write wakes every waiter of its environment at once: they run again in one batch (``Runner``), each
through the whole stack, and those the application would answer alike share one run of it
(``nailgun_platform.shared_runs``), and identical ones (a thousand readers with one token) one run of
authentication too: a thousand waiters cost one read of the feed, one check of the token and a thousand log
lines.

Why not a ready-made server: gevent/eventlet workers would monkey-patch the whole application
(SQLAlchemy, psycopg, keystonemiddleware); ASGI adapters of WSGI (a2wsgi, asgiref) hold a thread
for every request while it waits. aiohttp (the ``[feed]`` extra) gives the event loop and HTTP.
"""
import asyncio
import concurrent.futures
import heapq
import io
import itertools
import logging
import sys
import threading
import time
import urllib.parse

from nailgun_platform import notify, shared_runs

LOG = logging.getLogger(__name__)

#: deadlines of requests no longer parked kept past twice the parked ones before the heap is rebuilt
COMPACT_ABOVE = 1024
#: answer headers the server makes itself
PARK_LOWER = notify.PARK_HEADER.lower()
HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "keep-alive", PARK_LOWER}


class Runner:
    """Runs requests through the WSGI application on at most ``threads`` pool threads, in batches.

    A thread takes every request queued when it looks (a write wakes a thousand waiters in one go) and runs
    them one after the other, each through the whole stack, with one dict for the batch
    (``shared_runs.ENVIRON_KEY``): requests that the application would answer alike share one run of it.
    Each answer goes back to the event loop as soon as its request has run.
    """

    def __init__(self, loop, application, threads):
        self.loop = loop
        self.application = application
        self.threads = threads
        self.pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="nailgun-feed")
        self._lock = threading.Lock()
        self._queued = []
        self._running = 0  # threads draining the queue
        self._answered = []  # (future, answer, exception) for the loop to hand over
        self._handing_over = False

    def run(self, make_environ, future=None):
        """A future of ``(status line, headers, body)`` of the request whose environ ``make_environ()`` makes."""
        return self.run_all([(make_environ, future or self.loop.create_future())])[0]

    def run_all(self, requests):
        """Queue ``[(make_environ, future)]``: each future gets its request's answer (or exception)."""
        with self._lock:
            self._queued.extend(requests)
            start = self._running < self.threads
            self._running += start
        if start:
            self.pool.submit(self._drain)
        return [future for _, future in requests]

    def _drain(self):  # on a pool thread
        while True:
            with self._lock:
                batch, self._queued = self._queued, []
                if not batch:
                    self._running -= 1
                    return
            shared = {}
            for make_environ, future in batch:
                if future.cancelled():  # its client went away while it was queued
                    continue
                try:
                    environ = make_environ()
                    environ[shared_runs.ENVIRON_KEY] = shared
                    self._answer(future, run_wsgi(self.application, environ), None)
                except BaseException as exc:  # the client gets the server's 500, as from run_in_executor
                    self._answer(future, None, exc)

    def _answer(self, future, answer, exc):
        """Hand an answer to the loop: one wake-up of the loop for all the answers made meanwhile (one each
        would cost more than the request's own run when a thousand share one)."""
        with self._lock:
            self._answered.append((future, answer, exc))
            if self._handing_over:
                return
            self._handing_over = True
        self.loop.call_soon_threadsafe(self._hand_over)

    def _hand_over(self):  # on the loop
        with self._lock:
            answered, self._answered = self._answered, []
            self._handing_over = False
        for future, answer, exc in answered:
            if future.done():
                continue
            if exc is not None:
                future.set_exception(exc)
            else:
                future.set_result(answer)

    def close(self):
        self.pool.shutdown(wait=False, cancel_futures=True)


class Parking:
    """Parked requests by topic: queued to run again (``Runner.run_all``, all of a topic at once) when the
    listener hears the topic, or alone at their deadline.

    Deadlines are kept in one heap under one timer of the loop, and a woken request leaves its entry there to
    be dropped when its time comes: a wake of a thousand cancels no timer (the loop's timers are compared in
    Python, and a thousand cancelled ones cost the loop a rebuild of its heap).
    """

    def __init__(self, loop, listener, runner):
        self.loop = loop
        self.listener = listener
        self.runner = runner
        #: topic -> {future: make_environ}
        self.waiting = {}
        #: (deadline, sequence, topic, future), the earliest first; entries of requests gone stay until then
        self._deadlines = []
        self._sequence = itertools.count()
        self._timer = None
        listener.watch(self._heard)

    def close(self):
        self.listener.unwatch(self._heard)
        if self._timer is not None:
            self._timer.cancel()

    def _heard(self, topic):  # on the listener's thread
        self.loop.call_soon_threadsafe(self._wake, topic)

    def _wake(self, topic):
        woken = []
        for found in [t for t in self.waiting if topic is None or t == topic]:
            woken.extend((make_environ, future) for future, make_environ in self.waiting.pop(found).items())
        if woken:
            self.runner.run_all(woken)
            self._compact()

    def _compact(self):
        """Drop the deadlines of requests no longer parked once they outnumber the parked ones (a feed whose
        readers are woken often would otherwise keep ``max_wait`` seconds of them)."""
        parked = sum(map(len, self.waiting.values()))
        if len(self._deadlines) > 2 * parked + COMPACT_ABOVE:
            self._deadlines = [entry for entry in self._deadlines if entry[3] in self.waiting.get(entry[2], ())]
            heapq.heapify(self._deadlines)

    def _forget(self, topic, future):
        """The parked request's ``make_environ``, no longer parked; None if it was not."""
        parked = self.waiting.get(topic)
        make_environ = parked.pop(future, None) if parked is not None else None
        if parked is not None and not parked:
            del self.waiting[topic]
        return make_environ

    def _expire(self):
        self._timer = None
        now = self.loop.time()
        while self._deadlines and self._deadlines[0][0] <= now:
            _, _, topic, future = heapq.heappop(self._deadlines)
            make_environ = self._forget(topic, future)
            if make_environ is not None:
                self.runner.run(make_environ, future)
        self._arm()

    def _arm(self):
        """The loop's timer at the earliest deadline."""
        if not self._deadlines:
            return
        earliest = self._deadlines[0][0]
        if self._timer is not None:
            if self._timer.when() <= earliest:
                return
            self._timer.cancel()
        self._timer = self.loop.call_at(earliest, self._expire)

    async def park(self, topic, mark, deadline, make_environ):
        """The answer of the request run again once ``topic`` moves past ``mark``, or at ``deadline`` (the
        loop's clock)."""
        if self.listener.mark(topic) != mark:
            return await self.runner.run(make_environ)
        future = self.loop.create_future()
        self.waiting.setdefault(topic, {})[future] = make_environ
        heapq.heappush(self._deadlines, (deadline, next(self._sequence), topic, future))
        self._arm()
        try:
            return await future
        finally:  # its client went away: forget it (its deadline's entry goes when its time comes)
            self._forget(topic, future)


def client_address(request, trusted_proxy=None):
    """The client's address: the peer's, or, when the peer is ``trusted_proxy``, the last address of its
    ``X-Forwarded-For`` (as waitress-serve's ``--trusted-proxy`` with ``x-forwarded-for``), so that behind nginx
    the login lockout counts each client's failures, not the proxy's."""
    remote = request.remote or ""
    if trusted_proxy is None or remote != trusted_proxy:
        return remote
    forwarded = [a.strip() for v in request.headers.getall("X-Forwarded-For", []) for a in v.split(",")]
    return forwarded[-1] if forwarded and forwarded[-1] else remote


def _environ(request, body, server_port, trusted_proxy=None):
    """The WSGI environ of an aiohttp request (PEP 3333), with a body already read."""
    environ = {
        "REQUEST_METHOD": request.method, "SCRIPT_NAME": "",
        "PATH_INFO": urllib.parse.unquote(request.raw_path.split("?", 1)[0], "latin-1"),
        "QUERY_STRING": request.raw_path.split("?", 1)[1] if "?" in request.raw_path else "",
        "RAW_URI": request.raw_path, "SERVER_NAME": request.host.split(":")[0],
        "SERVER_PORT": str(server_port), "SERVER_PROTOCOL": "HTTP/{0}.{1}".format(*request.version),
        "REMOTE_ADDR": client_address(request, trusted_proxy), "wsgi.version": (1, 0),
        "wsgi.url_scheme": request.scheme,
        "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr, "wsgi.multithread": True,
        "wsgi.multiprocess": True, "wsgi.run_once": False, notify.CAN_PARK: True,
    }
    for name, value in request.headers.items():
        key = name.upper().replace("-", "_")
        if key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            environ[key] = value
        elif "_" not in name:  # a header spelt with "_" could pose as another one's environ key
            key = "HTTP_" + key
            environ[key] = environ[key] + "," + value if key in environ else value
    return environ


def _parking(headers):
    """``(the park header's value or None, the headers to send)`` of an answer, the server's own left out."""
    park, kept = None, []
    for name, value in headers:
        lowered = name.lower()
        if lowered == PARK_LOWER:
            park = value
        elif lowered not in HOP_HEADERS:
            kept.append((name, value))
    return park, kept


def run_wsgi(application, environ):
    """``(status line, headers, body)`` of one WSGI call, on a pool thread."""
    answer = {}

    def start_response(status, headers, exc_info=None):
        answer["status"], answer["headers"] = status, headers

    result = application(environ, start_response)
    try:
        body = b"".join(result)
    finally:
        if hasattr(result, "close"):
            result.close()
    return answer["status"], answer["headers"], body


async def _body(request, limit):
    """The request body, read to at most ``limit`` + 1 bytes: the application answers a larger one 413."""
    chunks, size = [], 0
    while size <= limit:
        chunk = await request.content.read(limit + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def make_app(application, threads, max_body, trusted_proxy=None):
    """The aiohttp application serving ``application`` (WSGI) with ``threads`` pool threads, reading bodies of
    at most ``max_body`` bytes (the host's ``MAX_REQUEST_BODY``); a client of ``trusted_proxy`` is the one its
    ``X-Forwarded-For`` names."""
    from aiohttp import web as aioweb
    from multidict import CIMultiDict

    app = aioweb.Application(client_max_size=2 ** 63)  # the WSGI application enforces its own limit

    async def start(app):
        loop = asyncio.get_running_loop()
        app["runner"] = Runner(loop, application, threads)
        app["parking"] = Parking(loop, notify.listener(), app["runner"])

    async def stop(app):
        app["parking"].close()
        app["runner"].close()

    async def handle(request):
        body = await _body(request, max_body)
        port = request.transport.get_extra_info("sockname")[1] if request.transport else 0

        made = _environ(request, body, port, trusted_proxy)

        def make_environ():  # a fresh copy for each run: the application changes its environ
            environ = dict(made)
            environ["wsgi.input"] = io.BytesIO(body)
            return environ

        loop = asyncio.get_running_loop()
        status, headers, data = await app["runner"].run(make_environ)
        deadline = None
        while True:
            park, headers = _parking(headers)
            if park is None:
                break
            topic, first_deadline, mark = notify.parse_park_header(park)
            if deadline is None:  # the request's own, from its first park, on the loop's clock
                deadline = loop.time() + first_deadline - time.time()
            if loop.time() >= deadline:
                break  # what a parking answer says at the deadline: its body
            status, headers, data = await app["parking"].park(topic, mark, deadline, make_environ)
        code, _, reason = status.partition(" ")
        return aioweb.Response(status=int(code), reason=reason or None, body=data, headers=CIMultiDict(headers))

    app.router.add_route("*", "/{tail:.*}", handle)
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app
