"""``POST /config/environments/<env>/documents``: many documents written at once (``api.document_batches``).

Each document is checked and stored as its own PUT would be; the batch is atomic (one revision shared, every
refusal leaves the database as it was, naming the item), bounded (413), and asks the policy as the PUTs do.
"""
import base64
import concurrent.futures
import copy
import json
import threading

import pytest
import requests
import sqlalchemy as sa
import webtest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_host.app import build_wsgi
from nailgun_host.settings import settings
from nailgun_platform.secrets.masking import MASK
from nailgun_ext_configdb import schemas
from tests.auth import write_users_file
from tests.configdb.conftest import API, STORAGE, stored_texts

SCHEMA = {"type": "object", "properties": {"port": {"type": "integer"}}}
TABLES = ("configdb_documents", "configdb_document_versions", "configdb_changes", "configdb_environments")


def batches_url(env_id):
    return "{0}/environments/{1}/documents".format(API, env_id)


def _setup(cdb, levels=("nodes",)):
    """Component ``c`` with ``astute`` (plain), ``typed`` (a value schema) and ``slashed/name``; an environment."""
    component = cdb.component("c", ["astute", {"name": "typed", "content": {"schema": SCHEMA}}, "slashed/name"])
    ids = {d["name"]: d["id"] for d in component["resource_definitions"]}
    return cdb.environment(["c"], levels)["id"], ids


def _state(session):
    """Every row a write could change (what a refused batch must leave as it was)."""
    state = {table: sorted(map(str, session.execute(sa.text("SELECT * FROM " + table)).all())) for table in TABLES}
    session.rollback()
    return state


def test_a_batch_stores_each_document_at_one_new_revision(cdb):
    env, ids = _setup(cdb)
    answer = cdb.app.post_json(batches_url(env), {"documents": [
        {"resource": "astute", "data": {"a": 1}},
        {"resource": ids["slashed/name"], "level": "nodes/1", "kind": "overrides", "data": {"b": [1, 2]}},
        {"resource": "typed", "level": "/nodes/2/", "data": {"port": 80}},
        {"resource": str(ids["astute"]), "level": "nodes/2/", "kind": "override", "data": {}}]}).json
    assert answer == {"revision": 1, "written": 4, "documents": [
        {"level": "/", "resource": ids["astute"], "resource_name": "astute", "kind": "values", "version": 1,
         "changed": True},
        {"level": "/nodes/1/", "resource": ids["slashed/name"], "resource_name": "slashed/name", "kind": "overrides",
         "version": 1, "changed": True},
        {"level": "/nodes/2/", "resource": ids["typed"], "resource_name": "typed", "kind": "values", "version": 1,
         "changed": True},
        {"level": "/nodes/2/", "resource": ids["astute"], "resource_name": "astute", "kind": "overrides",
         "version": 1, "changed": True}]}
    assert cdb.get(env, ids["slashed/name"], "nodes/1/", "overrides").json == {"b": [1, 2]}
    assert cdb.get(env, ids["astute"], "nodes/2/", query="effective").json == {"a": 1}
    assert cdb.app.get(API + "/environments/{0}".format(env)).json["revision"] == 1
    history = cdb.app.get(cdb.url(env, ids["typed"], "nodes/2/") + "/history").json
    assert [(h["version"], h["revision"], h["changed_keys"]) for h in history] == [(1, 1, ["/port"])]


def test_the_same_documents_again_make_no_version_nor_revision_and_a_change_makes_one(cdb):
    env, ids = _setup(cdb)
    batch = {"documents": [{"resource": "astute", "data": {"a": 1}}, {"resource": "typed", "data": {"port": 1}}]}
    cdb.app.post_json(batches_url(env), batch)
    again = cdb.app.post_json(batches_url(env), batch).json
    assert again["revision"] == 1 and again["written"] == 0
    assert [(d["version"], d["changed"]) for d in again["documents"]] == [(1, False), (1, False)]
    batch["documents"][1]["data"] = {"port": 2}
    changed = cdb.app.post_json(batches_url(env), batch).json
    assert changed["revision"] == 2 and [(d["version"], d["changed"]) for d in changed["documents"]] == [
        (1, False), (2, True)]


