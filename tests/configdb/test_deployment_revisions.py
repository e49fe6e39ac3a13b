"""One revision story (issue 26, item 4): a deployment names the revision it landed in for every counter it
moved, the cluster's and the ConfigDB environment's, so an LCM tool joins ``deployments`` to ``changes?since=``
without guessing which counter a number belongs to."""
import json

from tests.configdb.conftest import API
from tests.configdb.test_sessions import hdr

PATCH_TYPE = "application/json-patch+json"


def _linked(cdb, env, writes=3):
    """A cluster and its linked ConfigDB environment, written ``writes`` times directly (its revision moves
    ahead of the cluster's); (cluster id, resource id)."""
    cluster = env.create()
    component = cdb.component("lcm", ["nova"])
    cdb.environment(["lcm"], id=cluster["id"])
    resource = component["resource_definitions"][0]["id"]
    for number in range(writes):
        cdb.put(cluster["id"], resource, {"workers": number})
    return cluster["id"], resource


def _deploy(app, prefix, sid):
    return app.post("{0}/sessions/{1}/deploy".format(prefix, sid)).json


def test_a_cluster_deploy_names_the_environment_revision_the_feed_shows(app, cdb, env):
    cluster_id, resource = _linked(cdb, env)
    prefix = "{0}/environments/{1}".format(API, cluster_id)
    sid = app.post_json(prefix + "/configure", {}).json["id"]
    cdb.put(cluster_id, resource, {"workers": 8}, headers=hdr(sid))
    app.patch("/api/v1/clusters/{0}/model".format(cluster_id),
              json.dumps([{"op": "replace", "path": "/name", "value": "reviewed"}]),
              headers=hdr(sid, **{"Content-Type": PATCH_TYPE}))
    deployed = _deploy(app, prefix, sid)
    feed = app.get(prefix + "/changes?since=0").json
    landed = [c["revision"] for c in feed["changes"] if c["session"] == sid]
    assert landed == [4]
    expected = {"cluster": {"id": cluster_id, "revision": 1},
                "configdb_environment": {"id": cluster_id, "revision": 4}}
    assert deployed["revisions"] == expected
    for listing in (prefix + "/deployments", "/api/v1/clusters/{0}/deployments".format(cluster_id)):
        [entry] = app.get(listing).json["deployments"]
        # the old field stays the session scope's counter (the cluster's), what ?before= pages by
        assert (entry["id"], entry["revision"], entry["revisions"]) == (sid, 1, expected)
    # the join the docs give: the environment revision minus one as since, the entries of that revision
    since = deployed["revisions"]["configdb_environment"]["revision"] - 1
    joined = app.get("{0}/changes?since={1}".format(prefix, since)).json["changes"]
    assert {(c["revision"], c["session"]) for c in joined} == {(4, sid)}


def test_a_deploy_that_moves_only_the_model_names_only_the_cluster(app, cdb, env):
    cluster_id, _resource = _linked(cdb, env, writes=1)
    sid = app.post_json("/api/v1/clusters/{0}/configure".format(cluster_id), {}).json["id"]
    app.patch("/api/v1/clusters/{0}/model".format(cluster_id),
              json.dumps([{"op": "replace", "path": "/name", "value": "reviewed"}]),
              headers=hdr(sid, **{"Content-Type": PATCH_TYPE}))
    deployed = _deploy(app, "/api/v1/clusters/{0}".format(cluster_id), sid)
    assert deployed["revisions"] == {"cluster": {"id": cluster_id, "revision": 1}}
    assert app.get("{0}/environments/{1}".format(API, cluster_id)).json["revision"] == 1


def test_an_unlinked_environment_deploy_names_its_own_counter(app, cdb):
    component = cdb.component("lcm", ["nova"])
    environment = cdb.environment(["lcm"])
    resource = component["resource_definitions"][0]["id"]
    cdb.put(environment["id"], resource, {"workers": 1})
    prefix = "{0}/environments/{1}".format(API, environment["id"])
    sid = app.post_json(prefix + "/configure", {}).json["id"]
    assert app.get("{0}/sessions/{1}".format(prefix, sid)).json["revisions"] == {}
    cdb.put(environment["id"], resource, {"workers": 2}, headers=hdr(sid))
    deployed = _deploy(app, prefix, sid)
    assert (deployed["revision"], deployed["revisions"]) == (
        2, {"configdb_environment": {"id": environment["id"], "revision": 2}})
