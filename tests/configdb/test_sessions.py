"""Configuration sessions on ConfigDB environments (seeds 000/001), through the HTTP API.

Staged writes are invisible without ``X-Configuration-Session`` and visible with it, deploy is all or
nothing in one environment revision, the first deploy of a document wins.
"""
import base64
import copy
import json

import pytest
import sqlalchemy as sa
import webtest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_host.api.base import MASKED_HEADER
from nailgun_host.app import build_wsgi
from nailgun_host.settings import settings
from nailgun_platform.secrets.masking import MASK
from tests.auth import write_users_file
from tests.configdb.conftest import API

HEADER = "X-Configuration-Session"
SCHEMA = {"type": "object", "properties": {"workers": {"type": "integer"}}}


@pytest.fixture
def setup(cdb):
    """comp with nova (values validated by SCHEMA) and neutron; unlinked environment 1 over nodes."""
    cdb.component("comp", [{"name": "nova", "content": {"schema": SCHEMA}}, {"name": "neutron", "content": {}}])
    environment = cdb.environment(["comp"])
    return environment["id"]


def resources(app):
    return {r["name"]: r["id"] for r in app.get(API + "/resource_definitions").json}


def env_url(env_id):
    return "{0}/environments/{1}".format(API, env_id)


def open_session(app, env_id, **kwargs):
    return app.post_json(env_url(env_id) + "/configure", {}, **kwargs).json


def deploy(app, env_id, sid, status=200):
    return app.post(env_url(env_id) + "/sessions/{0}/deploy".format(sid), status=status)


def hdr(sid, **more):
    return dict({HEADER: sid}, **more)


def dump(engine):
    """Every row of every table (what a failed request must leave as it found)."""
    meta = sa.MetaData()
    meta.reflect(engine)
    with engine.connect() as connection:
        return {table.name: sorted(repr(tuple(row)) for row in connection.execute(sa.select(table)))
                for table in meta.sorted_tables}


def revision(app, env_id):
    return app.get(env_url(env_id)).json["revision"]


def test_seed_001_sequence_first_deploy_wins(app, cdb, setup):
    env_id, rid = setup, resources(app)["nova"]
    cdb.put(env_id, rid, {"debug": False}, kind="overrides")
    a, b = open_session(app, env_id), open_session(app, env_id)
    cdb.put(env_id, rid, {"debug": True, "a": 1}, kind="overrides", headers=hdr(a["id"]))
    cdb.put(env_id, rid, {"debug": True, "b": 2}, kind="overrides", headers=hdr(b["id"]))
    assert cdb.get(env_id, rid, kind="overrides").json == {"debug": False}
    deployed = deploy(app, env_id, a["id"]).json
    assert deployed["state"] == "deployed" and deployed["revision"] == revision(app, env_id) == 2
    conflict = deploy(app, env_id, b["id"], status=409).json
    assert [e["document"]["resource"] for e in conflict["errors"]] == [rid]
    assert conflict["errors"][0]["document"]["kind"] == "overrides"
    assert conflict["errors"][0]["revision"] == 2
    app.get(env_url(env_id) + "/sessions/" + b["id"], status=403)
    assert cdb.get(env_id, rid, kind="overrides").json == {"debug": True, "a": 1}
    assert revision(app, env_id) == 2


def test_disjoint_documents_both_deploy(app, cdb, setup):
    env_id, ids = setup, resources(app)
    a, b = open_session(app, env_id), open_session(app, env_id)
    cdb.put(env_id, ids["nova"], {"workers": 4}, headers=hdr(a["id"]))
    cdb.put(env_id, ids["neutron"], {"mtu": 9000}, headers=hdr(b["id"]))
    first = deploy(app, env_id, a["id"]).json["revision"]
    second = deploy(app, env_id, b["id"]).json["revision"]
    assert first != second
    assert cdb.get(env_id, ids["nova"]).json == {"workers": 4}
    assert cdb.get(env_id, ids["neutron"]).json == {"mtu": 9000}


