"""One id rule and one body reader for every route, core and extensions alike.

The routes come from the URL maps themselves (with the loaded extensions), so a route
added later is covered without touching this file.
"""
import json
import re
import urllib.parse

import pytest
import webtest
from hypothesis import example, given
from hypothesis import strategies as st

from nailgun_host import errors, urls, validation
from nailgun_host.extensions import get_all_extensions
from nailgun_host.validation import MAX_ID
from tests.host.test_app_errors import assert_json_error

BODY_METHODS = ("POST", "PUT", "PATCH")
#: request bodies no route may accept, and the one answer each gets wherever a body is read
BAD_BODIES = [
    (b"", "Empty request received"),
    (b"{not json", "Invalid json received"),
    (b"\xff\xfe", "Invalid json received"),
    (b'{"a": NaN}', "Invalid json received"),
    (b'{"a": "\\ud800"}', "Invalid json received"),
    (b'{"a": "\xed\xa0\x80"}', "Invalid json received"),  # an unpaired surrogate as raw UTF-8 bytes
    (b'{"a": 1e400}', "Numbers must be finite; one in the request is too large"),
    (b'[{"a": "x\\u0000"}]', "Values must not contain NUL characters"),
    (b'{"a": ' * 101 + b"1" + b"}" * 101, "Values must not nest deeper than 100 levels"),
]
#: ids no object can have: non-ASCII digits (Arabic-Indic 14, as a client sends them), beyond 32 bits, zero
BAD_IDS = [urllib.parse.quote("\u0661\u0664"), str(MAX_ID + 1), "9" * 30, "0"]


def all_routes():
    routes = list(urls.URLS)
    for extension in get_all_extensions():
        routes.extend(extension.urls)
    return routes


def methods(handler):
    return [m for m in handler.allowed_methods() if m != "HEAD"]


@pytest.fixture
def world(app, env):
    """One object of every kind a URL can name, and the values that fill every placeholder."""
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}])
    node = env.nodes[0]
    task = app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"])).json
    group = app.get("/api/v1/nodegroups/?cluster_id={0}".format(cluster["id"])).json[0]
    component = app.post_json("/api/v1/config/components", {
        "name": "fuel", "resource_definitions": [{"name": "astute"}]}).json
    environment = app.post_json("/api/v1/config/environments", {
        "id": cluster["id"], "components": [component["id"]], "hierarchy_levels": ["nodes"]}).json
    return {"cluster_id": cluster["id"], "release_id": cluster["release_id"], "node_id": node["id"],
            "task_id": task["id"], "nodegroup_id": group["id"], "component_id": component["id"],
            "resource_definition_id": component["resource_definitions"][0]["id"],
            "environment_id": environment["id"], "levels": "nodes/{0}/".format(node["id"]),
            "resource": component["resource_definitions"][0]["id"], "kind": "values", "operation": "set",
            "provider": "neutron", "path": "name", "session": "0" * 32}


def fill(template, values, **replaced):
    return "/api/v1" + re.sub(r"<([a-z_]+)>", lambda m: str(replaced.get(m.group(1), values[m.group(1)])),
                              template).replace("//", "/")


def body_routes():
    return [(entry["template"], method) for entry in all_routes()
            for method in methods(entry["handler"]) if method in BODY_METHODS]


def optional_body(template, method):
    """Whether the route's body may be left out (``optional_bodies``: POST configure's ``{"ttl"}``)."""
    return any(entry["template"] == template and method in getattr(entry["handler"], "optional_bodies", ())
               for entry in all_routes())


def test_the_routes_are_found():
    assert ("/clusters/<cluster_id>/model", "PATCH") in body_routes()
    assert ("/config/components", "POST") in body_routes()


def test_every_route_reading_json_answers_each_bad_body_alike(app, world):
    """A route either reads no body, or answers every bad one with the one message and writes nothing (one
    whose body is optional answers every bad one but the empty body so)."""
    differing = []
    for template, method in body_routes():
        url = fill(template, world)
        content_type = "application/json-patch+json" if template.endswith("/model") else "application/json"
        before = app.get("/api/v1/clusters/{0}/model".format(world["cluster_id"])).json
        reads_json = True if optional_body(template, method) else None
        for body, message in BAD_BODIES:
            if not body and optional_body(template, method):
                continue
            response = app.request(url, method=method, body=body, content_type=content_type, expect_errors=True)
            answer = (response.status_int, response.json.get("message"))
            if reads_json is None:
                reads_json = answer == (400, message)
            if (answer != (400, message)) if reads_json else (answer[0] >= 500 or answer[1] == message):
                differing.append((method, template, body[:20], answer))
        if reads_json:
            assert app.get("/api/v1/clusters/{0}/model".format(world["cluster_id"])).json == before
    assert differing == []


