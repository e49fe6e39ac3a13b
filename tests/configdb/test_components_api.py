"""Components and resource definitions over HTTP."""
import pytest

from tests.configdb.conftest import API


def test_create_component_with_definitions(cdb):
    body = cdb.component("fuel", ["astute", "override/plugins", {"name": "globals", "content": {"k": 1}}])
    assert body["id"] and body["name"] == "fuel"
    assert [(r["name"], r["component_id"], r["content"]) for r in body["resource_definitions"]] == [
        ("astute", body["id"], {}), ("override/plugins", body["id"], {}), ("globals", body["id"], {"k": 1})]
    assert all(isinstance(r["id"], int) for r in body["resource_definitions"])
    assert cdb.app.get(API + "/components/{0}".format(body["id"])).json == body
    assert cdb.app.get("/api/config/components").json == [body]


def test_component_content_defaults_to_empty_object(cdb):
    body = cdb.app.post_json(API + "/components", {"name": "c", "resource_definitions": [{"name": "r"}]},
                             status=201).json
    assert body["resource_definitions"][0]["content"] == {}


def test_duplicate_component_name_is_409(cdb):
    cdb.component("dup")
    resp = cdb.app.post_json(API + "/components", {"name": "dup"}, status=409)
    assert "already exists" in resp.json["message"]
    assert len(cdb.app.get(API + "/components").json) == 1


@pytest.mark.parametrize("body", [{}, {"name": ""}, {"name": 5}, {"name": "x", "resource_definitions": [{}]},
                                  {"name": "x", "bogus": 1}, [1]])
def test_malformed_component_is_400(cdb, body):
    resp = cdb.app.post_json(API + "/components", body, status=400)
    assert resp.json["message"]
    assert cdb.app.get(API + "/components").json == []


def test_invalid_json_is_400(cdb):
    resp = cdb.app.post(API + "/components", "{nope", content_type="application/json", status=400)
    assert resp.json["message"] == "Invalid json received"


def test_duplicate_resource_in_one_component_is_409_and_nothing_is_created(cdb):
    cdb.app.post_json(API + "/components", {"name": "c", "resource_definitions": [{"name": "r"}, {"name": "r"}]},
                      status=409)
    assert cdb.app.get(API + "/components").json == []


def test_update_component_renames_moves_and_creates_definitions_keeping_unlisted(cdb):
    first = cdb.component("first", ["a", "b"])
    other = cdb.component("other", ["moved"])
    moved_id = other["resource_definitions"][0]["id"]
    url = API + "/components/{0}".format(first["id"])
    body = cdb.app.patch_json(url, {"name": "renamed", "resource_definitions": [
        {"id": moved_id}, {"name": "new", "content": {"x": 1}}]}).json
    assert body["name"] == "renamed"
    assert [r["name"] for r in body["resource_definitions"]] == ["a", "b", "moved", "new"]
    assert cdb.app.get(API + "/components/{0}".format(other["id"])).json["resource_definitions"] == []
    assert cdb.app.put_json(url, {"name": "other"}, status=409).json["message"]


def test_delete_component_deletes_its_definitions(cdb):
    body = cdb.component("gone", ["r"])
    cdb.app.delete(API + "/components/{0}".format(body["id"]), status=204)
    cdb.app.get(API + "/components/{0}".format(body["id"]), status=404)
    assert cdb.app.get(API + "/resource_definitions").json == []


def test_unknown_component_is_404_json(cdb):
    for method in ("get", "delete"):
        resp = getattr(cdb.app, method)(API + "/components/99", status=404)
        assert resp.json["message"] == "Component 99 not found"
    cdb.app.put_json(API + "/components/99", {"name": "x"}, status=404)


def test_resource_definition_crud(cdb):
    comp = cdb.component("c", [])
    other = cdb.component("o", [])
    body = cdb.app.post_json(API + "/resource_definitions",
                             {"name": "override/configuration/node", "component_id": comp["id"],
                              "content": {"schema": {"type": "object"}}}, status=201).json
    assert body == {"id": body["id"], "name": "override/configuration/node", "component_id": comp["id"],
                    "content": {"schema": {"type": "object"}}, "version": 1, "latest": True}
    url = API + "/resource_definitions/{0}".format(body["id"])
    assert cdb.app.get(url).json == body
    assert cdb.app.get(API + "/resource_definitions?component_id={0}".format(comp["id"])).json == [body]
    assert cdb.app.get(API + "/resource_definitions?component_id={0}".format(other["id"])).json == []
    changed = cdb.app.patch_json(url, {"name": "renamed", "component_id": other["id"]}).json
    assert (changed["name"], changed["component_id"], changed["content"]) == (
        "renamed", other["id"], {"schema": {"type": "object"}})
    # new content is a new version; the first stays as it was
    second = cdb.app.put_json(url, {"content": [1, 2]}).json
    assert (second["content"], second["version"], second["latest"], second["name"]) == ([1, 2], 2, True, "renamed")
    assert cdb.app.get(url).json == dict(changed, latest=False)
    cdb.app.delete(url, status=204)
    cdb.app.get(url, status=404)
    assert cdb.app.get(API + "/resource_definitions").json == [second]


@pytest.mark.parametrize("body, status", [
    ({"name": "r"}, 400),
    ({"name": "r", "component_id": "x"}, 400),
    ({"name": "r", "component_id": 999}, 404),
    ({"name": "r", "component_id": 1, "content": {"schema": {"type": "nonsense"}}}, 400),
])
def test_bad_resource_definitions(cdb, body, status):
    cdb.component("c", [])
    resp = cdb.app.post_json(API + "/resource_definitions", body, status=status)
    assert resp.json["message"]
    assert cdb.app.get(API + "/resource_definitions").json == []


def test_resource_definition_query_must_be_an_integer(cdb):
    cdb.app.get(API + "/resource_definitions?component_id=abc", status=400)


def test_renaming_a_definition_into_an_environment_clash_is_409(cdb):
    a = cdb.component("a", ["shared"])
    b = cdb.component("b", ["other"])
    cdb.environment([a["id"], b["id"]])
    other_id = b["resource_definitions"][0]["id"]
    resp = cdb.app.patch_json(API + "/resource_definitions/{0}".format(other_id), {"name": "shared"}, status=409)
    assert "define the resource shared" in resp.json["message"]
    cdb.app.post_json(API + "/resource_definitions", {"name": "shared", "component_id": b["id"]}, status=409)
    assert cdb.app.get(API + "/resource_definitions/{0}".format(other_id)).json["name"] == "other"


def test_list_endpoints_answer_405_for_unknown_methods(cdb):
    resp = cdb.app.delete(API + "/components", status=405)
    assert "GET" in resp.headers["Allow"] and resp.json["message"]


@pytest.mark.parametrize("item", [{}, {"content": {"x": 1}}])
def test_a_listed_definition_without_id_or_name_is_400(cdb, item):
    """An item of a component update names the definition to change (id) or to create (name)."""
    component = cdb.component("c", ["a"])
    url = API + "/components/{0}".format(component["id"])
    for method in (cdb.app.put_json, cdb.app.patch_json):
        method(url, {"resource_definitions": [item]}, status=400)
    assert cdb.app.get(url).json == component
