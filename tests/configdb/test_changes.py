"""The change feed, ``GET /config/environments/<id>/changes``: entries, paging, pruning, bad input, waiting.

Waits across processes and the parking server are in tests/host/test_feed_server.py.
"""
import threading
import time

import pytest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_host.db import db
from nailgun_host.settings import settings
from nailgun_platform import notify
from nailgun_ext_configdb.models import Change, Environment
from nailgun_ext_configdb.objects import changes as changes_obj, document as document_obj, resource_definition
from tests.configdb.conftest import API


def feed(app, env_id, query="since=0", status=200, **kwargs):
    return app.get("{0}/environments/{1}/changes?{2}".format(API, env_id, query), status=status, **kwargs)


@pytest.fixture
def two(cdb):
    component = cdb.component("comp", ["a", "b"])
    environment = cdb.environment(["comp"])
    return environment["id"], [r["id"] for r in component["resource_definitions"]]


def entries(app, env_id, since=0):
    return [(c["revision"], c["resource"], c["level"], c["kind"], c["change"], c["version"])
            for c in feed(app, env_id, "since={0}".format(since)).json["changes"]]


def test_since_returns_the_writes_after_it_in_order(cdb, two):
    env_id, (a, b) = two
    cdb.put(env_id, a, {"x": 1})
    cdb.put(env_id, b, {"y": 1}, levels="nodes/7/", kind="overrides")
    cdb.put(env_id, a, {"x": 2})
    cdb.put(env_id, a, {"x": 2})  # the same JSON: no version, no entry
    answer = feed(cdb.app, env_id).json
    assert answer["environment_id"] == env_id and answer["revision"] == 3 and answer["since"] == 0
    assert answer["truncated"] is False
    assert [(c["revision"], c["resource"], c["resource_name"], c["level"], c["kind"], c["change"], c["version"],
             c["session"]) for c in answer["changes"]] == [
        (1, a, "a", "/", "values", "write", 1, None),
        (2, b, "b", "/nodes/7/", "overrides", "write", 1, None),
        (3, a, "a", "/", "values", "write", 2, None)]
    assert {c["author"] for c in answer["changes"]} == {"anonymous"}
    assert all("x" not in c and "data" not in c for c in answer["changes"])  # never values
    assert entries(cdb.app, env_id, since=2) == [(3, a, "/", "values", "write", 2)]
    later = feed(cdb.app, env_id, "since=3").json
    assert later["changes"] == [] and later["revision"] == 3 and later["truncated"] is False


def test_every_write_path_appears(cdb, env):
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}, {"roles": ["compute"]}])
    first, second = env.nodes
    component = cdb.component("fuel", ["astute"])
    rid = component["resource_definitions"][0]["id"]
    cdb.environment(["fuel"], id=cluster["id"], levels=("rack", "nodes"))
    cid = cluster["id"]
    node_level = "rack/r1/nodes/{0}/".format(first["id"])
    cdb.put(cid, rid, {"k": 1})  # 1: PUT
    cdb.app.patch_json(cdb.url(cid, rid, kind="overrides") + "/keys/set", [["k", 2]], status=204)  # 2: keys set
    cdb.app.patch_json(cdb.url(cid, rid, kind="overrides") + "/keys/delete", [["k"]], status=204)  # 3
    cdb.app.post_json(cdb.url(cid, rid) + "/revert", {"version": 1}, status=200)  # equal: nothing
    cdb.put(cid, rid, {"k": 5})  # 4
    cdb.app.post_json(cdb.url(cid, rid) + "/revert", {"version": 1}, status=201)  # 5: revert
    cdb.put(cid, rid, {"n": 1}, levels=node_level)  # 6
    cdb.put(cid, rid, {"n": 2}, levels="rack/r1/nodes/{0}/".format(second["id"]))  # 7
    cdb.put(cid, rid, {"r": 1}, levels="rack/r1/")  # 8
    env.app.delete("/api/v1/nodes/{0}/".format(first["id"]), status=204)  # 9: level removal
    cdb.app.put_json("{0}/environments/{1}".format(API, cid), {"hierarchy_levels": ["nodes"]})  # 10: hierarchy
    answer = feed(cdb.app, cid).json
    assert [(c["revision"], c["level"], c["kind"], c["change"], c["version"]) for c in answer["changes"]] == [
        (1, "/", "values", "write", 1),
        (2, "/", "overrides", "write", 1),
        (3, "/", "overrides", "write", 2),
        (4, "/", "values", "write", 2),
        (5, "/", "values", "write", 3),
        (6, "/" + node_level, "values", "write", 1),
        (7, "/rack/r1/nodes/{0}/".format(second["id"]), "values", "write", 1),
        (8, "/rack/r1/", "values", "write", 1),
        (9, "/" + node_level, "values", "delete", None),
        (10, "/rack/r1/nodes/{0}/".format(second["id"]), "values", "delete", None),  # by document id
        (10, "/rack/r1/", "values", "delete", None)]
    assert answer["revision"] == 10
    assert cdb.app.get("{0}/environments/{1}".format(API, cid)).json["revision"] == 10


