"""The server of ``nailgun-feed`` (``nailgun_host.cmd.feed``): the API for long-waiting readers (the change
feed), without a thread per waiter.

It serves the same WSGI application as ``nailgun-api``/waitress, each request run in a bounded
thread pool, so identity, policy, bodies and errors are identical. When a handler may wait
(``notify.CAN_PARK`` in its environ) and has nothing to answer yet, it answers with
``notify.PARK_HEADER`` instead: this server then parks the client on an asyncio future of that
topic (no thread, no database connection), woken by the process's one ``notify.Listener``, and
runs the request again once the topic moves or at the deadline (``notify.PARK_DEADLINE``). The
header never reaches the client. A load balancer sends the feed routes here (docs/api/change-feed.md).

Why not a ready-made server: gevent/eventlet workers would monkey-patch the whole application
(SQLAlchemy, psycopg, keystonemiddleware); ASGI adapters of WSGI (a2wsgi, asgiref) hold a thread
for every request while it waits. aiohttp (the ``[feed]`` extra) gives the event loop and HTTP.
"""
import asyncio
import concurrent.futures
import io
import logging
import sys
import time
import urllib.parse

from nailgun_platform import notify

LOG = logging.getLogger(__name__)

#: answer headers the server makes itself
HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "keep-alive", notify.PARK_HEADER.lower()}


class Parking:
    """Parked clients by topic: futures woken on the event loop when the listener hears the topic."""

    def __init__(self, loop, listener):
        self.loop = loop
        self.listener = listener
        self.waiting = {}
        listener.watch(self._heard)

    def close(self):
        self.listener.unwatch(self._heard)

    def _heard(self, topic):  # on the listener's thread
        self.loop.call_soon_threadsafe(self._wake, topic)

    def _wake(self, topic):
        woken = [f for t, futures in self.waiting.items() if topic is None or t == topic for f in futures]
        for future in woken:
            if not future.done():
                future.set_result(True)

    def count(self):
        return sum(len(futures) for futures in self.waiting.values())

    async def park(self, topic, mark, deadline):
        """Until ``topic`` moves past ``mark`` or ``deadline`` (unix time) passes."""
        if self.listener.mark(topic) != mark:
            return
        future = self.loop.create_future()
        self.waiting.setdefault(topic, set()).add(future)
        try:
            await asyncio.wait_for(future, max(0.0, deadline - time.time()))
        except asyncio.TimeoutError:
            pass
        finally:
            futures = self.waiting.get(topic, set())
            futures.discard(future)
            if not futures:
                self.waiting.pop(topic, None)


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
        "REMOTE_ADDR": client_address(request, trusted_proxy), "wsgi.version": (1, 0), "wsgi.url_scheme": request.scheme,
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

    pool = concurrent.futures.ThreadPoolExecutor(threads, thread_name_prefix="nailgun-feed")
    app = aioweb.Application(client_max_size=2 ** 63)  # the WSGI application enforces its own limit

    async def start(app):
        app["parking"] = Parking(asyncio.get_running_loop(), notify.listener())

    async def stop(app):
        app["parking"].close()
        pool.shutdown(wait=False, cancel_futures=True)

    async def handle(request):
        loop = asyncio.get_running_loop()
        body = await _body(request, max_body)
        port = request.transport.get_extra_info("sockname")[1] if request.transport else 0
        environ = _environ(request, body, port, trusted_proxy)
        while True:
            status, headers, data = await loop.run_in_executor(pool, run_wsgi, application, environ)
            park = next((v for k, v in headers if k.lower() == notify.PARK_HEADER.lower()), None)
            if park is None:
                break
            topic, deadline, mark = notify.parse_park_header(park)
            await app["parking"].park(topic, mark, deadline)
            environ = _environ(request, body, port, trusted_proxy)
            environ[notify.PARK_DEADLINE] = deadline
        code, _, reason = status.partition(" ")
        response = aioweb.Response(status=int(code), reason=reason or None, body=data)
        for name, value in headers:
            if name.lower() not in HOP_HEADERS:
                response.headers.add(name, value)
        return response

    app.router.add_route("*", "/{tail:.*}", handle)
    app.on_startup.append(start)
    app.on_cleanup.append(stop)
    return app
