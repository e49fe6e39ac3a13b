"""Values and overrides over HTTP: storage, 308s, effective merge, lookup, keys, ETags."""
import pytest

from nailgun_ext_configdb.models import Document
from tests.configdb.conftest import API


@pytest.fixture
def rid(demo):
    return demo[0]["resource_definitions"][0]["id"]


def test_nothing_stored_reads_as_empty_object(cdb, demo, rid):
    resp = cdb.get(1, rid)
    assert resp.json == {} and resp.headers["ETag"].startswith('"')
    assert cdb.get(1, "resource1", kind="overrides").json == {}


@pytest.mark.parametrize("kind", ["values", "overrides", "override"])
def test_put_by_id_stores_and_get_by_name_reads(cdb, demo, rid, kind):
    resp = cdb.put(1, rid, {"a": {"b": 1}}, kind=kind)
    assert resp.status_int == 204 and resp.body == b""
    assert cdb.get(1, "resource1", kind=kind).json == {"a": {"b": 1}}
    other = "overrides" if kind == "values" else "values"
    assert cdb.get(1, rid, kind=other).json == {}


@pytest.mark.parametrize("levels, kind", [("", "values"), ("nodes/node-1.domain.tld/", "overrides"),
                                          ("nodes/1/", "override")])
def test_put_by_name_redirects_to_the_id_url_keeping_the_query(cdb, demo, levels, kind):
    slashed = demo[0]["resource_definitions"][1]["id"]
    url = cdb.url(1, "slashed/resource", levels, kind) + "?x=1"
    resp = cdb.app.put_json(url, {"k": "v"}, status=308, headers={"Host": "evil.example"})
    # a path: the client's Host header must not choose where the next PUT's body goes
    assert resp.headers["Location"] == cdb.url(1, slashed, levels, kind) + "?x=1"
    assert "evil" not in resp.text
    assert resp.json["message"]
    assert cdb.get(1, slashed, levels, kind).json == {}
    cdb.app.put_json(resp.headers["Location"], {"k": "v"}, status=204)
    assert cdb.get(1, "slashed/resource", levels, kind).json == {"k": "v"}


def test_redirect_on_the_short_mount(cdb, demo, rid):
    resp = cdb.app.put_json("/api/config/environments/1/resources/resource1/values", {}, status=308)
    assert resp.headers["Location"] == "/api/config/environments/1/resources/{0}/values".format(rid)


@pytest.mark.parametrize("body", [[1], "text", 1, None, True])
def test_put_anything_but_an_object_is_400(cdb, demo, rid, body, session):
    resp = cdb.app.put_json(cdb.url(1, rid), body, status=400)
    assert resp.json["message"] == "The body must be a JSON object"
    assert session.query(Document).count() == 0


@pytest.mark.parametrize("raw, message", [(b"", "Empty request received"), (b"{x", "Invalid json received")])
def test_put_malformed_is_400(cdb, demo, rid, raw, message):
    resp = cdb.app.put(cdb.url(1, rid), raw, content_type="application/json", status=400)
    assert resp.json["message"] == message


def test_put_equal_body_makes_no_new_version(cdb, demo, rid, session):
    cdb.put(1, rid, {"a": 1})
    cdb.put(1, rid, {"a": 1})
    assert len(cdb.app.get(cdb.url(1, rid) + "/history").json) == 1
    assert cdb.app.get(API + "/environments/1").json["revision"] == 1


def test_values_are_checked_against_the_definition_schema(cdb):
    schema = {"type": "object", "properties": {"port": {"type": "integer"}}, "required": ["port"]}
    comp = cdb.component("c", [{"name": "r", "content": {"schema": schema}}])
    env = cdb.environment(["c"])
    rid = comp["resource_definitions"][0]["id"]
    resp = cdb.app.put_json(cdb.url(env["id"], rid), {"port": "80"}, status=400)
    assert "'80' is not of type 'integer'" in resp.json["message"]
    cdb.put(env["id"], rid, {"port": 80})
    cdb.app.patch_json(cdb.url(env["id"], rid) + "/keys/delete", [["port"]], status=400)
    cdb.put(env["id"], rid, {"port": "partial overrides are not checked"}, kind="overrides")
    assert cdb.get(env["id"], rid).json == {"port": 80}