def test_the_feed_has_an_entry_for_each_document_written_all_at_the_batchs_revision(cdb):
    env, ids = _setup(cdb)
    cdb.put(env, ids["astute"], {"before": True})
    cdb.app.post_json(batches_url(env), {"documents": [
        {"resource": "astute", "data": {"before": True}},  # unchanged: no entry
        {"resource": "astute", "level": "nodes/1", "data": {"n": 1}},
        {"resource": "typed", "level": "nodes/1", "kind": "overrides", "data": {"port": "x"}}]})
    feed = cdb.app.get(API + "/environments/{0}/changes?since=1".format(env)).json
    assert feed["revision"] == 2
    assert [(c["revision"], c["resource_name"], c["level"], c["kind"], c["version"], c["change"])
            for c in feed["changes"]] == [(2, "astute", "/nodes/1/", "values", 1, "write"),
                                          (2, "typed", "/nodes/1/", "overrides", 1, "write")]


def _body(depth):
    data = {}
    for _ in range(depth - 1):
        data = {"k": data}
    return data


#: refused batches: (the batch's documents, status, what the message says, the item it names or None)
REFUSED = {
    "no data": ([{"resource": "astute"}], 400, "'data' is a required property", None),
    "a level without its value": ([{"resource": "astute", "level": "nodes", "data": {}}], 400, "does not match",
                                  None),
    "a level named twice": ([{"resource": "astute", "level": "nodes//1", "data": {}}], 400, "does not match", None),
    "an unknown kind": ([{"resource": "astute", "kind": "value", "data": {}}], 400, "is not one of", None),
    "a list for data": ([{"resource": "astute", "data": [1]}], 400, "is not of type 'object'", None),
    "an unknown field": ([{"resource": "astute", "data": {}, "version": 1}], 400, "Additional properties", None),
    "a NUL": ([{"resource": "astute", "data": {"a": "x\x00"}}], 400, "NUL", None),
    "too deep": ([{"resource": "astute", "data": _body(101)}], 400, "deeper than 100", None),
    "an unknown data source": ([{"resource": "astute", "data": {}}, {"resource": "nope", "data": {}}], 404,
                               "Data source nope is not supported", 1),
    "a level outside the hierarchy": ([{"resource": "astute", "data": {}},
                                       {"resource": "astute", "level": "racks/1", "data": {}}], 404,
                                      "Unexpected level name 'racks'", 1),
    "a document named twice": ([{"resource": "astute", "level": "nodes/1", "data": {"a": 1}},
                                {"resource": "typed", "data": {}},
                                {"resource": "ASTUTE_ID", "level": "/nodes/1/", "data": {"a": 2}}], 400,
                               "item 0 names this document too", 2),
    "a value its schema refuses": ([{"resource": "astute", "data": {"a": 1}},
                                    {"resource": "typed", "data": {"port": "http"}}], 400, "is not of type", 1),
    "a failed If-Match": ([{"resource": "astute", "data": {"a": 1}},
                           {"resource": "typed", "data": {"port": 1}, "if_match": '"stale"'}], 412,
                          "If-Match does not match", 1),
    "too many documents": ([{"resource": "astute", "level": "nodes/{0}".format(n), "data": {}}
                            for n in range(schemas.MAX_BATCH_DOCUMENTS + 1)], 413, "at most 1000 documents", None),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_refused_batch_names_what_is_refused_and_writes_nothing(cdb, session, case):
    env, ids = _setup(cdb)
    cdb.put(env, ids["typed"], {"port": 8})
    documents, status, message, item = copy.deepcopy(REFUSED[case])
    for document in documents:
        document["resource"] = ids["astute"] if document["resource"] == "ASTUTE_ID" else document["resource"]
    before = _state(session)
    answer = cdb.app.post_json(batches_url(env), {"documents": documents}, status=status).json
    assert message in answer["message"]
    if item is not None:
        assert answer["message"].startswith("Document {0} of the batch (".format(item))
        assert answer["errors"][0]["item"] == item
    assert _state(session) == before


@pytest.mark.parametrize("headers, message", [
    ({"X-Configuration-Session": "1"}, "not staged in a configuration session"),
    ({"If-Match": "*"}, "give it as the item's if_match"),
])
def test_a_session_or_a_whole_batchs_if_match_is_refused(cdb, session, headers, message):
    env, _ = _setup(cdb)
    before = _state(session)
    answer = cdb.app.post_json(batches_url(env), {"documents": [{"resource": "astute", "data": {}}]},
                               headers=headers, status=400).json
    assert message in answer["message"] and _state(session) == before


def test_a_body_over_the_cap_is_413_and_an_unknown_environment_404(cdb, session):
    env, _ = _setup(cdb)
    before = _state(session)
    settings["MAX_REQUEST_BODY"] = 1024
    cdb.app.post_json(batches_url(env), {"documents": [{"resource": "astute", "data": {"a": "x" * 2000}}]},
                      status=413)
    settings["MAX_REQUEST_BODY"] = 10 * 1024 * 1024
    cdb.app.post_json(batches_url(env + 1), {"documents": [{"resource": "astute", "data": {}}]}, status=404)
    assert _state(session) == before


def test_a_document_is_as_deep_as_its_put_allows(cdb):
    env, ids = _setup(cdb)
    deepest = _body(100)
    cdb.put(env, ids["astute"], deepest)
    cdb.put(env, ids["astute"], _body(101), status=400)
    cdb.app.post_json(batches_url(env), {"documents": [{"resource": "astute", "level": "nodes/1", "data": deepest}]})
    assert cdb.get(env, ids["astute"], "nodes/1/").json == deepest


def test_an_item_if_match_is_the_etag_of_the_document_as_its_get_answers(cdb):
    env, ids = _setup(cdb)
    cdb.put(env, ids["astute"], {"a": 1})
    tag = cdb.get(env, ids["astute"]).headers["ETag"]
    cdb.app.post_json(batches_url(env), {"documents": [
        {"resource": "astute", "data": {"a": 2}, "if_match": tag},
        {"resource": "typed", "level": "nodes/1", "data": {}, "if_match": "*"}]})
    assert cdb.get(env, ids["astute"]).json == {"a": 2}
    cdb.app.post_json(batches_url(env), {"documents": [{"resource": "astute", "data": {"a": 3}, "if_match": tag}]},
                      status=412)


TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=6)
JSON_LEAVES = st.none() | st.booleans() | st.integers(-2 ** 40, 2 ** 40) | st.floats(
    allow_nan=False, allow_infinity=False) | TEXT
