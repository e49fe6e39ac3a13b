"""The web.py application: core routes plus every extension's, under /api/v1 and /api.

Every request passes through ``handle_request`` before its handler. It is the one
place for what applies to all of them: the per-request database transaction (commit
on success, roll back on any error), turning every error into a JSON body (a database
that is down or not migrated is the deployment's fault: 503 with ``Retry-After``).
Authentication wraps the whole application (``nailgun_host.auth.middleware``), answers of
routes that declare a fingerprint may be replayed from memory (``nailgun_platform.read_cache``), and each
handler asks the policy before it runs (``api.base.BaseHandler``). The body size cap is enforced where the
body is read (``api.base.request_body``).
"""
import gc
import json
import logging
import urllib.parse

import sqlalchemy.exc
import web
from oslo_serialization import jsonutils

from nailgun_host import auth, errors, policy, request_log, state_reader, stats, validation
from nailgun_host.api import base
from nailgun_host.api.base import read_access
from nailgun_host.api.meta import APIRootHandler
from nailgun_host.auth import middleware as auth_middleware
from nailgun_host.db import db, expect_writes, get_engine, migration, sealed, statement_reader
from nailgun_host.extensions import get_all_extensions
from nailgun_host.settings import settings
from nailgun_host.urls import URLS
from nailgun_platform import read_cache, routing, shared_runs, whole_answer
from nailgun_platform.secrets import keys

LOG = logging.getLogger(__name__)
PREFIXES = ("/api/v1", "/api")
#: longer paths are refused before routing: the document routes' patterns take time quadratic in the
#: length (a 40 KB path cost 5 s of CPU); the longest real one (levels of 1024, a name of 255) is far shorter
MAX_PATH_LENGTH = 4096
JSON = "application/json"

web.config.debug = False

#: errors of a database that is unreachable, gone away, busy or without its tables
_DATABASE_FAULTS = (sqlalchemy.exc.OperationalError, sqlalchemy.exc.InterfaceError,
                    sqlalchemy.exc.ProgrammingError, sqlalchemy.exc.DisconnectionError,
                    sqlalchemy.exc.TimeoutError)


def collect_routes(extensions):
    """The URL map entries of the core and the extensions; handler names must be unique."""
    routes = list(URLS)
    for extension in extensions:
        routes.extend(extension.urls)
    handlers = {}
    for entry in routes:
        handler = entry["handler"]
        known = handlers.setdefault(handler.__name__, handler)
        if known is not handler:
            raise RuntimeError(
                "Two handlers are named {0}: {1} and {2}".format(
                    handler.__name__, known.__module__, handler.__module__))
    return routes, handlers


#: PostgreSQL's serialization_failure and deadlock_detected: a race lost, not a fault
CONCURRENCY_STATES = ("40001", "40P01")


def _json_error(code, message, errors_list=(), headers=None):
    headers = dict(headers or {})
    headers["Content-Type"] = JSON
    return web.HTTPError(base.status_line(code), headers,
                         json.dumps({"message": message, "errors": list(errors_list)}))


def _drop_header(name):
    web.ctx.headers = [(k, v) for k, v in web.ctx.headers if k.lower() != name.lower()]


def _jsonify_http_error(exc):
    """Give web.py's own errors (HTML bodies) a JSON body instead."""
    content_type = dict((k.lower(), v) for k, v in web.ctx.headers).get("content-type", "")
    if content_type.startswith(JSON) or web.ctx.status[:1] in "23":
        return exc
    _drop_header("Content-Type")
    web.header("Content-Type", JSON)
    text = exc.data.decode() if isinstance(exc.data, bytes) else str(exc.data or "")
    message = web.ctx.status.split(" ", 1)[-1] if "<" in text or not text.strip() else text.strip()
    exc.data = json.dumps({"message": message, "errors": []})
    return exc


def _serialize(result):
    """Handlers return data, which becomes JSON (a str too); bytes are sent as they are."""
    if isinstance(result, bytes):
        return result
    if result is None and web.ctx.status.startswith(("204", "304")):
        return b""
    _drop_header("Content-Type")
    web.header("Content-Type", JSON)
    return jsonutils.dumps(result)