def test_unknown_data_source_is_404(cdb, demo):
    cdb.component("elsewhere", ["foreign"])
    for ref in ("nope", "foreign", "999"):
        resp = cdb.get(1, ref, status=404)
        assert resp.json["message"] == "Data source {0} is not supported in environment 1".format(ref)
    cdb.app.put_json(cdb.url(1, "nope"), {}, status=404)


@pytest.mark.parametrize("levels, message", [
    ("nodes/1/extra/2/", "can't be matched"),
    ("rack/1/", "Unexpected level name 'rack'. Expected 'nodes'."),
])
def test_levels_must_follow_the_hierarchy(cdb, demo, rid, levels, message):
    assert message in cdb.get(1, rid, levels, status=404).json["message"]
    cdb.app.put_json(cdb.url(1, rid, levels), {}, status=404)


def test_effective_merges_deeply_in_the_spec_order(cdb, demo, rid):
    cdb.put(1, rid, {"a": 1, "n": {"x": 1, "y": 1}, "gone": 1})
    cdb.put(1, rid, {"a": 2}, kind="overrides")
    cdb.put(1, rid, {"a": 3, "n": {"y": 3}, "gone": {"$unset": True}}, levels="nodes/1/")
    cdb.put(1, rid, {"n": {"z": 4}}, levels="nodes/1/", kind="overrides")
    assert cdb.get(1, rid, "nodes/1/", query="effective").json == {"a": 3, "n": {"x": 1, "y": 3, "z": 4}}
    assert cdb.get(1, rid, query="effective").json == {"a": 2, "n": {"x": 1, "y": 1}, "gone": 1}
    assert cdb.get(1, rid, "nodes/1/").json == {"a": 3, "n": {"y": 3}, "gone": {"$unset": True}}
    lookup = cdb.get(1, rid, "nodes/1/", query="effective&show_lookup").json
    assert lookup == {"a": [3, "/nodes/1/", "values"],
                      "n": {"x": [1, "/", "values"], "y": [3, "/nodes/1/", "values"],
                            "z": [4, "/nodes/1/", "overrides"]}}
    assert cdb.get(1, rid, "nodes/1/", query="effective&show_lookup&key=n.z").json == [4, "/nodes/1/", "overrides"]
    assert cdb.get(1, rid, query="effective&show_lookup&key=a").json == [2, "/", "overrides"]


def test_show_lookup_needs_effective(cdb, demo, rid):
    cdb.get(1, rid, query="show_lookup", status=400)


def test_key_in_dotted_and_pointer_forms(cdb, demo, rid):
    cdb.put(1, rid, {"a": {"b": [{"c": "deep"}]}, "x.y": 5})
    assert cdb.get(1, rid, query="key=a.b.0.c").json == "deep"
    assert cdb.get(1, rid, query="key=/a/b/0/c&effective").json == "deep"
    assert cdb.get(1, rid, query="key=/x.y").json == 5
    assert cdb.get(1, rid, query="key=a.b.1", status=404).json["message"] == "Key a.b.1 is not found"
    cdb.get(1, rid, query="key=nope&effective", status=404)
    cdb.get(1, rid, query="key=/~9", status=400)


def test_a_level_value_is_identified_by_its_whole_path(cdb):
    cdb.component("c", ["r"])
    env = cdb.environment(["c"], levels=["rack", "nodes"])
    cdb.put(env["id"], "1", {"where": "A"}, levels="rack/A/nodes/n1/")
    assert cdb.get(env["id"], "1", levels="rack/B/nodes/n1/").json == {}
    assert cdb.get(env["id"], "1", levels="rack/B/nodes/n1/", query="effective").json == {}
    assert cdb.get(env["id"], "1", levels="rack/A/nodes/n1/", query="effective").json == {"where": "A"}