DOCUMENTS = st.dictionaries(st.sampled_from(["a", "b", "password", "port"]), st.recursive(
    JSON_LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6), max_size=4)


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(writes=st.lists(st.tuples(st.sampled_from(["", "nodes/1/", "nodes/2/"]), st.sampled_from(
    ["values", "overrides"]), DOCUMENTS), min_size=1, max_size=4))
def test_a_batch_stores_what_the_same_puts_store(migrated_db, writes):
    """Environment 1 gets each write as its PUT, environment 2 as one batch per round: every document, its
    effective values, history (versions, changed keys) and feed entries (but revisions) read the same."""
    from tests.conftest import LOOPBACK, _empty_tables
    from tests.configdb.conftest import ConfigAPI
    engine, tables = migrated_db
    _empty_tables(engine, tables)
    cdb = ConfigAPI(webtest.TestApp(build_wsgi(), extra_environ=LOOPBACK))
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    by_put, by_batch = cdb.environment(["c"])["id"], cdb.environment(["c"])["id"]
    for rounds in (writes, writes[::-1]):
        places = {}
        for levels, kind, data in rounds:
            places[levels, kind] = data
        for (levels, kind), data in places.items():
            cdb.put(by_put, rid, data, levels, kind)
        cdb.app.post_json(batches_url(by_batch), {"documents": [
            {"resource": rid, "level": levels, "kind": kind, "data": data} for (levels, kind), data in places.items()]})
    for levels in ("", "nodes/1/", "nodes/2/"):
        for kind in ("values", "overrides"):
            assert cdb.get(by_put, rid, levels, kind).json == cdb.get(by_batch, rid, levels, kind).json
            history = [cdb.app.get(cdb.url(env, rid, levels, kind) + "/history").json for env in (by_put, by_batch)]
            assert [[(h["version"], h["changed_keys"]) for h in each] for each in history] == [
                [(h["version"], h["changed_keys"]) for h in history[0]]] * 2
        assert cdb.get(by_put, rid, levels, query="effective").json == cdb.get(
            by_batch, rid, levels, query="effective").json
    feeds = [cdb.app.get(API + "/environments/{0}/changes?since=0".format(env)).json["changes"]
             for env in (by_put, by_batch)]
    assert sorted((c["level"], c["kind"], c["version"]) for c in feeds[0]) == sorted(
        (c["level"], c["kind"], c["version"]) for c in feeds[1])


