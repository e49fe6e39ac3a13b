"""Issue 12's acceptance on a cluster: one session stages twenty node overrides in the cluster's linked
ConfigDB environment and a change of its model, invisible without the header, visible with it, landing
together on deploy; a failure in the last document leaves the database as it was."""
import json

import pytest

from tests.configdb.conftest import API
from tests.configdb.test_sessions import dump, hdr

SCHEMA = {"type": "object", "properties": {"workers": {"type": "integer", "minimum": 1}}}
PATCH_TYPE = "application/json-patch+json"


@pytest.fixture
def cluster(cdb, env):
    """A cluster of twenty computes, and the ConfigDB environment linked to it (its id)."""
    cluster = env.create(nodes_kwargs=[{"roles": ["compute"]}] * 20)
    component = cdb.component("fuel", [{"name": "nova", "content": {"schema": SCHEMA}}])
    cdb.environment(["fuel"], id=cluster["id"])
    resource = component["resource_definitions"][0]["id"]
    cdb.put(cluster["id"], resource, {"workers": 1})
    return cluster, resource, [node["id"] for node in env.nodes]


def _model(app, cluster_id, path="", **kwargs):
    return app.get("/api/v1/clusters/{0}/model{1}".format(cluster_id, path), **kwargs).json


def _stage(app, cdb, cluster, sid, kind="overrides"):
    cluster, resource, nodes = cluster
    for number, node in enumerate(nodes, 1):
        cdb.put(cluster["id"], resource, {"workers": number}, levels="nodes/{0}/".format(node), kind=kind,
                headers=hdr(sid))
    app.patch("/api/v1/clusters/{0}/model".format(cluster["id"]),
              json.dumps([{"op": "replace", "path": "/name", "value": "reviewed"}]),
              headers=hdr(sid, **{"Content-Type": PATCH_TYPE}))


def test_twenty_overrides_and_a_model_change_deploy_together(app, cdb, cluster):
    (found, resource, nodes), cluster_id = cluster, cluster[0]["id"]
    # a linked environment's sessions are its cluster's: open under ConfigDB, used under /clusters too
    sid = app.post_json("{0}/environments/{1}/configure".format(API, cluster_id), {}).json["id"]
    _stage(app, cdb, cluster, sid)
    last = "nodes/{0}/".format(nodes[-1])
    assert cdb.get(cluster_id, resource, last, query="effective").json == {"workers": 1}
    assert _model(app, cluster_id, "/name") == found["name"]
    assert cdb.get(cluster_id, resource, last, query="effective", headers=hdr(sid)).json == {"workers": 20}
    assert _model(app, cluster_id, "/name", headers=hdr(sid)) == "reviewed"
    shown = app.get("/api/v1/clusters/{0}/sessions/{1}".format(cluster_id, sid)).json
    assert sorted(d["document"]["type"] for d in shown["documents"]) == ["configdb"] * 20 + ["model"]
    config_revision = app.get("{0}/environments/{1}".format(API, cluster_id)).json["revision"]
    deployed = app.post("/api/v1/clusters/{0}/sessions/{1}/deploy".format(cluster_id, sid)).json
    assert deployed["state"] == "deployed"
    # every document in one revision of the environment, the model with them
    landed = config_revision + 1
    assert app.get("{0}/environments/{1}".format(API, cluster_id)).json["revision"] == landed
    for node in nodes:
        history = cdb.get(cluster_id, resource, "nodes/{0}/".format(node), kind="overrides/history").json
        assert [h["revision"] for h in history] == [landed]
    assert _model(app, cluster_id, "/name") == "reviewed"
    feed = app.get("{0}/environments/{1}/changes?since={2}".format(API, cluster_id, config_revision)).json
    assert {(c["revision"], c["session"]) for c in feed["changes"]} == {(landed, sid)}
    assert len(feed["changes"]) == 20
    history = app.get("/api/v1/clusters/{0}/deployments".format(cluster_id)).json["deployments"]
    assert [(d["id"], len(d["documents"]), d["sections"]) for d in history] == [(sid, 21, ["/name"])]


def test_a_failure_in_the_last_document_leaves_the_database_as_it_was(app, cdb, cluster, migrated_db):
    (found, resource, nodes), cluster_id = cluster, cluster[0]["id"]
    sid = app.post_json("/api/v1/clusters/{0}/configure".format(cluster_id), {}).json["id"]
    _stage(app, cdb, cluster, sid, kind="values")
    # the definition changes after staging: the last node's values no longer validate
    app.put_json("{0}/resource_definitions/{1}".format(API, resource),
                 {"content": {"schema": dict(SCHEMA, properties={"workers": {"type": "integer", "maximum": 19}})}})
    app.put_json("{0}/environments/{1}/pins/nova".format(API, cluster_id), {"version": 2, "force": True})
    before = dump(migrated_db[0])
    failed = app.post("/api/v1/clusters/{0}/sessions/{1}/deploy".format(cluster_id, sid), status=400).json
    assert "/nodes/{0}/".format(nodes[-1]) in failed["message"]
    assert dump(migrated_db[0]) == before
    assert _model(app, cluster_id, "/name") == found["name"]
    assert app.get("/api/v1/clusters/{0}/sessions/{1}".format(cluster_id, sid)).json["state"] == "open"