def test_a_limit_never_cuts_a_revision_and_revision_says_where_to_go_on(cdb, two, session):
    env_id, (a, b) = two
    cdb.put(env_id, a, {"x": 1})  # 1
    cdb.put(env_id, a, {"x": 1}, levels="nodes/1/")  # 2
    cdb.put(env_id, a, {"x": 1}, levels="nodes/2/")  # 3
    cdb.put(env_id, b, {"x": 1}, levels="nodes/2/")  # 4
    cdb.app.put_json("{0}/environments/{1}".format(API, env_id), {"hierarchy_levels": ["racks"]})  # 5: 3 deletes
    cdb.put(env_id, a, {"x": 2})  # 6
    page = feed(cdb.app, env_id, "since=0&limit=2").json
    assert [c["revision"] for c in page["changes"]] == [1, 2] and page["revision"] == 2
    page = feed(cdb.app, env_id, "since=4&limit=2").json  # revision 5 alone is larger than the limit: whole
    assert [c["revision"] for c in page["changes"]] == [5, 5, 5] and page["revision"] == 5
    page = feed(cdb.app, env_id, "since=3&limit=2").json  # 4, then 5 would be cut: stop before it
    assert [c["revision"] for c in page["changes"]] == [4] and page["revision"] == 4
    seen, since = [], 0
    while True:  # a client looping with limit 1 reads everything once
        page = feed(cdb.app, env_id, "since={0}&limit=1".format(since)).json
        if not page["changes"]:
            break
        seen.extend(c["revision"] for c in page["changes"])
        since = page["revision"]
    assert seen == [1, 2, 3, 4, 5, 5, 5, 6]


def test_pruning_keeps_whole_revisions_and_truncated_tells_the_client_to_resync(cdb, two):
    env_id, (a, b) = two
    settings.reload(overrides={"DATABASE_URL": settings.database_url, "CONFIGDB": {"max_changes": 3}})
    for n in range(1, 6):
        cdb.put(env_id, a, {"x": n})  # revisions 1..5; 3..5 kept
    assert [e[0] for e in entries(cdb.app, env_id)] == [3, 4, 5]
    assert feed(cdb.app, env_id, "since=0").json["truncated"] is True
    assert feed(cdb.app, env_id, "since=1").json["truncated"] is True
    assert feed(cdb.app, env_id, "since=2").json["truncated"] is False
    cdb.put(env_id, a, {"x": 1}, levels="nodes/1/")  # 6
    cdb.put(env_id, b, {"x": 1}, levels="nodes/1/")  # 7
    cdb.app.put_json("{0}/environments/{1}".format(API, env_id), {"hierarchy_levels": ["racks"]})  # 8: 2 rows
    # the 3rd newest entry is of revision 7: everything before it goes, revision 8 stays whole
    assert [e[0] for e in entries(cdb.app, env_id)] == [7, 8, 8]
    assert feed(cdb.app, env_id, "since=6").json["truncated"] is False
    assert feed(cdb.app, env_id, "since=5").json["truncated"] is True


