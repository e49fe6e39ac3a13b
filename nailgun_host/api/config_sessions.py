"""The routes of configuration sessions (seed 001), and the ``X-Configuration-Session`` header.

``session_routes(prefix, resolve)`` gives an environment's session routes; the host mounts them
under ``/clusters/<cluster_id>``, ConfigDB under ``/config/environments/<environment_id>``
(``resolve`` turns the URL's id into the session scope: a linked ConfigDB environment
resolves to its cluster's, so both prefixes see the same sessions).

| route | answer |
|---|---|
| POST ``<prefix>/configure`` (``{"ttl": s}`` optional) | 200 the new session |
| GET ``<prefix>/sessions`` | 200 ``{"sessions": [...]}``: the caller's open ones (everyone's for ``nailgun:admin``) |
| GET ``<prefix>/sessions/<session>`` | 200; 403 invalid (``errors``: its conflicts); 404; 400 another environment's; 403 another owner's |
| GET ``<prefix>/sessions/<session>/diff`` | 200 ``{"documents": [{"document", "patch"}]}`` current -> staged, masked |
| DELETE ``<prefix>/sessions/<session>`` | 200 abandoned; 403 deploying or deployed |
| POST ``<prefix>/sessions/<session>/deploy`` | 200 deployed; 403 not open; 409 documents changed since it opened |
| GET ``<prefix>/deployments`` | 200 ``{"deployments": [...]}`` newest first, diffs masked |

Header checks are the same on every route that honours it (``request_session``): an unknown or
malformed id 404, another environment's 400, another owner's 403, a write into a session that is
not open 403 naming its state. A read with the header of a session that is no longer open shows
the current state and says so in ``X-Configuration-Session-State``.
"""

HEADER = "X-Configuration-Session"
STATE_HEADER = "X-Configuration-Session-State"


def request_session(scope, write):
    """The session the request's header names, checked against ``scope`` and the identity; None without
    the header. For ``write`` it is locked (the caller already holds the environment's locks) and open."""
    raise NotImplementedError


def session_routes(prefix, resolve):
    """The session routes under ``prefix`` (a route template ending in the environment id placeholder);
    ``resolve(environment_id, lock)`` gives the ``config_session.Scope`` or raises 404."""
    raise NotImplementedError