def id_routes():
    return [(entry["template"], method, name) for entry in all_routes()
            for name in re.findall(r"<([a-z_]*id)>", entry["template"])
            for method in methods(entry["handler"])]


def test_an_id_outside_the_rule_names_nothing_on_every_route(app, world):
    answers = {}
    for template, method, placeholder in id_routes():
        for bad_id in BAD_IDS:
            url = fill(template, world, **{placeholder: bad_id})
            response = app.request(url, method=method, body=b"{}", content_type="application/json",
                                   expect_errors=True)
            assert response.content_type == "application/json", (url, response.text)
            answers[method, url] = response.status_int
    assert {key: status for key, status in answers.items() if status != 404} == {}


def test_handlers_without_a_method_are_405_not_404(app, world):
    response = app.request("/api/v1/releases/{0}/deployment_tasks".format(world["release_id"]), method="DELETE",
                           expect_errors=True)
    assert_json_error(response, 405)


#: JSON documents whose strings may hold any code point, unpaired surrogates and NUL included
_JSON_TEXT = (st.text(st.characters() | st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\x00"]),
                      max_size=8)
              | st.sampled_from(["\ud800", "x\udfff", "\udbff\ud800", "\udbff\udc00", "\x00"]))
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                     | _JSON_TEXT,
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_JSON_TEXT, inner, max_size=4),
                     max_leaves=20)


def _strings(document):
    if isinstance(document, str):
        yield document
    elif isinstance(document, list):
        for item in document:
            yield from _strings(item)
    elif isinstance(document, dict):
        for key, item in document.items():
            yield key
            yield from _strings(item)


def _storable(text):
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # an unpaired surrogate
        return False
    return "\x00" not in text


@given(_JSON, st.booleans())
@example({"a": "\ud800"}, False)
@example(["\ud800\udc00"], True)
def test_a_body_is_decoded_only_when_every_database_can_store_it_as_sent(document, escaped):
    """Raw UTF-8 (surrogates as the bytes json.loads(bytes) lets through) or \\u escapes: one answer.

    A body is refused (400) exactly when a string in it holds an unpaired surrogate or a NUL;
    otherwise it decodes to the document that was sent.
    """
    body = json.dumps(document, ensure_ascii=escaped).encode("utf-8", "surrogatepass")
    sent = json.loads(body.decode("utf-8", "surrogatepass"))  # an escaped high+low pair is one character
    storable = all(_storable(text) for text in _strings(sent))
    try:
        decoded = validation.decode_json(body)
    except errors.InvalidData:
        assert not storable
        return
    assert storable and decoded == sent


@given(st.binary(max_size=64))
def test_any_bytes_are_a_document_or_a_400(body):
    try:
        decoded = validation.decode_json(body)
    except errors.InvalidData:
        return
    json.dumps(decoded, ensure_ascii=False).encode("utf-8")


#: what fills a placeholder naming nothing that exists: ids of nothing, a session id of the right form and
#: of none, and the URL's vocabulary (kinds, operations) as it is, which routing itself checks
NOTHING = {"levels": "nodes/4242/", "resource": "nothing", "kind": "values", "operation": "set",
           "provider": "neutron", "path": "name"}


@pytest.mark.parametrize("session_id", ["f" * 32, "no-such-session"])
def test_a_reader_is_refused_every_write_before_anything_is_looked_up(migrated_db, tmp_path, session_id):
    """Policy before lookup, on every route: a reader's write naming objects that do not exist is 403 (the
    rule it lacks), never a 404 telling what exists."""
    from nailgun_host.app import build_wsgi
    from nailgun_host.settings import settings
    from tests.auth import basic, write_users_file

    settings["AUTH"] = dict(settings["AUTH"], method="local", users_file=write_users_file(str(tmp_path / "u.yaml")))
    app = webtest.TestApp(build_wsgi())
    answers = {}
    for entry in all_routes():
        handler = entry["handler"]
        for method in methods(handler):
            if method == "GET" or handler.public or handler.policy_rule(method) == "nailgun:read":
                continue
            ids = {name: 4242 for name in re.findall(r"<([a-z_]*id)>", entry["template"])}
            url = fill(entry["template"], dict(NOTHING, session=session_id, **ids))
            response = app.request(url, method=method, body=b"{}", content_type="application/json",
                                   headers=basic("reader"), expect_errors=True)
            answers[method, entry["template"]] = response.status_int
    assert answers and {key: status for key, status in answers.items() if status != 403} == {}