def test_pruning_runs_at_one_revision_in_a_hundredth_of_the_limit_and_the_feed_answers_what_it_holds(
        cdb, two, session):
    """With ``max_changes`` 200 the entries are pruned at even revisions only: an odd one leaves the extra
    entries, answered and not truncated; the next even one keeps the newest 200, whole revisions."""
    env_id, (a, _) = two
    settings.reload(overrides={"DATABASE_URL": settings.database_url, "CONFIGDB": {"max_changes": 200}})
    cdb.put(env_id, a, {"x": 0})  # revision 1, the document's first version
    written = session.query(Change).filter_by(environment_id=env_id).one()
    session.execute(Change.__table__.insert(), [dict(
        environment_id=env_id, revision=revision, document_id=written.document_id, resource_definition_id=a,
        level_path="", kind="values", change="write", version=revision, author=written.author)
        for revision in range(2, 251)])  # revisions 2..250, as if written (the feed reads entries only)
    session.execute(Environment.__table__.update().where(Environment.id == env_id).values(revision=250))
    session.commit()
    cdb.put(env_id, a, {"x": 251})  # odd: no prune
    assert [e[0] for e in entries(cdb.app, env_id)][:2] == [1, 2] and len(entries(cdb.app, env_id)) == 251
    assert feed(cdb.app, env_id, "since=0").json["truncated"] is False
    cdb.put(env_id, a, {"x": 252})  # even: the newest 200 kept
    assert [e[0] for e in entries(cdb.app, env_id)] == list(range(53, 253))
    assert feed(cdb.app, env_id, "since=51").json["truncated"] is True
    assert feed(cdb.app, env_id, "since=52").json["truncated"] is False


def test_an_environment_written_before_the_feed_existed_is_truncated_for_old_revisions(cdb, two, session):
    env_id, (a, _) = two
    cdb.put(env_id, a, {"x": 1})
    session.execute(Change.__table__.delete())
    session.commit()
    assert feed(cdb.app, env_id, "since=0").json["truncated"] is True
    assert feed(cdb.app, env_id, "since=1").json["truncated"] is False


@pytest.mark.parametrize("query, message", [
    ("", "The query parameter since is required"),
    ("since=", "The query parameter since must be a whole number from 0 to {0}".format(2 ** 63 - 1)),
    ("since=-1", "The query parameter since must be a whole number from 0 to {0}".format(2 ** 63 - 1)),
    ("since=1.5", "The query parameter since must be a whole number from 0 to {0}".format(2 ** 63 - 1)),
    ("since=\u0661", "The query parameter since must be a whole number from 0 to {0}".format(2 ** 63 - 1)),
    ("since=" + "9" * 30, "The query parameter since must be a whole number from 0 to {0}".format(2 ** 63 - 1)),
    ("since=0&wait=61", "The query parameter wait must be a whole number from 0 to 60"),
    ("since=0&wait=-1", "The query parameter wait must be a whole number from 0 to 60"),
    ("since=0&limit=0", "The query parameter limit must be a whole number from 1 to 5000"),
    ("since=0&limit=5001", "The query parameter limit must be a whole number from 1 to 5000"),
])
def test_bad_parameters_are_400(cdb, two, query, message):
    env_id, _ = two
    answer = feed(cdb.app, env_id, query, status=400).json
    assert answer == {"message": message, "errors": []}


def test_max_wait_follows_the_settings_and_an_unknown_environment_is_404(cdb, two):
    env_id, _ = two
    settings.reload(overrides={"DATABASE_URL": settings.database_url, "FEED": {"max_wait": 2}})
    assert feed(cdb.app, env_id, "since=0&wait=3", status=400).json["message"].endswith("from 0 to 2")
    assert feed(cdb.app, 999, "since=0", status=404).json["message"].startswith("Cannot find an environment")


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["since", "wait", "limit"]), value=st.text(max_size=12))
def test_any_parameter_is_a_feed_or_a_400(cdb, two, name, value):
    """Whatever a client puts in a parameter: the feed or a JSON 400, never a 500 (and never a wait)."""
    env_id, _ = two
    params = {"since": "0", "wait": "0", name: value}
    response = cdb.app.get("{0}/environments/{1}/changes".format(API, env_id), params=params, expect_errors=True)
    assert response.status_int in (200, 400)
    assert ("changes" if response.status_int == 200 else "message") in response.json


def test_a_rolled_back_write_leaves_no_entry_and_moves_no_revision(cdb, two, session):
    env_id, (a, _) = two
    environment = session.get(Environment, env_id)
    document_obj.write(environment, resource_definition.lineage_resource(a), "", "values", {"x": 1}, "me")
    assert session.query(Change).count() == 1
    session.rollback()
    assert session.query(Change).count() == 0
    assert feed(cdb.app, env_id).json == {"environment_id": env_id, "revision": 0, "since": 0,
                                          "truncated": False, "changes": []}


# -- waiting in the request's thread ------------------------------------------------------------------

