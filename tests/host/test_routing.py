"""The route the layers in front of the application find for a path (``nailgun_platform.routing``) is the one
web.py takes: for every route of the application, under both prefixes."""
import re

import pytest

from nailgun_host.app import PREFIXES, build_app, collect_routes
from nailgun_host.extensions import get_all_extensions
from nailgun_platform import routing


def _example(uri):
    """A path the route's pattern matches: each group a plain word or number."""
    path = re.sub(r"\((?:\?P<\w+>)?[^()]*\)", "1", uri)
    return path.replace("/?", "/").replace("?", "").replace("\\", "")


def test_each_path_takes_the_route_web_py_takes():
    extensions = get_all_extensions()
    entries, _handlers = collect_routes(extensions)
    routes = routing.Routes(entries, PREFIXES)
    app = build_app(extensions)
    checked = 0
    for entry in entries:
        for prefix in PREFIXES:
            path = prefix + _example(entry["uri"])
            handler, _args = app._match(app.mapping, path)
            if handler is None:
                continue  # a pattern this helper cannot make an example of
            index = routes.index(path)
            assert index is not None and entries[index]["handler"].__name__ == handler, path
            assert routes.index(path) == index  # remembered
            checked += 1
    assert checked >= len(entries)
    assert routes.index("/api/v1/no-such-route") is None and routes.index("/") is None


def test_the_path_web_py_routes():
    assert routing.web_path({"PATH_INFO": "/api/v1/x\xc3\xa9"}) == "/api/v1/x\xe9"  # UTF-8 bytes, as WSGI's latin-1
    assert routing.web_path({"PATH_INFO": "/api/v1/\xff"}) == "/api/v1/\xff"
    assert routing.web_path({"PATH_INFO": "/api/v1/x", "SERVER_SOFTWARE": "nginx/1.22"}) is None


def test_the_application_remembers_the_route_web_py_takes_for_a_path(monkeypatch):
    """``NailgunApplication._match`` is web.py's, asked once per path."""
    import web
    extensions = get_all_extensions()
    entries, _handlers = collect_routes(extensions)
    app = build_app(extensions)
    paths = [prefix + _example(entry["uri"]) for entry in entries for prefix in PREFIXES] + [
        "/api/v1/no-such-route", "/", "/api/v1/config/environments/1/nodes/n-1/resources/a/b/values"]
    expected = [web.application._match(app, app.mapping, path) for path in paths]
    assert [app._match(app.mapping, path) for path in paths] == expected
    monkeypatch.setattr(web.utils, "re_subm", lambda *args: pytest.fail("a route's pattern tried again"))
    assert [app._match(app.mapping, path) for path in paths] == expected
    handler, groups = app._match(app.mapping, paths[-1])
    groups.append("changed by its caller")
    assert app._match(app.mapping, paths[-1]) == expected[-1]
def test_the_read_cache_and_shared_runs_key_a_get_the_same_way():
    """``Routes.read_key``, the one key of both layers: a GET outside a session, of a route with a read rule, by an
    identity the rule lets in; the key says whether it sees secrets. Anything else is the application's."""
    entries = [{"uri": "/a/(\\d+)/?"}, {"uri": "/b/?"}]
    routes = routing.Routes(entries, PREFIXES)
    rules = ["read:a", None]
    asked = []

    def access(environ, rule):
        asked.append(rule)
        if environ.get("who") == "broken":
            raise RuntimeError("the policy file cannot be used")
        return {"admin": True, "reader": False}.get(environ.get("who"))

    def key(**environ):
        return routes.read_key(dict({"REQUEST_METHOD": "GET", "PATH_INFO": "/api/v1/a/7", "QUERY_STRING": "q",
                                     "who": "admin"}, **environ), rules, access)

    assert key() == (0, ("/api/v1/a/7", "q", True))
    assert key(who="reader", PATH_INFO="/api/a/7/") == (0, ("/api/a/7/", "q", False))
    assert asked == ["read:a", "read:a"]
    for refused in (dict(who="nobody"), dict(who="broken"), dict(REQUEST_METHOD="HEAD"), dict(REQUEST_METHOD="PUT"),
                    dict(HTTP_X_CONFIGURATION_SESSION="1"), dict(PATH_INFO="/api/v1/b"),
                    dict(PATH_INFO="/api/v1/c"), dict(SERVER_SOFTWARE="nginx/1.22")):
        assert key(**refused) is None, refused