def error_response(exc):
    """The JSON HTTP error for an exception raised while handling a request."""
    if isinstance(exc, web.HTTPError):
        return _jsonify_http_error(exc)
    if isinstance(exc, errors.NailgunError):
        _drop_header("Content-Type")
        return _json_error(exc.status, exc.message, exc.errors, exc.headers)
    if isinstance(exc, sqlalchemy.exc.DBAPIError) and getattr(exc.orig, "sqlstate", None) in CONCURRENCY_STATES:
        # the database chose this request as the loser of a race (deadlock, serialization): nothing was written
        return _json_error(409, "The request collided with a concurrent one; nothing was changed: try again",
                           headers={"Retry-After": "1"})
    if isinstance(exc, keys.KeyManagerUnavailable):
        LOG.error("Refusing %s %s: %s", web.ctx.method, web.ctx.path, exc)
        fault = errors.ServiceUnavailable(sealed.KEY_MANAGER_MESSAGE)
        return _json_error(fault.status, fault.message, headers=fault.headers)
    if isinstance(exc, (keys.KeyRepositoryError, keys.UndecryptableValue)):
        LOG.error("Refusing %s %s: %s", web.ctx.method, web.ctx.path, exc)
        return _json_error(503, "The server cannot read its secrets' keys; an operator must fix them (the key "
                           "repository, or the key manager's objects)")
    if isinstance(exc, sqlalchemy.exc.IntegrityError):
        # The database's words name tables and constraints (and its DETAIL line, values):
        # the client gets none of them, the log only the first line, without SQL or parameters.
        LOG.debug("Integrity error in %s %s: %s", web.ctx.method, web.ctx.path, errors.first_line(exc))
        return _json_error(409, "The request conflicts with the stored data")
    if isinstance(exc, _DATABASE_FAULTS):
        return _database_fault(exc)
    if isinstance(exc, OverflowError):  # SQLite's DataError: a number beyond its 64-bit integers
        return _json_error(400, "The request contains invalid data", [str(exc)])
    if isinstance(exc, sqlalchemy.exc.DataError):
        return _json_error(400, "The request contains invalid data", [errors.first_line(exc)])
    LOG.error("Unhandled error in %s %s", web.ctx.method, web.ctx.path, exc_info=exc)
    return _json_error(500, "Internal server error")


def _database_fault(exc):
    """503 when the database is down or not migrated (a fault of the deployment, not of the request).

    Which one is asked of the database itself, on a new connection: a missing table on a
    database at head is a bug (500), and so is any other ProgrammingError.
    """
    fault, _state = migration.check_database(get_engine())
    if fault is None and not isinstance(exc, sqlalchemy.exc.ProgrammingError):
        LOG.warning("Database error in %s %s: %s", web.ctx.method, web.ctx.path,
                    errors.first_line(exc))
        fault = errors.ServiceUnavailable(migration.UNAVAILABLE_MESSAGE)
    if fault is None:
        LOG.error("Unhandled error in %s %s", web.ctx.method, web.ctx.path, exc_info=exc)
        return _json_error(500, "Internal server error")
    return _json_error(fault.status, fault.message, fault.errors, fault.headers)


def _rollback():
    """Roll the request's transaction back; a connection that is already gone has nothing to undo."""
    try:
        db.rollback()
    except sqlalchemy.exc.SQLAlchemyError as exc:
        LOG.warning("Rollback failed: %s", errors.first_line(exc))


def _remove():
    try:
        db.remove()
    except sqlalchemy.exc.SQLAlchemyError as exc:
        LOG.warning("Closing the session failed: %s", errors.first_line(exc))


def handle_request(handler):
    """The processor every request goes through: one transaction, JSON everywhere."""
    expect_writes(web.ctx.method not in ("GET", "HEAD"))
    try:
        sealed.keys_checked(get_engine())
        body = _serialize(handler())
        db.commit()
        return body
    except web.HTTPError as exc:
        if web.ctx.status[:1] in "23":
            db.commit()
        else:
            _rollback()
        raise _jsonify_http_error(exc)
    except Exception as exc:
        _rollback()
        raise error_response(exc)
    finally:
        _remove()
        expect_writes(True)


class NailgunApplication(web.application):
    """web.py's application whose errors, its own included, are JSON, and which remembers the route of each path
    (``_match``)."""

    def _match(self, mapping, value):
        """web.py's route of the path ``value`` (the handler's name and the URL's groups), remembered per path as
        ``routing.Routes`` does: web.py tries every route's pattern in turn, which was a tenth of a computed read
        of a ConfigDB document."""
        if mapping is not self.mapping or len(value) > routing.REMEMBERED_LENGTH:
            return super()._match(mapping, value)
        remembered = self.__dict__.setdefault("_matched", {})
        found = remembered.get(value)
        if found is None:
            found = super()._match(mapping, value)
            if len(remembered) >= routing.REMEMBERED:
                remembered.clear()
            remembered[value] = found
        handler, groups = found
        return handler, list(groups) if groups is not None else None

    def handle(self):
        try:
            return super().handle()
        except web.HTTPError:
            raise
        except Exception as exc:
            _rollback()
            raise error_response(exc)

    def notfound(self):
        return _json_error(404, "Resource not found: {0}".format(web.ctx.path))

    def internalerror(self):
        _rollback()
        return _json_error(500, "Internal server error")


