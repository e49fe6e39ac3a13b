"""Extension loading, URL composition, callbacks and pipelines, through stevedore for real."""
import pytest
import requests

from nailgun_host import extensions
from nailgun_host.api.base import BaseHandler
from nailgun_host.app import build_app
from nailgun_host.db.models import Release
from tests.conftest import LiveServer
from tests.factories import EnvironmentManager
from tests.host.conftest import TOY_DIR
from tests.upgrade.conftest import ASSIGN, CLONE


def test_installed_extensions_are_listed(app):
    listed = {e["name"]: e for e in app.get("/api/v1/extensions/").json}
    assert {"cluster_upgrade", "configdb"} <= set(listed)
    assert set(listed["configdb"]) == {"name", "version", "description", "provides"}


def test_broken_extension_is_skipped_and_others_load(toy_extensions, caplog):
    names = [e.name for e in extensions.get_all_extensions()]
    assert "toy_broken" not in names
    assert {"toy_a", "toy_b", "cluster_upgrade", "configdb"} <= set(names)
    assert "toy_broken" in caplog.text and "broken on purpose" in caplog.text


def test_urls_of_two_extensions_are_mounted_under_both_prefixes(toy_app):
    for prefix in ("/api/v1", "/api"):
        assert toy_app.get(prefix + "/toy/ping").json == {"pong": "toy_a"}
        assert toy_app.get(prefix + "/toy/b/").json == {"pong": "toy_b"}
    assert toy_app.patch(prefix + "/toy/ping").json == {"patched": True}


def test_two_handlers_with_one_name_fail_at_start():
    def make(module):
        handler = type("SameNameHandler", (BaseHandler,), {"__module__": module})

        class Ext(extensions.BaseExtension):
            name, version, description = module, "1.0.0", "x"
            urls = [{"uri": "/" + module, "handler": handler}]
        return Ext()

    with pytest.raises(RuntimeError, match="Two handlers are named SameNameHandler"):
        build_app([make("one"), make("two")])


def test_callbacks_reach_every_extension(toy_app, toy_extensions):
    env = EnvironmentManager(toy_app)
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["controller"])
    toy_app.delete("/api/v1/clusters/{0}/".format(cluster["id"]), status=204)
    toy_app.delete("/api/v1/nodes/{0}/".format(node["id"]), status=204)
    assert ("toy_a", "cluster_create", cluster["id"]) in toy_extensions
    assert ("toy_a", "node_create", node["id"]) in toy_extensions
    assert ("toy_a", "node_update", node["id"]) in toy_extensions
    assert ("toy_a", "remove_node_from_cluster", node["id"]) in toy_extensions
    assert ("toy_a", "cluster_delete", cluster["id"]) in toy_extensions
    assert ("toy_b", "cluster_delete", cluster["id"]) in toy_extensions
    assert ("toy_a", "node_delete", node["id"]) in toy_extensions


def test_collection_delete_fires_with_the_ids(toy_app, toy_extensions):
    env = EnvironmentManager(toy_app)
    ids = [env.create_node()["id"] for _ in range(2)]
    toy_app.delete("/api/v1/nodes/?ids={0},{1}".format(*ids), status=204)
    assert ("toy_a", "node_collection_delete", ids) in toy_extensions
    assert toy_app.get("/api/v1/nodes/").json == []


def test_a_move_fires_each_batch_hook_once_and_nailgun_hooks_once_per_node(toy_app, toy_extensions):
    """An upgrade's assign moves nodes through the host: toy_a answers the batch hooks, toy_b only has
    Nailgun's one-node hooks, which the batch hooks' defaults call; leaving, a node is still in the orig."""
    env = EnvironmentManager(toy_app)
    old = env.create_release(name="Old", version="liberty-8.0")
    new = env.create_release(name="New", version="mitaka-9.0")
    orig = env.create_cluster(release_id=old["id"])
    ids = [env.create_node(cluster_id=orig["id"], roles=["compute"], status="ready")["id"] for _ in range(3)]
    seed = toy_app.post_json(CLONE.format(orig["id"]), {"name": "seed", "release_id": new["id"]}).json
    del toy_extensions[:]
    toy_app.post_json(ASSIGN.format(seed["id"]), {"nodes_ids": ids[:2]}, status=202)
    assert [e for e in toy_extensions if e[0] == "toy_a"] == [
        ("toy_a", "remove_nodes_from_cluster", [(i, orig["id"]) for i in ids[:2]]),
        ("toy_a", "nodes_update", [(i, seed["id"]) for i in ids[:2]])]
    assert [e for e in toy_extensions if e[0] == "toy_b"] == (
        [("toy_b", "remove_node_from_cluster", (i, orig["id"])) for i in ids[:2]] +
        [("toy_b", "node_update", (i, seed["id"])) for i in ids[:2]])


def test_pipelines_run_only_for_clusters_that_enable_the_extension(toy_app):
    env = EnvironmentManager(toy_app)
    cluster = env.create_cluster()
    env.create_node(cluster_id=cluster["id"], roles=["controller"])
    url = "/api/v1/clusters/{0}/orchestrator/deployment/defaults/".format(cluster["id"])
    assert "toy_a" not in toy_app.get(url).json[0]
    toy_app.put_json("/api/v1/clusters/{0}/extensions/".format(cluster["id"]), ["toy_a"])
    assert toy_app.get(url).json[0]["toy_a"] == {"cluster": cluster["id"]}
    toy_app.delete("/api/v1/clusters/{0}/extensions/?extension_names=toy_a".format(cluster["id"]), status=204)
    assert "toy_a" not in toy_app.get(url).json[0]


def test_unknown_extension_cannot_be_enabled(toy_app):
    cluster = EnvironmentManager(toy_app).create_cluster()
    response = toy_app.put_json("/api/v1/clusters/{0}/extensions/".format(cluster["id"]),
                                ["toy_a", "nope"], status=400)
    assert response.json["message"] == "No such extensions: nope"
    assert toy_app.get("/api/v1/clusters/{0}/extensions/".format(cluster["id"])).json == []


def test_provided_methods_are_callable_through_the_host(toy_extensions):
    assert extensions.call_provided("toy_answer", 21) == 42


@pytest.mark.parametrize("how, status", [("invalid", 400), ("crash", 500)])
def test_failed_request_leaves_no_partial_write(toy_app, session, how, status):
    response = toy_app.post("/api/v1/toy/fail/" + how, status=status)
    assert response.content_type == "application/json"
    assert "Traceback" not in response.text
    assert session.query(Release).filter_by(name="half-written").count() == 0


def test_a_real_server_skips_the_broken_extension_and_serves(migrated_db, db_url):
    server = LiveServer(db_url, env={"PYTHONPATH": TOY_DIR})
    try:
        names = {e["name"] for e in requests.get(server.url + "/api/v1/extensions/").json()}
        assert {"toy_a", "toy_b", "cluster_upgrade", "configdb"} <= names
        assert "toy_broken" not in names
        assert requests.get(server.url + "/api/toy/ping").json() == {"pong": "toy_a"}
        assert requests.get(server.url + "/api/v1/version").json()["auth_required"] is False
    finally:
        server.stop()