def test_statements_grow_by_a_fixed_count_per_document(cdb, query_counter):
    """Read once: the environment (locked), each data source and level; the stored documents per data source;
    then per document written only its own rows (the document, its version, its feed entry, the feed's wake-up)."""
    env, ids = _setup(cdb)

    def statements(count, first):
        body = {"documents": [{"resource": "astute", "level": "nodes/{0}".format(n), "data": {"n": n}}
                              for n in range(first, first + count)]}
        with query_counter.counting() as counted:
            cdb.app.post_json(batches_url(env), body)
        return counted.count

    statements(1, 1000)  # the first write of an environment (SQLite: its notify counter row)
    per_document = {"sql": 4, "git": 5}[STORAGE]  # the git driver runs one more of its own
    assert statements(8, 100) - statements(4, 0) == 4 * per_document


# -- rights and secrets ----------------------------------------------------------------------------------------

USERS = {"reader": ("reader-pw", ["reader"]), "member": ("member-pw", ["member"]), "admin": ("admin-pw", ["admin"])}


def auth(user):
    token = base64.b64encode("{0}:{1}".format(user, USERS[user][0]).encode()).decode()
    return {"Authorization": "Basic " + token}


@pytest.fixture
def secured(migrated_db, tmp_path):
    """The application with local authentication: a reader, a member (sees no secrets) and an admin."""
    saved = copy.deepcopy(dict(settings))
    settings.reload(overrides={"AUTH": {"method": "local", "users_file": write_users_file(
        str(tmp_path / "users.yaml"), USERS)}})
    app = webtest.TestApp(build_wsgi())
    component = app.post_json(API + "/components", {"name": "c", "resource_definitions": [{"name": "db"}]},
                              headers=auth("admin")).json
    app.post_json(API + "/environments", {"components": ["c"], "hierarchy_levels": ["nodes"]}, headers=auth("admin"))
    yield app, component["resource_definitions"][0]["id"]
    settings.clear()
    settings.update(saved)


def test_a_reader_may_not_write_a_batch(secured, session):
    app, _ = secured
    before = _state(session)
    answer = app.post_json(batches_url(1), {"documents": [{"resource": "db", "data": {}}]}, headers=auth("reader"),
                           status=403).json
    assert "nailgun:write" in answer["message"] and _state(session) == before


def test_secrets_are_sealed_at_rest_and_a_members_mask_keeps_the_stored_secret(secured, session):
    app, rid = secured
    url = "{0}/environments/1/nodes/1/resources/{1}/values".format(API, rid)
    app.post_json(batches_url(1), {"documents": [{"resource": "db", "level": "nodes/1",
                                                  "data": {"password": "s3cret-batch", "port": 1}}]},
                  headers=auth("admin"))
    assert not any("s3cret-batch" in text for text in stored_texts(session))
    seen = app.get(url, headers=auth("member"))
    assert seen.json == {"password": MASK, "port": 1}
    answer = app.post_json(batches_url(1), {"documents": [
        {"resource": "db", "level": "nodes/1", "data": dict(seen.json, port=2), "if_match": seen.headers["ETag"]}]},
        headers=auth("member")).json
    assert answer["documents"][0]["version"] == 2 and json.dumps(answer).find("s3cret") == -1
    assert app.get(url, headers=auth("admin")).json == {"password": "s3cret-batch", "port": 2}
    history = app.get(url + "/history", headers=auth("admin")).json
    assert [(h["author"], h["changed_keys"]) for h in history] == [("admin", ["/password", "/port"]),
                                                                   ("member", ["/port"])]
    refused = app.post_json(batches_url(1), {"documents": [{"resource": "db", "level": "nodes/1", "data": {
        "password": "s3cret-batch", "port": 3}, "if_match": app.get(url, headers=auth("admin")).headers["ETag"]}]},
        headers=auth("member"), status=412).json
    assert "s3cret" not in json.dumps(refused)


