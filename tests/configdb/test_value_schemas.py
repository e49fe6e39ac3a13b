"""A definition's schema is checked when written and is safe to use (issue 9, items 2 and 9's pattern)."""
import types
import urllib.request

import jsonschema._keywords
import jsonschema._utils
import pytest
import sqlalchemy as sa

from nailgun_ext_configdb.models import ResourceDefinition
from nailgun_ext_configdb.objects import value_schema
from tests.configdb.conftest import API

#: schemas refused when a definition is written, with a word the message must carry
BAD_SCHEMAS = [
    ({"$ref": "http://127.0.0.1:9/schema.json"}, "does not resolve"),
    ({"properties": {"a": {"$ref": "file:///etc/hostname"}}}, "does not resolve"),
    ({"$ref": "other.json#/definitions/a"}, "does not resolve"),
    ({"$ref": "http://json-schema.org/draft-04/schema#"}, "does not resolve"),
    ({"$ref": "#/definitions/missing"}, "does not resolve"),
    ({"$ref": "#"}, "cycle"),
    ({"allOf": [{"$ref": "#"}]}, "cycle"),
    ({"not": {"$ref": "#"}}, "cycle"),
    ({"properties": {"child": {"$ref": "#"}}}, "cycle"),
    ({"definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"anyOf": [{"$ref": "#/definitions/a"}]}},
      "$ref": "#/definitions/a"}, "cycle"),
    ({"definitions": dict([("d0", {"type": "integer"})] + [
        ("d{0}".format(i), {"allOf": [{"$ref": "#/definitions/d{0}".format(i - 1)}] * 2}) for i in range(1, 30)]),
      "$ref": "#/definitions/d29"}, "too large"),
    ({"definitions": dict([("d0", {"type": "integer"})] + [
        ("d{0}".format(i), {"$ref": "#/definitions/d{0}".format(i - 1)}) for i in range(1, 150)]),
      "$ref": "#/definitions/d149"}, "deeper"),
    ({"properties": {"a": {"pattern": "(a)\\1"}}}, "RE2"),
    ({"patternProperties": {"(?=x)": {}}}, "RE2"),
    ({"type": "nonsense"}, "not a valid JSON schema"),
]


def _content(schema):
    return {"schema": schema}


@pytest.fixture
def component(cdb):
    return cdb.component("c", [])


@pytest.fixture
def no_fetching(monkeypatch):
    """Any attempt to open a URL fails the test."""
    def refuse(*args, **kwargs):
        raise AssertionError("a schema reference was retrieved: {0}".format(args))
    monkeypatch.setattr(urllib.request, "urlopen", refuse)


@pytest.mark.parametrize("schema, word", BAD_SCHEMAS)
def test_a_bad_schema_is_refused_on_every_write_of_a_definition(cdb, component, no_fetching, schema, word):
    created = cdb.app.post_json(API + "/resource_definitions", {"name": "ok", "component_id": component["id"]},
                                status=201).json
    url = API + "/resource_definitions/{0}".format(created["id"])
    answers = [
        cdb.app.post_json(API + "/resource_definitions", {"name": "r", "component_id": component["id"],
                                                          "content": _content(schema)}, status=400),
        cdb.app.put_json(url, {"content": _content(schema)}, status=400),
        cdb.app.patch_json(url, {"content": _content(schema)}, status=400),
        cdb.app.post_json(API + "/components", {"name": "d", "resource_definitions": [
            {"name": "r", "content": _content(schema)}]}, status=400),
        cdb.app.put_json(API + "/components/{0}".format(component["id"]), {"resource_definitions": [
            {"name": "r2", "content": _content(schema)}]}, status=400),
    ]
    for resp in answers:
        assert resp.json["message"].startswith("content.schema ") and word in resp.json["message"]
        assert resp.json["errors"] == []
    assert cdb.app.get(API + "/resource_definitions").json == [created]
    assert [c["name"] for c in cdb.app.get(API + "/components").json] == ["c"]


@pytest.mark.parametrize("schema, good, bad", [
    ({"definitions": {"port": {"type": "integer", "maximum": 65535}},
      "properties": {"a": {"$ref": "#/definitions/port"}, "b": {"items": {"$ref": "#/definitions/port"}}}},
     {"a": 1, "b": [2]}, {"b": [70000]}),
    ({"id": "http://example.com/root#", "definitions": {"x": {"type": "string"}},
      "properties": {"a": {"$ref": "#/definitions/x"}}}, {"a": "s"}, {"a": 1}),
    ({"properties": {"name": {"pattern": "^(a+)+$"}}}, {"name": "aaa"}, {"name": "a" * 5000 + "b"}),
    ({"patternProperties": {"^(x+)+$": {"type": "integer"}}, "additionalProperties": False},
     {"xx": 1}, {"x" * 5000 + "y": 1}),
])
def test_local_references_and_patterns_validate_values(cdb, component, no_fetching, schema, good, bad):
    rid = cdb.app.post_json(API + "/resource_definitions", {"name": "r", "component_id": component["id"],
                                                            "content": _content(schema)}, status=201).json["id"]
    env = cdb.environment(["c"])
    cdb.put(env["id"], rid, good)
    resp = cdb.put(env["id"], rid, bad, status=400)
    assert resp.json["errors"] == []
    assert cdb.get(env["id"], rid).json == good


def test_patterns_are_matched_by_re2_never_by_backtracking_re(cdb, component, monkeypatch):
    """Python's re backtracks catastrophically on ^(a+)+$; jsonschema's own keywords use it."""
    schema = {"properties": {"name": {"pattern": "^(a+)+$"}}, "patternProperties": {"^(k+)+$": {}},
              "additionalProperties": False}
    rid = cdb.app.post_json(API + "/resource_definitions", {"name": "r", "component_id": component["id"],
                                                            "content": _content(schema)}, status=201).json["id"]
    env = cdb.environment(["c"])
    backtracking = types.SimpleNamespace(search=lambda *args: pytest.fail("re.search was used"))
    monkeypatch.setattr(jsonschema._keywords, "re", backtracking)
    monkeypatch.setattr(jsonschema._utils, "re", backtracking)
    cdb.put(env["id"], rid, {"name": "a" * 64, "kkk": 1})
    assert "does not match" in cdb.put(env["id"], rid, {"name": "a" * 64 + "!"}, status=400).json["message"]


def test_a_bad_schema_stored_before_the_check_answers_409_not_500(cdb, component, session, no_fetching):
    rid = cdb.app.post_json(API + "/resource_definitions", {"name": "r", "component_id": component["id"]},
                            status=201).json["id"]
    env = cdb.environment(["c"])
    session.execute(sa.update(ResourceDefinition).where(ResourceDefinition.id == rid).values(
        content={"schema": {"properties": {"a": {"$ref": "#"}}}}))
    session.commit()
    resp = cdb.put(env["id"], rid, {"a": {"a": {}}}, status=409)
    assert "cycle" in resp.json["message"] and "Resource definition {0}".format(rid) in resp.json["message"]
    assert cdb.get(env["id"], rid).json == {}


def test_check_accepts_diamonds_and_repeated_local_references():
    shared = {"type": "integer"}
    schema = {"definitions": {"n": shared, "pair": {"items": [{"$ref": "#/definitions/n"}] * 2}},
              "properties": {"a": {"$ref": "#/definitions/pair"}, "b": {"$ref": "#/definitions/pair"}}}
    assert value_schema.check(schema) is schema