def _stage_twenty(app, cdb, env_id, rid, sid, kind="values"):
    for node in range(1, 21):
        cdb.put(env_id, rid, {"workers": node}, levels="nodes/{0}/".format(node), kind=kind, headers=hdr(sid))


def test_twenty_node_overrides_staged_then_one_revision(app, cdb, setup):
    env_id, rid = setup, resources(app)["nova"]
    cdb.put(env_id, rid, {"workers": 1, "debug": False})
    sid = open_session(app, env_id)["id"]
    _stage_twenty(app, cdb, env_id, rid, sid, kind="overrides")
    cdb.put(env_id, rid, {"debug": True}, levels="nodes/7/", headers=hdr(sid))
    node = "nodes/7/"
    # invisible without the header: values, overrides, effective, show_lookup, ?key=
    assert cdb.get(env_id, rid, levels=node).json == {}
    assert cdb.get(env_id, rid, levels=node, kind="overrides").json == {}
    assert cdb.get(env_id, rid, levels=node, query="effective").json == {"workers": 1, "debug": False}
    assert cdb.get(env_id, rid, levels=node, query="effective&key=workers").json == 1
    lookup = cdb.get(env_id, rid, levels=node, query="effective&show_lookup").json
    assert lookup["workers"] == [1, "/", "values"]
    plain_tag = cdb.get(env_id, rid, levels=node, query="effective").headers["ETag"]
    # visible with it
    with_header = dict(headers=hdr(sid))
    assert cdb.get(env_id, rid, levels=node, kind="overrides", **with_header).json == {"workers": 7}
    assert cdb.get(env_id, rid, levels=node, **with_header).json == {"debug": True}
    assert cdb.get(env_id, rid, levels=node, query="effective", **with_header).json == {"workers": 7, "debug": True}
    assert cdb.get(env_id, rid, levels=node, kind="overrides", query="key=workers", **with_header).json == 7
    assert cdb.get(env_id, rid, levels=node, query="effective&key=debug", **with_header).json is True
    lookup = cdb.get(env_id, rid, levels=node, query="effective&show_lookup", **with_header).json
    assert lookup["workers"] == [7, "/nodes/7/", "overrides"]
    assert lookup["debug"] == [True, "/nodes/7/", "values"]
    assert cdb.get(env_id, rid, levels=node, query="effective", **with_header).headers["ETag"] != plain_tag
    # the session lists its documents
    shown = app.get(env_url(env_id) + "/sessions/" + sid).json
    assert len(shown["documents"]) == 21
    diff = app.get(env_url(env_id) + "/sessions/{0}/diff".format(sid)).json["documents"]
    assert {"op": "add", "path": "/workers", "value": 7} in next(
        d["patch"] for d in diff if d["document"]["level"] == "/nodes/7/" and d["document"]["kind"] == "overrides")
    before = revision(app, env_id)
    landed = deploy(app, env_id, sid).json["revision"]
    assert landed == before + 1 == revision(app, env_id)
    for number in range(1, 21):
        history = cdb.get(env_id, rid, levels="nodes/{0}/".format(number), kind="overrides/history").json
        assert [h["revision"] for h in history] == [landed]
    assert cdb.get(env_id, rid, levels=node, query="effective").json == {"workers": 7, "debug": True}
    # the change feed: 21 entries, one revision, naming the session
    feed = app.get(env_url(env_id) + "/changes?since={0}".format(before)).json["changes"]
    assert len(feed) == 21 and {(c["revision"], c["session"], c["change"]) for c in feed} == {(landed, sid, "write")}


def test_failing_last_document_leaves_everything(app, cdb, setup, migrated_db):
    env_id, rid = setup, resources(app)["nova"]
    sid = open_session(app, env_id)["id"]
    _stage_twenty(app, cdb, env_id, rid, sid)
    # the definition changes after staging: the 20th document no longer validates
    strict = {"type": "object", "properties": {"workers": {"type": "integer", "maximum": 19}}}
    app.put_json(API + "/resource_definitions/{0}".format(rid), {"content": {"schema": strict}})
    app.put_json(env_url(env_id) + "/pins/nova", {"version": "latest", "force": True})
    before = dump(migrated_db[0])
    failed = deploy(app, env_id, sid, status=400).json
    assert "/nodes/20/" in failed["message"]
    assert dump(migrated_db[0]) == before
    assert app.get(env_url(env_id) + "/sessions/" + sid).json["state"] == "open"
    # fixed, it deploys
    cdb.put(env_id, rid, {"workers": 19}, levels="nodes/20/", headers=hdr(sid))
    deploy(app, env_id, sid)
    assert cdb.get(env_id, rid, levels="nodes/20/").json == {"workers": 19}


