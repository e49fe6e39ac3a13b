"""Requests run together share one run of the application when it would answer them alike.

When a write wakes a thousand readers of one environment's change feed, ``nailgun-feed``
(``nailgun_platform.feed_server``) runs their requests again in a batch: the requests it takes
together from its queue, each through the whole stack (request log, authentication, statistics), as
before. Only the application behind them runs once per answer: the first GET of a batch for a
path, query and ``If-None-Match`` by an identity that may read it and sees secrets (or not) is run,
and the others of the batch alike get its status, headers and body. A route opts in
(``route(..., shareable=True)``, or a fingerprint: ``nailgun_platform.read_cache`` asks the same of
its answers) when its GET answers depend on nothing else but the database.

Why an answer shared is one the request could have got on its own: every request of a batch was
waiting for a thread before the batch began, so a run that starts after that reads a state that
existed while each of them was waiting for its answer, as its own run would have. Why no one sees
what they may not: authentication runs for every request (a token that expired or was revoked
while its request was parked gets its 401), and a request shares only with requests that the
route's read rule lets in as well and that see secrets as it does (``access``, the read cache's
question); one the rule refuses, with no identity, in a configuration session or not a GET, runs on
its own.

In front of authentication, ``IdenticalRuns`` goes one step further for the requests of a batch that are
identical in all that the server made of them (method, path, query, every header, the client's address, no
body): the same credentials from the same address, checked at the same moment, get the same decision, so
they share one run of authentication and everything behind it, for the same reason as above (a token that
expired or a user removed while they waited is found by that run, after all of them began waiting). Each
still passes through the request log and statistics with its own request id and the identity that run
found. A thousand readers of one feed with one token cost one check of it instead of a thousand.
"""
from nailgun_platform.whole_answer import answered

#: the environ key under which the server hands the requests of one batch the same dict
ENVIRON_KEY = "nailgun.shared_runs"


class SharedRuns:
    """WSGI middleware behind authentication (see the module): ``access(environ, rule)`` is None when the
    request has no identity or ``rule`` refuses it, else whether it sees secrets."""

    def __init__(self, app, routes, access):
        self.app = app
        self.access = access
        #: the application's routes (``routing.Routes``), and by their position the read rules of shareable ones
        self.routes = routes
        self._rules = [entry["handler"].policy_rule("GET") if entry.get("shareable") else None
                       for entry in routes.routes]

    def _key(self, environ):
        found = self.routes.read_key(environ, self._rules, self.access)
        return None if found is None else (found[1], environ.get("HTTP_IF_NONE_MATCH"))

    def __call__(self, environ, start_response):
        batch = environ.get(ENVIRON_KEY)
        key = self._key(environ) if batch is not None else None
        if key is None:
            return self.app(environ, start_response)
        answer = batch.get(key)
        if answer is None:
            answer = batch[key] = answered(self.app, environ)
        status, headers, body = answer
        start_response(status, list(headers))
        return [body]


class IdenticalRuns:
    """WSGI middleware in front of authentication (see the module): ``kept`` are the environ keys the run
    sets that the layers outside read (the identity), ``per_request`` those of the environ that differ for
    every request and that the run does not read (the request id)."""

    def __init__(self, app, kept, per_request):
        self.app = app
        self.kept = tuple(kept)
        self.per_request = frozenset(per_request)

    def _key(self, environ):
        if environ.get("REQUEST_METHOD") != "GET" or environ.get("CONTENT_LENGTH") not in (None, "", "0"):
            return None
        # every text the server put in the environ: what the client sent, its address, the server's names
        return IdenticalRuns, tuple(sorted((name, value) for name, value in environ.items()
                                           if type(value) is str and name not in self.per_request))

    def __call__(self, environ, start_response):
        batch = environ.get(ENVIRON_KEY)
        key = self._key(environ) if batch is not None else None
        if key is None:
            return self.app(environ, start_response)
        found = batch.get(key)
        if found is None:
            answer = answered(self.app, environ)
            found = batch[key] = answer, {name: environ[name] for name in self.kept if name in environ}
        (status, headers, body), kept = found
        environ.update(kept)
        start_response(status, list(headers))
        return [body]


def build(app, routes, access):
    """``app`` behind ``SharedRuns`` if a route (of ``routing.Routes``) is shareable."""
    if not any(entry.get("shareable") for entry in routes.routes):
        return app
    return SharedRuns(app, routes, access)