def test_gets_never_write(cdb, demo, rid, session):
    for levels in ("", "nodes/a/", "nodes/b/"):
        for query in ("", "effective", "effective&show_lookup"):
            cdb.get(1, rid, levels, query=query)
        cdb.get(1, rid, levels, query="version=1", status=404)
        cdb.app.get(cdb.url(1, rid, levels) + "/history")
    assert session.query(Document).count() == 0
    assert cdb.app.get(API + "/environments/1").json["revision"] == 0


def test_etag_and_if_none_match(cdb, demo, rid):
    cdb.put(1, rid, {"a": 1})
    for query in ("", "effective", "effective&show_lookup", "key=a"):
        first = cdb.get(1, rid, query=query)
        tag = first.headers["ETag"]
        again = cdb.get(1, rid, query=query, headers={"If-None-Match": tag}, status=304)
        assert again.body == b"" and again.headers["ETag"] == tag
        cdb.get(1, rid, query=query, headers={"If-None-Match": '"other"'}, status=200)
    before = cdb.get(1, rid, "nodes/5/", query="effective").headers["ETag"]
    cdb.put(1, rid, {"a": 2}, kind="overrides")
    after = cdb.get(1, rid, "nodes/5/", query="effective", headers={"If-None-Match": before}, status=200)
    assert after.json == {"a": 2} and after.headers["ETag"] != before
    for url in ("/components", "/components/1", "/environments", "/environments/1", "/resource_definitions"):
        tag = cdb.app.get(API + url).headers["ETag"]
        cdb.app.get(API + url, headers={"If-None-Match": tag}, status=304)


def test_if_match_guards_every_write(cdb, demo, rid):
    empty_tag = cdb.get(1, rid).headers["ETag"]
    cdb.put(1, rid, {"a": 1}, headers={"If-Match": empty_tag})
    stale = empty_tag
    resp = cdb.put(1, rid, {"a": 2}, headers={"If-Match": stale}, status=412)
    assert resp.json["message"]
    url = cdb.url(1, rid)
    cdb.app.patch_json(url + "/keys/set", [["a", 3]], headers={"If-Match": stale}, status=412)
    cdb.app.post_json(url + "/revert", {"version": 1}, headers={"If-Match": stale}, status=412)
    assert cdb.get(1, rid).json == {"a": 1}
    current = cdb.get(1, rid).headers["ETag"]
    cdb.app.patch_json(url + "/keys/set", [["a", 3]], headers={"If-Match": current}, status=204)
    cdb.put(1, rid, {"a": 4}, headers={"If-Match": "*"})
    assert cdb.get(1, rid).json == {"a": 4}


@pytest.mark.parametrize("kind", ["values", "overrides"])
def test_keys_set_and_delete(cdb, demo, rid, kind):
    cdb.put(1, rid, {"a": {"b": 1}, "l": [1, 2]}, kind=kind)
    url = cdb.url(1, "resource1", kind=kind)
    cdb.app.patch_json(url + "/keys/set", [["a", "c", "d", 2], ["l", 0, "x"], ["top", None]], status=204)
    assert cdb.get(1, rid, kind=kind).json == {"a": {"b": 1, "c": {"d": 2}}, "l": ["x", 2], "top": None}
    cdb.app.patch_json(url + "/keys/delete", [["a", "b"], ["l", 1]], status=204)
    assert cdb.get(1, rid, kind=kind).json == {"a": {"c": {"d": 2}}, "l": ["x"], "top": None}
    cdb.app.put_json(url + "/keys/set", [["new", 1]], status=204)
    assert cdb.get(1, rid, kind=kind).json["new"] == 1


def test_keys_operations_are_all_or_nothing(cdb, demo, rid):
    cdb.put(1, rid, {"a": 1, "s": "x"})
    url = cdb.url(1, rid)
    cdb.app.patch_json(url + "/keys/delete", [["a"], ["missing"]], status=404)
    assert cdb.app.patch_json(url + "/keys/set", [["b", 1], ["s", "in", 2]], status=409).json["message"]
    cdb.app.patch_json(url + "/keys/set", [["only-key"]], status=400)
    cdb.app.patch_json(url + "/keys/set", {"a": 1}, status=400)
    assert cdb.get(1, rid).json == {"a": 1, "s": "x"}
    assert len(cdb.app.get(url + "/history").json) == 1