def test_staging_runs_the_checks_of_a_write(app, cdb, setup):
    env_id, rid = setup, resources(app)["nova"]
    sid = open_session(app, env_id)["id"]
    cdb.put(env_id, rid, {"workers": "many"}, headers=hdr(sid), status=400)
    assert app.get(env_url(env_id) + "/sessions/" + sid).json["documents"] == []
    cdb.put(env_id, rid, {"workers": 2}, headers=hdr(sid))
    tag = cdb.get(env_id, rid, headers=hdr(sid)).headers["ETag"]
    assert tag != cdb.get(env_id, rid).headers["ETag"]
    cdb.put(env_id, rid, {"workers": 3}, headers=hdr(sid, **{"If-Match": cdb.get(env_id, rid).headers["ETag"]}),
            status=412)
    cdb.put(env_id, rid, {"workers": 3}, headers=hdr(sid, **{"If-Match": tag}))
    assert cdb.get(env_id, rid, headers=hdr(sid)).json == {"workers": 3}
    # keys operations edit the staged document
    app.patch_json(cdb.url(env_id, rid) + "/keys/set", [["debug", True]], headers=hdr(sid), status=204)
    assert cdb.get(env_id, rid, headers=hdr(sid)).json == {"workers": 3, "debug": True}
    assert cdb.get(env_id, rid).json == {}


def test_staged_equal_to_current_is_unstaged(app, cdb, setup):
    env_id, rid = setup, resources(app)["nova"]
    cdb.put(env_id, rid, {"workers": 1})
    sid = open_session(app, env_id)["id"]
    cdb.put(env_id, rid, {"workers": 2}, headers=hdr(sid))
    assert len(app.get(env_url(env_id) + "/sessions/" + sid).json["documents"]) == 1
    cdb.put(env_id, rid, {"workers": 1}, headers=hdr(sid))
    assert app.get(env_url(env_id) + "/sessions/" + sid).json["documents"] == []


def test_staging_onto_a_document_changed_since_is_409_and_invalid(app, cdb, setup):
    env_id, rid = setup, resources(app)["nova"]
    sid = open_session(app, env_id)["id"]
    cdb.put(env_id, rid, {"workers": 2}, headers=hdr(sid))
    cdb.put(env_id, rid, {"workers": 5})  # someone writes it directly
    conflict = cdb.put(env_id, rid, {"workers": 3}, headers=hdr(sid), status=409).json
    assert conflict["errors"][0]["document"]["resource"] == rid
    assert app.get(env_url(env_id) + "/sessions/" + sid, status=403).json
    deploy(app, env_id, sid, status=403)
    assert cdb.get(env_id, rid).json == {"workers": 5}


def test_revert_with_the_header_stages_the_old_version(app, cdb, setup):
    env_id, rid = setup, resources(app)["nova"]
    cdb.put(env_id, rid, {"workers": 1})
    cdb.put(env_id, rid, {"workers": 2})
    sid = open_session(app, env_id)["id"]
    answer = app.post_json(cdb.url(env_id, rid) + "/revert", {"version": 1}, headers=hdr(sid)).json
    assert answer["staged"] is True and answer["changed_keys"] == ["/workers"]
    assert cdb.get(env_id, rid).json == {"workers": 2}
    assert cdb.get(env_id, rid, headers=hdr(sid)).json == {"workers": 1}
    # history and ?version= stay on the stored versions
    assert len(app.get(cdb.url(env_id, rid) + "/history", headers=hdr(sid)).json) == 2
    assert cdb.get(env_id, rid, query="version=2", headers=hdr(sid)).json == {"workers": 2}
    deploy(app, env_id, sid)
    assert cdb.get(env_id, rid).json == {"workers": 1}


