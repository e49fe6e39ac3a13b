"""One revision story (issue 26, item 4): a deployment names the revision it landed in for every counter it
moved, the cluster's and the ConfigDB environment's, so an LCM tool joins ``deployments`` to ``changes?since=``
without guessing which counter a number belongs to."""
import itertools
import json

from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

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


_values = itertools.count(1)
ACTIONS = st.lists(st.one_of(
    st.tuples(st.just("write"), st.sampled_from(["linked", "unlinked"])),
    st.tuples(st.just("model")),
    # a session of the environment: stages documents (new values, or the values it already has), the model
    st.tuples(st.just("deploy"), st.sampled_from(["linked", "unlinked"]), st.sampled_from(["new", "same", "none"]),
              st.booleans()),
), min_size=1, max_size=12)


@hypothesis_settings(max_examples=12, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(actions=ACTIONS)
def test_any_writes_and_deploys_record_the_revision_the_feed_shows(app, cdb, env, actions):
    """For any sequence of direct writes, model changes and deploys, each deployment's ``revisions`` name the
    counters it moved with the revisions they reached, and its ConfigDB one is the feed revision of its entries."""
    cluster_id, name = env.create_cluster()["id"], "lcm{0}".format(next(_values))
    resource = cdb.component(name, ["nova"])["resource_definitions"][0]["id"]
    cdb.environment([name], id=cluster_id)
    unlinked = cdb.environment([name], id=100000 + cluster_id)["id"]  # no cluster takes it, no cluster id moves
    prefixes = {"linked": "/api/v1/clusters/{0}".format(cluster_id),
                "unlinked": "{0}/environments/{1}".format(API, unlinked)}
    environments = {"linked": cluster_id, "unlinked": unlinked}
    counters = {"cluster": 0, "linked": 0, "unlinked": 0}
    expected = {}
    for action in actions:
        if action[0] == "write":
            cdb.put(environments[action[1]], resource, {"workers": next(_values)})
            counters[action[1]] += 1
        elif action[0] == "model":
            _rename(app, cluster_id)
            counters["cluster"] += 1
        else:
            _, which, documents, model = action
            sid = app.post_json(prefixes[which] + "/configure", {}).json["id"]
            if documents != "none":
                current = cdb.get(environments[which], resource).json
                cdb.put(environments[which], resource, current if documents == "same" else {"workers": next(_values)},
                        headers=hdr(sid))
            if model and which == "linked":
                _rename(app, cluster_id, hdr(sid, **{"Content-Type": PATCH_TYPE}))
            moved = {}
            if which == "linked":
                counters["cluster"] += 1
                moved["cluster"] = {"id": cluster_id, "revision": counters["cluster"]}
            if documents == "new":
                counters[which] += 1
                moved["configdb_environment"] = {"id": environments[which], "revision": counters[which]}
            assert _deploy(app, prefixes[which], sid)["revisions"] == moved
            expected[sid] = (which, moved)
    for which, environment_id in environments.items():
        listed = {d["id"]: d["revisions"]
                  for d in app.get(prefixes[which] + "/deployments?limit=500").json["deployments"]}
        assert listed == {sid: moved for sid, (where, moved) in expected.items() if where == which}
        feed = app.get("{0}/environments/{1}/changes?since=0".format(API, environment_id)).json["changes"]
        assert app.get("{0}/environments/{1}".format(API, environment_id)).json["revision"] == counters[which]
        by_session = {}
        for change in feed:
            if change["session"] is not None:
                by_session.setdefault(change["session"], set()).add(change["revision"])
        assert by_session == {sid: {revisions["configdb_environment"]["revision"]}
                              for sid, revisions in listed.items() if "configdb_environment" in revisions}


def _rename(app, cluster_id, headers=None):
    app.patch("/api/v1/clusters/{0}/model".format(cluster_id),
              json.dumps([{"op": "replace", "path": "/name", "value": "renamed-{0}".format(next(_values))}]),
              headers=headers or {"Content-Type": PATCH_TYPE})


def _paged(app, listing, limit):
    """Every deployment of ``listing``, paging as docs/api/deployments.md says: the ``revision`` of a page's last
    row is the next ``before``."""
    seen, before = [], ""
    while True:
        page = app.get("{0}?limit={1}{2}".format(listing, limit, before)).json["deployments"]
        if not page:
            return seen
        seen.extend(d["id"] for d in page)
        before = "&before={0}".format(page[-1]["revision"])


@hypothesis_settings(max_examples=15, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(actions=st.lists(st.sampled_from(["write", "new", "same", "none"]), min_size=1, max_size=8))
def test_paging_by_before_visits_every_deployment_once(app, cdb, env, actions):
    """Deploys that write nothing leave an unlinked environment's revision where it was, so several deployments
    share a revision: whatever the limit, paging by ``before`` sees each deployment once, in the listing's order."""
    name = "lcm{0}".format(next(_values))
    resource = cdb.component(name, ["nova"])["resource_definitions"][0]["id"]
    cluster_id = env.create_cluster()["id"]
    cdb.environment([name], id=cluster_id)
    unlinked = cdb.environment([name], id=100000 + cluster_id)["id"]
    environments = {"{0}/environments/{1}".format(API, unlinked): unlinked,
                    "/api/v1/clusters/{0}".format(cluster_id): cluster_id}
    for prefix, environment_id in environments.items():
        for action in actions:
            if action == "write":
                cdb.put(environment_id, resource, {"workers": next(_values)})
                continue
            sid = app.post_json(prefix + "/configure", {}).json["id"]
            if action != "none":
                current = cdb.get(environment_id, resource).json
                cdb.put(environment_id, resource, current if action == "same" else {"workers": next(_values)},
                        headers=hdr(sid))
            _deploy(app, prefix, sid)
        listing = prefix + "/deployments"
        everything = [d["id"] for d in app.get(listing + "?limit=500").json["deployments"]]
        assert len(everything) == sum(action != "write" for action in actions)
        for limit in range(1, len(everything) + 1):
            assert _paged(app, listing, limit) == everything, limit