def test_there_is_no_mutating_keys_get(cdb, demo, rid):
    cdb.put(1, rid, {"a": 1})
    cdb.app.patch_json(cdb.url(1, rid) + "/keys/get", [["a"]], status=404)
    assert cdb.get(1, rid).json == {"a": 1}


def test_keys_set_on_nothing_stored_creates_the_document(cdb, demo, rid):
    cdb.app.patch_json(cdb.url(1, rid, "nodes/3/", "overrides") + "/keys/set", [["x", "y", 1]], status=204)
    assert cdb.get(1, rid, "nodes/3/", query="effective").json == {"x": {"y": 1}}


def test_every_error_is_json(cdb, demo, rid):
    for resp in (cdb.app.get(API + "/environments/1/resources/1/nothing", status=404),
                 cdb.app.post_json(cdb.url(1, rid), {}, status=405),
                 cdb.get(1, rid, query="version=abc", status=400)):
        assert resp.content_type == "application/json" and resp.json["message"]


@pytest.mark.parametrize("flag, effective", [("effective", True), ("effective=1", True), ("effective=true", True),
                                             ("effective=yes", True), ("effective=0", False),
                                             ("effective=false", False), ("effective=no", False)])
def test_flags_mean_what_they_say(cdb, demo, rid, flag, effective):
    cdb.put(1, rid, {"a": 1})
    cdb.put(1, rid, {"b": 2}, levels="nodes/1/")
    expected = {"a": 1, "b": 2} if effective else {"b": 2}
    assert cdb.get(1, rid, "nodes/1/", query=flag).json == expected


def test_a_flag_with_another_value_is_400(cdb, demo, rid):
    resp = cdb.get(1, rid, "nodes/1/", query="effective=maybe", status=400)
    assert "effective" in resp.json["message"]


def test_effective_etag_follows_exactly_the_merged_documents(cdb, demo, rid):
    cdb.put(1, rid, {"a": 1})
    node = "nodes/n1/"

    def tag(query="effective"):
        return cdb.get(1, rid, node, query=query).headers["ETag"]

    first = tag()
    assert tag() == first
    cdb.put(1, rid, {"elsewhere": 1}, levels="nodes/n2/")
    # another node's first data makes n1 a node the environment stores nothing for: the answer says so
    unknown = tag()
    assert unknown != first
    assert cdb.get(1, rid, node, query="effective").headers["X-Level-Unknown"] == "true"
    cdb.put(1, rid, {"elsewhere": 2}, levels="nodes/n2/")
    assert tag() == unknown  # another node's new version: n1's answer is the same
    cdb.app.patch_json(cdb.url(1, rid, node, "overrides") + "/keys/set", [["a", 2]])
    second = tag()
    assert second not in (first, unknown)
    cdb.app.post_json(cdb.url(1, rid) + "/revert", {"version": 1}, status=200)
    assert tag() == second
    cdb.put(1, rid, {"a": 3})
    assert tag() != second
    assert tag("effective&key=a") != tag()
    cdb.get(1, rid, node, query="effective", headers={"If-None-Match": second}, status=200)


def test_fuel_data_source_names_that_look_like_url_parts(cdb):
    names = ["override", "override/plugins", "override/configuration/node", "values"]
    comp = cdb.component("fuel", names)
    env = cdb.environment(["fuel"])
    ids = {r["name"]: r["id"] for r in comp["resource_definitions"]}
    for name in names:
        cdb.app.patch_json(cdb.url(env["id"], name, "nodes/1/", "override") + "/keys/set", [["from", name]])
        cdb.put(env["id"], ids[name], {"name": name}, levels="nodes/1/")
    for name in names:
        assert cdb.get(env["id"], name, "nodes/1/", query="effective").json == {"name": name, "from": name}
        assert cdb.get(env["id"], name, "nodes/1/", kind="override").json == {"from": name}
