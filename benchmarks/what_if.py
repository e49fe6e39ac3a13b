"""A ceiling for issue 27's goal 1, never a server to run: the production application with the layers between the
request log and the read cache skipped for a request seen before.

``production_limit.py --what-if skip-layers`` serves ``what_if:application`` instead of
``nailgun_host.wsgi:application``. The first request of a (method, URI, credential) goes through every layer as
usual; when the read cache replays it, the identity and the read cache's key are remembered, and the same request
again goes straight from the request log to the read cache's lease, store and answer. Authentication, the policy's
read rule, the path's checks, ``/metrics`` and the feed's shared runs are skipped for it: their decisions are
taken as they were the first time, whatever changed since (a password, a role, the policy). That is unsound on
purpose: it tells how fast a replay could be if those layers cost nothing, so what a design that remembers their
decisions (each layer saying what its decision depends on) could reach at most. The request log, the statistics
and the lease are kept. With ``NAILGUN_WHAT_IF=skip-checked-layers`` (``--what-if skip-checked-layers``) the Basic
credential and the route's read rule are still asked each time (``basic_identity``, the read cache's ``access``):
what skipping only the layers' plumbing gives.
"""
import os
import time

from nailgun_host import auth, wsgi
from nailgun_host.auth.middleware import AuthMiddleware
from nailgun_platform.read_cache import ReadCache


def _layer(request_log, kind):
    """The layer of class ``kind`` inside the request log's application (``nailgun_host.app.build_wsgi``)."""
    inner = request_log.app
    layer = dict(zip(inner.__code__.co_freevars, (cell.cell_contents for cell in inner.__closure__)))["wsgi"]
    while layer is not None and not isinstance(layer, kind):
        layer = getattr(layer, "app", None)
    if layer is None:
        raise RuntimeError("no {0} under nailgun_host.wsgi.application: build_wsgi changed, update what_if".format(
            kind.__name__))
    return layer


def skip_layers(request_log, checked=False):
    """``request_log`` whose application replays a request seen before straight from the read cache (module);
    ``checked``: its Basic credential and the route's read rule asked again each time."""
    cache = _layer(request_log, ReadCache)
    authentication = _layer(request_log, AuthMiddleware)
    application = request_log.app
    found_key = cache._key
    remembered = {}

    def key(environ):
        found = environ["what_if.key"] = found_key(environ)
        return found

    cache._key = key

    def shortcut(environ, start_response):
        seen = (environ.get("REQUEST_METHOD"), environ.get("RAW_URI") or environ.get("REQUEST_URI"),
                environ.get("HTTP_AUTHORIZATION"), environ.get("HTTP_X_AUTH_TOKEN"))
        known = remembered.get(seen)
        if known is not None:
            route, request_key, identity = known
            if checked:
                identity = authentication.basic_identity(seen[2], environ.get("REMOTE_ADDR"))
            environ[auth.ENVIRON_KEY] = identity
            if checked and cache.access(environ, route.rule) != request_key[2]:
                return application(environ, start_response)
            fingerprint = cache._fingerprint(route, request_key[0], time.monotonic())
            answer = cache.store.get(request_key)
            if fingerprint is not None and answer is not None and answer.fingerprint == fingerprint:
                return cache._send(answer, environ, start_response)
        body = application(environ, start_response)
        found = environ.get("what_if.key")
        if found is not None:
            remembered[seen] = (found[0], found[1], environ.get(auth.ENVIRON_KEY))
        return body

    request_log.app = shortcut
    return request_log


application = skip_layers(wsgi.application, checked=os.environ.get("NAILGUN_WHAT_IF") == "skip-checked-layers")
