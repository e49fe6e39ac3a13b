"""Hostile input never ends in a 500, and is refused the same way on SQLite and PostgreSQL."""
import pytest

from nailgun_ext_configdb.models import Document
from tests.configdb.conftest import API

BIG = "9" * 30


@pytest.mark.parametrize("url, status", [
    ("/environments/" + BIG, 404),
    ("/components/" + BIG, 404),
    ("/resource_definitions/" + BIG, 404),
    ("/environments/1/resources/" + BIG + "/values", 404),
    ("/environments/1/resources/1/values?version=" + BIG, 400),
    ("/resource_definitions?component_id=" + BIG, 400),
    ("/environments/1/resources/1/values/diff?from=" + BIG, 400),
    ("/environments/1/resources/1/values?key=.", 404),
    ("/environments/1/resources/%ff/values", 404),
    ("/environments/1/nodes/%00/resources/1/values", 400),
    ("/environments/1/nodes/" + "x" * 2000 + "/resources/1/values", 400),
])
def test_hostile_reads(cdb, demo, url, status):
    resp = cdb.app.get(API + url, status=status)
    assert resp.json["message"]


@pytest.mark.parametrize("raw, message", [
    (b'{"a": "\\u0000"}', "Values must not contain"), (b'{"\\u0000": 1}', "Values must not contain"),
    (b'{"a": 1e999}', "Numbers must be finite"),
    (b'{"a": [NaN]}', "Invalid json received"), (b'{"a": -Infinity}', "Invalid json received"),
    (b'{"a": "\\udc00"}', "Invalid json received")])
def test_values_every_database_cannot_store_alike_are_400(cdb, demo, raw, message, session):
    resp = cdb.app.put(cdb.url(1, 1), raw, content_type="application/json", status=400)
    assert resp.json["message"].startswith(message)
    assert session.query(Document).count() == 0


@pytest.mark.parametrize("url, body", [
    ("/components", {"name": "a\u0000b"}),
    ("/environments", {"components": [], "hierarchy_levels": ["a\u0000"]}),
    ("/environments", {"components": [10 ** 20], "hierarchy_levels": []}),
    ("/environments", {"id": 10 ** 20, "components": [], "hierarchy_levels": []}),
    ("/components", {"name": "x" * 300}),
    ("/components", {"name": "\ud800"}),
])
def test_hostile_creates_are_400(cdb, url, body):
    assert cdb.app.post_json(API + url, body, status=400).json["message"]


def test_huge_list_index_in_keys_set_is_not_a_500(cdb, demo):
    cdb.put(1, 1, {"a": [1]})
    cdb.app.patch_json(cdb.url(1, 1) + "/keys/set", [["a", 10 ** 30, 1]], status=404)


def _nested(depth):
    return ('{"a": ' * depth + "1" + "}" * depth).encode()


def _deep(key, depth):
    value = {}
    for _ in range(depth):
        value = {key: value}
    return value


@pytest.mark.parametrize("depth", [900, 5000])
def test_a_deeply_nested_document_is_400_and_stores_nothing(cdb, demo, session, depth):
    resp = cdb.app.put(cdb.url(1, 1), _nested(depth), content_type="application/json", status=400)
    assert resp.json["message"]
    assert session.query(Document).count() == 0


def test_keys_set_cannot_nest_a_document_too_deeply(cdb, demo, session):
    cdb.put(1, 1, {"a": 1})
    cdb.app.patch_json(cdb.url(1, 1) + "/keys/set", [["b", _deep("a", 900)]], status=400)
    assert cdb.get(1, 1).json == {"a": 1}


def test_a_document_nested_100_deep_is_stored(cdb, demo):
    cdb.app.put(cdb.url(1, 1), _nested(100), content_type="application/json", status=204)
    assert cdb.get(1, 1, query="key=" + ".".join(["a"] * 100)).json == 1


@pytest.mark.parametrize("content", [{"schema": _deep("not", 400)}, _deep("a", 900)])
def test_a_deeply_nested_definition_content_is_400(cdb, demo, session, content):
    component, _ = demo
    cdb.app.post_json(API + "/resource_definitions", {"name": "deep", "component_id": component["id"],
                                                      "content": content}, status=400)
    names = [d["name"] for d in cdb.app.get(API + "/resource_definitions").json]
    assert sorted(names) == ["resource1", "slashed/resource"]