def test_level_removed_after_staging_is_a_conflict(app, cdb, setup):
    env_id, rid = setup, resources(app)["nova"]
    cdb.put(env_id, rid, {"workers": 1}, levels="nodes/3/")
    sid = open_session(app, env_id)["id"]
    cdb.put(env_id, rid, {"workers": 2}, levels="nodes/3/", headers=hdr(sid))
    app.put_json(env_url(env_id), {"hierarchy_levels": []})  # the level and its documents go
    conflict = deploy(app, env_id, sid, status=409).json
    assert conflict["errors"][0]["document"]["level"] == "/nodes/3/"


def test_deleting_the_environment_deletes_its_sessions(app, cdb, setup, session):
    env_id = setup
    sid = open_session(app, env_id)["id"]
    app.delete(env_url(env_id), status=204)
    count = session.execute(sa.text("SELECT count(*) FROM config_sessions WHERE id = :id"), {"id": sid}).scalar()
    assert count == 0
    open_session(app, env_id, status=404)


def test_without_sessions_nothing_staged_is_visible_to_others(app, cdb, setup):
    """A header naming another environment's session is 400; an unknown one 404."""
    env_id, rid = setup, resources(app)["nova"]
    other = cdb.environment(["comp"])["id"]
    sid = open_session(app, other)["id"]
    cdb.put(env_id, rid, {"workers": 1}, headers=hdr(sid), status=400)
    cdb.get(env_id, rid, headers=hdr(sid), status=400)
    cdb.put(env_id, rid, {"workers": 1}, headers=hdr("0" * 32), status=404)
    assert cdb.get(env_id, rid).json == {}


# -- secrets (issue 11 holds in sessions) ------------------------------------------------------------

USERS = {"reader": ("reader-pw", ["reader"]), "member": ("member-pw", ["member"]), "admin": ("admin-pw", ["admin"])}


def auth(user):
    token = base64.b64encode("{0}:{1}".format(user, USERS[user][0]).encode()).decode()
    return {"Authorization": "Basic " + token}


@pytest.fixture
def secure(migrated_db, tmp_path):
    """Local users; environment 1 with a resource whose ``password`` is secret, stored by admin."""
    saved = copy.deepcopy(dict(settings))
    settings.reload(overrides={"AUTH": {"method": "local", "users_file": write_users_file(
        str(tmp_path / "users.yaml"), USERS)}})
    app = webtest.TestApp(build_wsgi())
    component = app.post_json(API + "/components", {"name": "c", "resource_definitions": [{"name": "db"}]},
                              headers=auth("admin"), status=201).json
    app.post_json(API + "/environments", {"components": ["c"], "hierarchy_levels": []}, headers=auth("admin"),
                  status=201)
    rid = component["resource_definitions"][0]["id"]
    url = "{0}/environments/1/resources/{1}/values".format(API, rid)
    app.put_json(url, {"password": "s3cret-pw", "port": 1}, headers=auth("admin"), status=204)
    yield app, url
    settings.clear()
    settings.update(saved)


def test_a_masked_stage_keeps_the_stored_secret(secure, session):
    app, url = secure
    sid = app.post_json(env_url(1) + "/configure", {}, headers=auth("member")).json["id"]
    seen = app.get(url, headers=auth("member")).json
    assert seen == {"password": MASK, "port": 1}
    app.put_json(url, dict(seen, port=2), headers=dict(auth("member"), **hdr(sid)), status=204)
    staged = app.get(url, headers=dict(auth("member"), **hdr(sid)))
    assert staged.json == {"password": MASK, "port": 2} and staged.headers[MASKED_HEADER] == "true"
    # sealed at rest, the mask kept as sent: the stored secret is not copied into the session
    raw = session.execute(sa.text("SELECT data FROM config_session_changes")).scalar()
    raw = json.loads(raw) if isinstance(raw, str) else raw
    assert set(raw["password"]) == {"$fernet"} and raw["port"] == 2
    assert "s3cret-pw" not in json.dumps(raw)
    diff = app.get(env_url(1) + "/sessions/{0}/diff".format(sid), headers=auth("member")).json
    assert diff["documents"][0]["patch"] == [{"op": "replace", "path": "/port", "value": 2}]
    deploy_answer = app.post(env_url(1) + "/sessions/{0}/deploy".format(sid), headers=auth("member"))
    assert deploy_answer.json["state"] == "deployed"
    assert app.get(url, headers=auth("admin")).json == {"password": "s3cret-pw", "port": 2}


