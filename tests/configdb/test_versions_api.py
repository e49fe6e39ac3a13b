"""Versions: every write is kept; history, diff, revert, as-of reads and retention."""
import jsonpatch
import pytest

from nailgun_host.settings import settings
from nailgun_ext_configdb.objects import document
from tests.configdb.conftest import API


@pytest.fixture
def rid(demo):
    return demo[0]["resource_definitions"][0]["id"]


def test_history_lists_versions_with_author_and_changed_keys(cdb, demo, rid):
    cdb.put(1, rid, {"a": 1, "n": {"x": 1}})
    cdb.put(1, rid, {"a": 1, "n": {"x": 2}, "b": 1}, headers={"X-Config-Author": "alice"})
    cdb.put(1, rid, {"other": 1}, kind="overrides")
    cdb.app.patch_json(cdb.url(1, rid) + "/keys/delete", [["a"]], headers={"X-Config-Author": "bob"})
    history = cdb.app.get(cdb.url(1, "resource1") + "/history").json
    assert [(h["version"], h["revision"], h["author"]) for h in history] == [
        (1, 1, "anonymous"), (2, 2, "alice"), (3, 4, "bob")]
    assert history[0]["changed_keys"] == ["/a", "/n"]
    assert sorted(history[1]["changed_keys"]) == ["/b", "/n/x"]
    assert history[2]["changed_keys"] == ["/a"]
    assert all(h["created_at"] for h in history)
    assert [h["version"] for h in cdb.app.get(cdb.url(1, rid, kind="overrides") + "/history").json] == [1]


def test_get_a_version_and_a_missing_one(cdb, demo, rid):
    cdb.put(1, rid, {"v": 1})
    cdb.put(1, rid, {"v": 2})
    assert cdb.get(1, rid, query="version=1").json == {"v": 1}
    assert cdb.get(1, rid, query="version=2&key=v").json == 2
    resp = cdb.get(1, rid, query="version=3", status=404)
    assert resp.json["message"].startswith("Cannot find a given version 3")
    cdb.get(1, rid, query="version=-1", status=400)


def test_effective_as_of_a_version_uses_the_environment_revision(cdb, demo, rid):
    cdb.put(1, rid, {"a": "root1", "b": "root1"})                       # revision 1
    cdb.put(1, rid, {"a": "node1"}, levels="nodes/1/")                  # revision 2, node v1
    cdb.put(1, rid, {"b": "override"}, kind="overrides")                # revision 3
    cdb.put(1, rid, {"a": "node2"}, levels="nodes/1/")                  # revision 4, node v2
    cdb.put(1, rid, {"a": "root2", "b": "root2", "c": 1})               # revision 5
    node = "nodes/1/"
    assert cdb.get(1, rid, node, query="effective&version=1").json == {"a": "node1", "b": "root1"}
    assert cdb.get(1, rid, node, query="effective&version=2").json == {"a": "node2", "b": "override"}
    assert cdb.get(1, rid, node, query="effective").json == {"a": "node2", "b": "override", "c": 1}
    lookup = cdb.get(1, rid, node, query="effective&version=1&show_lookup").json
    assert lookup == {"a": ["node1", "/nodes/1/", "values"], "b": ["root1", "/", "values"]}
    cdb.get(1, rid, node, query="effective&version=3", status=404)


def test_diff_is_an_rfc6902_patch(cdb, demo, rid):
    cdb.put(1, rid, {"a": 1, "n": {"x": 1}})
    cdb.put(1, rid, {"a": 1, "n": {"x": 2}, "b": [1]})
    cdb.put(1, rid, {"b": [1]})
    url = cdb.url(1, rid)
    patch = cdb.app.get(url + "/diff?from=1&to=2").json
    assert sorted(patch, key=lambda op: op["path"]) == [
        {"op": "add", "path": "/b", "value": [1]}, {"op": "replace", "path": "/n/x", "value": 2}]
    assert jsonpatch.apply_patch({"a": 1, "n": {"x": 1}}, cdb.app.get(url + "/diff?from=1").json) == {"b": [1]}
    assert cdb.app.get(url + "/diff?from=2&to=2").json == []
    cdb.app.get(url + "/diff", status=400)
    cdb.app.get(url + "/diff?from=1&to=9", status=404)


def test_revert_writes_a_new_version_equal_to_the_old_one(cdb, demo, rid):
    cdb.put(1, rid, {"v": 1})
    cdb.put(1, rid, {"v": 2})
    url = cdb.url(1, "resource1") + "/revert"
    resp = cdb.app.post_json(url, {"version": 1}, headers={"X-Config-Author": "ops"}, status=201)
    assert (resp.json["version"], resp.json["author"], resp.json["changed_keys"]) == (3, "ops", ["/v"])
    assert cdb.get(1, rid).json == {"v": 1}
    again = cdb.app.post_json(url, {"version": 1}, status=200)
    assert again.json["version"] == 3
    assert cdb.get(1, rid, query="version=2").json == {"v": 2}
    cdb.app.post_json(url, {"version": 7}, status=404)
    cdb.app.post_json(url, {"v": 1}, status=400)


def test_revert_of_nothing_stored_is_404(cdb, demo, rid):
    cdb.app.post_json(cdb.url(1, rid) + "/revert", {"version": 1}, status=404)


def test_retention_prunes_the_oldest_versions(cdb, demo, rid):
    settings["CONFIGDB"] = {"max_versions": 3}
    for value in range(5):
        cdb.put(1, rid, {"v": value})
    assert [h["version"] for h in cdb.app.get(cdb.url(1, rid) + "/history").json] == [3, 4, 5]
    cdb.get(1, rid, query="version=2", status=404)
    assert cdb.get(1, rid, query="version=3").json == {"v": 2}
    assert cdb.get(1, rid).json == {"v": 4}
    assert cdb.app.get(API + "/environments/1").json["revision"] == 5


def test_changed_keys_of_a_large_rewrite_are_cut_short():
    old = {"k{0}".format(i): i for i in range(500)}
    new = {"k{0}".format(i): -i for i in range(1, 500)}
    keys = document.changed_keys(old, new)
    assert len(keys) == document.MAX_CHANGED_KEYS + 1 and keys[-1] == "..."
    assert document.changed_keys({"a/b": {"x": 1, "y": [1]}}, {"a/b": {"x": 1, "y": [2]}, "n": None}) == [
        "/a~1b/y", "/n"]


def test_overrides_have_their_own_versions_diff_and_revert(cdb, demo, rid):
    cdb.put(1, rid, {"keep": 1})
    cdb.put(1, rid, {"o": 1}, levels="nodes/1/", kind="override")
    cdb.app.patch_json(cdb.url(1, rid, "nodes/1/", "override") + "/keys/set", [["o", 2]], status=204)
    url = cdb.url(1, "resource1", "nodes/1/", "overrides")
    assert [h["version"] for h in cdb.app.get(url + "/history").json] == [1, 2]
    assert cdb.app.get(url + "/diff?from=2&to=1").json == [{"op": "replace", "path": "/o", "value": 1}]
    assert cdb.app.post_json(url + "/revert", {"version": 1}, status=201).json["version"] == 3
    assert cdb.get(1, rid, "nodes/1/", query="effective").json == {"keep": 1, "o": 1}
    assert cdb.get(1, rid, "nodes/1/", kind="overrides", query="version=2").json == {"o": 2}
    assert [h["version"] for h in cdb.app.get(cdb.url(1, rid) + "/history").json] == [1]