def test_an_author_named_for_another_needs_the_right_to_act_for_others(secured, session):
    app, _ = secured
    before = _state(session)
    app.post_json(batches_url(1), {"documents": [{"resource": "db", "data": {}}]},
                  headers=dict(auth("member"), **{"X-Config-Author": "someone"}), status=403)
    assert _state(session) == before


# -- PostgreSQL: a batch and single PUTs at once -----------------------------------------------------------------

def test_a_batch_and_puts_of_the_same_environment_at_once_keep_every_version_and_revision(cdb, db_url, request):
    """Another worker (gunicorn) answers PUTs while this process writes batches over the same documents: each
    request's writes land whole, in some order, none lost: versions without gaps, a batch's documents at one
    revision, every revision used once."""
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL): two workers writing at once")
    server = request.getfixturevalue("gunicorn") + "config"
    env, ids = _setup(cdb)
    nodes = ["nodes/{0}/".format(n) for n in range(1, 6)]

    def puts(round_):
        for levels in nodes:
            url = "{0}/environments/{1}/{2}resources/{3}/values".format(server, env, levels, ids["astute"])
            assert requests.put(url, json={"put": round_}, timeout=60).status_code == 204

    def batch(round_):
        cdb.app.post_json(batches_url(env), {"documents": [
            {"resource": ids["astute"], "level": levels, "data": {"batch": round_}} for levels in nodes]})

    with concurrent.futures.ThreadPoolExecutor(1) as other:
        running = [other.submit(puts, round_) for round_ in range(4)]
        for round_ in range(4):
            batch(round_)
        for each in running:
            each.result()
    revisions = {}
    for levels in nodes:
        history = cdb.app.get(cdb.url(env, ids["astute"], levels) + "/history").json
        assert [h["version"] for h in history] == list(range(1, len(history) + 1)) and len(history) == 8
        for entry in history:
            revisions.setdefault(entry["revision"], []).append(levels)
    assert len(revisions) == 4 * 5 + 4 and sorted(map(len, revisions.values())) == [1] * 20 + [5] * 4
    assert cdb.app.get(API + "/environments/{0}".format(env)).json["revision"] == max(revisions)


def test_a_batch_item_and_a_put_holding_the_same_if_match_at_once_let_exactly_one_write(cdb, db_url, request):
    """Both gunicorn workers, each with one of the two, read the same ETag and write at once: one writes, the other
    is refused with 412 (neither overwrites what it did not read), round after round."""
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL): two workers writing at once")
    server = request.getfixturevalue("gunicorn") + "config"
    env, ids = _setup(cdb)
    url = "{0}/environments/{1}/resources/{2}/values".format(server, env, ids["astute"])
    assert requests.put(url, json={"by": "start"}, timeout=60).status_code == 204
    rounds = 6
    for round_ in range(rounds):
        tag = requests.get(url, timeout=60).headers["ETag"]
        together = threading.Barrier(2)

        def put(round_=round_, tag=tag, together=together):
            together.wait()
            return requests.put(url, json={"by": "put", "round": round_}, headers={"If-Match": tag}, timeout=60)

        def batch(round_=round_, tag=tag, together=together):
            together.wait()
            return requests.post("{0}/environments/{1}/documents".format(server, env), timeout=60, json={
                "documents": [{"resource": "astute", "data": {"by": "batch", "round": round_}, "if_match": tag}]})

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            by_put, by_batch = [answer.result() for answer in (pool.submit(put), pool.submit(batch))]
        assert sorted([by_put.status_code, by_batch.status_code]) in ([200, 412], [204, 412]), (
            by_put.text, by_batch.text)
        winner = "put" if by_put.status_code == 204 else "batch"
        assert requests.get(url, timeout=60).json() == {"by": winner, "round": round_}
    history = requests.get(url + "/history", timeout=60).json()
    assert sorted(h["version"] for h in history) == list(range(1, rounds + 2))