def test_a_new_secret_is_masked_in_staged_reads_and_diffs(secure):
    app, url = secure
    sid = app.post_json(env_url(1) + "/configure", {}, headers=auth("member")).json["id"]
    app.put_json(url, {"password": "n3w-pw", "port": 1}, headers=dict(auth("member"), **hdr(sid)), status=204)
    assert app.get(url, headers=dict(auth("member"), **hdr(sid))).json["password"] == MASK
    assert app.get(url, headers=dict(auth("admin"), **hdr(sid))).json["password"] == "n3w-pw"
    diff = app.get(env_url(1) + "/sessions/{0}/diff".format(sid), headers=auth("member")).json
    assert "n3w-pw" not in json.dumps(diff)
    assert diff["documents"][0]["patch"] == [{"op": "replace", "path": "/password", "value": MASK}]


def test_the_mask_where_no_secret_is_stored_is_400_at_staging(secure):
    app, url = secure
    sid = app.post_json(env_url(1) + "/configure", {}, headers=auth("member")).json["id"]
    app.put_json(url, {"password": MASK, "port": 1, "token_pw": MASK}, headers=dict(auth("member"), **hdr(sid)),
                 status=400)
    assert app.get(env_url(1) + "/sessions/" + sid, headers=auth("member")).json["documents"] == []


def test_a_secret_changed_by_another_session_makes_the_masked_stage_409(secure):
    app, url = secure
    mine = app.post_json(env_url(1) + "/configure", {}, headers=auth("member")).json["id"]
    theirs = app.post_json(env_url(1) + "/configure", {}, headers=auth("admin")).json["id"]
    app.put_json(url, {"password": MASK, "port": 2}, headers=dict(auth("member"), **hdr(mine)), status=204)
    app.put_json(url, {"password": "other-pw", "port": 1}, headers=dict(auth("admin"), **hdr(theirs)), status=204)
    app.post(env_url(1) + "/sessions/{0}/deploy".format(theirs), headers=auth("admin"))
    # my mask stood for the old secret: keeping it now would be a guess
    app.put_json(url, {"password": MASK, "port": 3}, headers=dict(auth("member"), **hdr(mine)), status=409)
    app.post(env_url(1) + "/sessions/{0}/deploy".format(mine), headers=auth("member"), status=403)
    assert app.get(url, headers=auth("admin")).json == {"password": "other-pw", "port": 1}


# -- a linked environment's sessions are its cluster's ---------------------------------------------