def build_app(extensions=None):
    """The application over the given extensions (default: those stevedore finds).

    The server's root ``/`` answers like ``/api/v1/``: it is where a client lands first.
    """
    extensions = get_all_extensions() if extensions is None else extensions
    routes, handlers = collect_routes(extensions)
    mapping = ["/", APIRootHandler.__name__]
    for prefix in PREFIXES:
        for entry in routes:
            mapping.extend((prefix + entry["uri"], entry["handler"].__name__))
    app = NailgunApplication(tuple(mapping), handlers, autoreload=False)
    app.add_processor(web.loadhook(lambda: setattr(web.ctx, "nailgun_routes", routes)))
    app.add_processor(handle_request)
    return app


def settle():
    """Once a server process has built its application: all it holds lives as long as the process, so it goes
    out of the garbage collector's reach (``gc.freeze``) and a full collection walks only what requests made
    (one during a move of 200 nodes used to walk the whole heap: 130-250 ms)."""
    gc.collect()
    gc.freeze()


#: (raw URI, script name) -> the path decoded from it, for URIs of at most REMEMBERED_LENGTH (forgotten all at once)
_decoded = {}
REMEMBERED_URIS, REMEMBERED_LENGTH = 4096, 2048


def _decoded_path(environ):
    """PATH_INFO decoded from the raw request URI, ``%2F`` included, whatever the server.

    gunicorn and uwsgi decode ``%2F`` to ``/``; cheroot (``nailgun-api``) keeps it
    encoded and decodes ``%25`` so that ``a%2Fb`` and ``a%252Fb`` meet. Decoding the raw
    URI once, as gunicorn does, makes every server route a URL the same way.
    """
    raw = environ.get("RAW_URI") or environ.get("REQUEST_URI")
    if not raw:
        return environ.get("PATH_INFO", "")
    script = environ.get("SCRIPT_NAME", "")
    decoded = _decoded.get((raw, script))
    if decoded is None:  # the same few URIs come on every hot read: each decoded once
        path = raw.split("?", 1)[0] if raw.startswith("/") else urllib.parse.urlsplit(raw).path
        path = urllib.parse.unquote_to_bytes(path).decode("latin-1")
        decoded = path[len(script):] if script and path.startswith(script) else path
        if len(raw) <= REMEMBERED_LENGTH:
            if len(_decoded) >= REMEMBERED_URIS:
                _decoded.clear()
            _decoded[raw, script] = decoded
    return decoded


def build_wsgi(extensions=None):
    """The WSGI callable: authentication (``AUTH`` of the settings) in front of ``/metrics`` and the
    application, all inside the request log and statistics, which see every answer. Identical requests that
    ``nailgun-feed`` runs in one batch share one run of authentication and what it guards
    (``shared_runs.IdenticalRuns``).

    Methods web.py would refuse with an HTML page get a JSON 405, a malformed ``Content-Length`` a JSON 400.
    """
    policy.enforcer()  # a policy file that cannot be read or parsed stops the server here
    sealed.check_keys_at_start(get_engine())  # so do keys that would read this database's secrets as garbage
    extensions = get_all_extensions() if extensions is None else extensions
    for extension in extensions:
        extension.check_settings()  # and settings an extension cannot work with
    routes = routing.Routes(collect_routes(extensions)[0], PREFIXES)
    wsgi = shared_runs.IdenticalRuns(auth_middleware.build(
        stats.build(shared_runs.build(read_cache.build(whole_answer.measured(build_app(extensions).wsgifunc()),
                                                       routes, statement_reader, read_access, state_reader.StateReader),
                                      routes, read_access),
                    settings["STATS"]),
        settings["AUTH"]), kept=(auth.ENVIRON_KEY, "REMOTE_USER"), per_request=(request_log.ENVIRON_KEY,))

    def application(environ, start_response):
        environ["PATH_INFO"] = _decoded_path(environ)
        if len(environ["PATH_INFO"]) > MAX_PATH_LENGTH:
            body = json.dumps({"message": "The URL's path is longer than {0} characters".format(MAX_PATH_LENGTH),
                               "errors": []})
            start_response("414 URI Too Long", [("Content-Type", JSON), ("Content-Length", str(len(body)))])
            return [body.encode()]
        try:
            validation.content_length(environ)  # a server that passes a malformed one on: 400 on every route
        except errors.InvalidData as exc:
            body = json.dumps({"message": exc.message, "errors": []})
            start_response("400 Bad Request", [("Content-Type", JSON), ("Content-Length", str(len(body)))])
            return [body.encode()]
        method = environ.get("REQUEST_METHOD", "")
        if method != method.upper() or method not in base.HTTP_METHODS + ("HEAD", "OPTIONS"):
            body = json.dumps({"message": "Method {0} is not allowed".format(method), "errors": []})
            start_response("405 Method Not Allowed", [
                ("Content-Type", JSON), ("Content-Length", str(len(body))),
                ("Allow", ", ".join(base.HTTP_METHODS + ("HEAD",)))])
            return [body.encode()]
        body = wsgi(environ, start_response)
        if method == "HEAD":  # headers only, whatever the server (cheroot would send the body)
            if hasattr(body, "close"):
                body.close()
            return []
        return body

    return request_log.RequestLog(application, stats.record)