class Waiter(threading.Thread):
    """A GET of the feed with ``wait``, in its own thread (its own session, as a server thread)."""

    def __init__(self, app, env_id, query):
        super().__init__(daemon=True)
        self.app, self.env_id, self.query, self.response = app, env_id, query, None
        self.start()

    def run(self):
        try:
            self.response = feed(self.app, self.env_id, self.query)
        finally:
            db.remove()


def _until(condition, what):
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_a_waiter_is_answered_by_a_write_and_holds_no_connection_while_it_waits(cdb, two, migrated_db):
    env_id, (a, _) = two
    engine = migrated_db[0]
    waiter = Waiter(cdb.app, env_id, "since=0&wait=60")
    # it holds its thread first, then ends its transaction and gives its connection back, then waits
    _until(lambda: notify._holding == 1 and engine.pool.checkedout() == 0, "the waiter gave its connection back")
    time.sleep(0.5)
    assert waiter.is_alive() and engine.pool.checkedout() == 0  # still none held while it waits
    cdb.put(env_id, a, {"x": 1})
    waiter.join(30)
    assert not waiter.is_alive(), "the write woke the waiter"
    assert [c["revision"] for c in waiter.response.json["changes"]] == [1]
    assert "X-Feed-Waited" not in waiter.response.headers
    assert notify._holding == 0


def test_beyond_thread_waiters_a_wait_is_answered_at_once(cdb, two):
    env_id, (a, _) = two
    settings.reload(overrides={"DATABASE_URL": settings.database_url, "FEED": {"thread_waiters": 1}})
    waiter = Waiter(cdb.app, env_id, "since=0&wait=60")
    _until(lambda: notify._holding == 1, "the first waiter started waiting")
    second = feed(cdb.app, env_id, "since=0&wait=60")  # would block this thread for 60 s if it waited
    assert second.headers["X-Feed-Waited"] == "0" and second.json["changes"] == []
    cdb.put(env_id, a, {"x": 1})
    waiter.join(30)
    assert not waiter.is_alive() and len(waiter.response.json["changes"]) == 1
    settings.reload(overrides={"DATABASE_URL": settings.database_url, "FEED": {"thread_waiters": 0}})
    assert feed(cdb.app, env_id, "since=1&wait=60").headers["X-Feed-Waited"] == "0"


def test_a_wait_with_changes_already_there_answers_at_once_and_never_parks_without_a_parking_server(cdb, two):
    env_id, (a, _) = two
    cdb.put(env_id, a, {"x": 1})
    response = feed(cdb.app, env_id, "since=0&wait=60")
    assert len(response.json["changes"]) == 1 and notify.PARK_HEADER not in response.headers
    assert changes_obj.topic(env_id) == "configdb:{0}".format(env_id)


def test_the_feed_needs_nailgun_read_and_shows_the_authenticated_author(migrated_db, tmp_path):
    import base64
    import copy

    import webtest

    from nailgun_host.app import build_wsgi
    from tests.auth import write_users_file

    users = {"member": ("m-pw", ["member"]), "reader": ("r-pw", ["reader"]), "nobody": ("n-pw", ["other"])}
    saved = copy.deepcopy(dict(settings))
    settings.reload(overrides={"DATABASE_URL": settings.database_url, "AUTH": {
        "method": "local", "users_file": write_users_file(str(tmp_path / "users.yaml"), users)}})
    try:
        app = webtest.TestApp(build_wsgi())

        def auth(user):
            return {"Authorization": "Basic " + base64.b64encode(
                "{0}:{1}".format(user, users[user][0]).encode()).decode()}

        component = app.post_json(API + "/components", {"name": "c", "resource_definitions": [
            {"name": "r", "content": {}}]}, headers=auth("member")).json
        env_id = app.post_json(API + "/environments", {"components": ["c"], "hierarchy_levels": []},
                               headers=auth("member")).json["id"]
        app.put_json("{0}/environments/{1}/resources/{2}/values".format(
            API, env_id, component["resource_definitions"][0]["id"]), {"password": "s3cret"},
            headers=auth("member"), status=204)
        answer = feed(app, env_id, headers=auth("reader"))
        assert [c["author"] for c in answer.json["changes"]] == ["member"]
        assert "s3cret" not in answer.text and "X-Secrets-Masked" not in answer.headers
        denied = feed(app, env_id, headers=auth("nobody"), status=403).json
        assert "nailgun:read" in denied["message"]
        feed(app, env_id, status=401)
    finally:
        settings.clear()
        settings.update(saved)