def test_a_linked_environment_shares_its_clusters_sessions(app, cdb, env):
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}, {"roles": ["compute"]}])
    first, second = env.nodes
    comp = cdb.component("fuel", ["astute"])
    cdb.environment(["fuel"], id=cluster["id"])
    rid = comp["resource_definitions"][0]["id"]
    opened = open_session(app, cluster["id"])
    assert opened["environment_type"] == "cluster"
    listed = app.get("/api/v1/clusters/{0}/sessions".format(cluster["id"])).json["sessions"]
    assert [s["id"] for s in listed] == [opened["id"]]
    sid = opened["id"]
    for node in (first, second):
        cdb.put(cluster["id"], rid, {"uid": node["id"]}, levels="nodes/{0}/".format(node["id"]), headers=hdr(sid))
    assert cdb.get(cluster["id"], rid, levels="nodes/{0}/".format(first["id"])).json == {}
    # the second node leaves: its staged document can no longer land
    app.post_json("/api/v1/clusters/{0}/unassignment/".format(cluster["id"]), [{"id": second["id"]}])
    conflict = app.post("/api/v1/clusters/{0}/sessions/{1}/deploy".format(cluster["id"], sid), status=409).json
    assert [e["document"]["level"] for e in conflict["errors"]] == ["/nodes/{0}/".format(second["id"])]
    assert cdb.get(cluster["id"], rid, levels="nodes/{0}/".format(first["id"])).json == {}
    # a fresh session on the node still there deploys through the cluster's route
    sid = open_session(app, cluster["id"])["id"]
    cdb.put(cluster["id"], rid, {"uid": first["id"]}, levels="nodes/{0}/".format(first["id"]), headers=hdr(sid))
    landed = app.post("/api/v1/clusters/{0}/sessions/{1}/deploy".format(cluster["id"], sid)).json
    assert landed["state"] == "deployed"
    assert cdb.get(cluster["id"], rid, levels="nodes/{0}/".format(first["id"])).json == {"uid": first["id"]}
    deployments = app.get(env_url(cluster["id"]) + "/deployments").json["deployments"]
    assert [d["id"] for d in deployments] == [sid]
    assert deployments[0]["diff"][0]["patch"] == [{"op": "add", "path": "/uid", "value": first["id"]}]


def test_an_unknown_environment_has_no_sessions(app):
    app.post_json(env_url(99) + "/configure", {}, status=404)
    app.get(env_url(99) + "/sessions", status=404)


# -- any sequence of staged writes deploys as its last state, in one revision -----------------------

PLACES = [("", "values"), ("", "overrides"), ("nodes/1/", "values"), ("nodes/2/", "overrides")]


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(writes=st.lists(st.tuples(st.integers(0, len(PLACES) - 1), st.integers(0, 3)), max_size=8))
def test_staged_writes_deploy_as_their_last_state(app, cdb, setup, writes):
    env_id, rid = setup, resources(app)["nova"]
    before = {place: cdb.get(env_id, rid, levels=place[0], kind=place[1]).json for place in PLACES}
    sid = open_session(app, env_id)["id"]
    last = dict(before)
    for index, value in writes:
        levels, kind = PLACES[index]
        cdb.put(env_id, rid, {"workers": value}, levels=levels, kind=kind, headers=hdr(sid))
        last[PLACES[index]] = {"workers": value}
    for place in PLACES:
        assert cdb.get(env_id, rid, levels=place[0], kind=place[1]).json == before[place]
        assert cdb.get(env_id, rid, levels=place[0], kind=place[1], headers=hdr(sid)).json == last[place]
    changed = {place for place in PLACES if last[place] != before[place]}
    assert len(app.get(env_url(env_id) + "/sessions/" + sid).json["documents"]) == len(changed)
    start = revision(app, env_id)
    deploy(app, env_id, sid)
    assert revision(app, env_id) == start + (1 if changed else 0)
    for place in PLACES:
        assert cdb.get(env_id, rid, levels=place[0], kind=place[1]).json == last[place]
        if place in changed:
            history = cdb.get(env_id, rid, levels=place[0], kind=place[1] + "/history").json
            assert history[-1]["revision"] == start + 1


@pytest.mark.parametrize("query", ["", "?effective"])
def test_a_read_in_an_expired_session_is_403_and_marks_it_expired(app, cdb, setup, session, query):
    """A read finds its session past its time and ends it: written on a connection of its own, since a ConfigDB read
    writes nothing itself (``BaseHandler.reads_only``); it answered 500 when the read wrote it."""
    nova = resources(app)["nova"]
    cdb.put(setup, nova, {"workers": 1})
    sid = open_session(app, setup)["id"]
    session.execute(sa.text("UPDATE config_sessions SET expires_at = created_at"))
    session.commit()
    answer = cdb.get(setup, nova, query=query, headers={HEADER: sid}, status=403)
    assert "expired" in answer.json["message"]
    assert session.execute(sa.text("SELECT state FROM config_sessions WHERE id = :id"), {"id": sid}).scalar() \
        == "expired"
    session.rollback()
    assert cdb.get(setup, nova, query=query).json == {"workers": 1}
