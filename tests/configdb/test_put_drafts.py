"""A write (PUT, JSON patch, keys operation, revert) drafts its new version before it locks the environment
(``api.documents.drafted_write``): what another worker commits in between is seen under the lock, and the version
drafted again from it; writers of different documents, of one environment or several, keep every version and
revision."""
import concurrent.futures
import json

import pytest
import requests

from nailgun_ext_configdb.objects import document_view
from tests.configdb.conftest import API

VERSIONS = 8


@pytest.fixture
def on_postgresql(db_url, migrated_db):
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL): two workers writing at once")


@pytest.fixture
def server(on_postgresql, request):
    """Another worker on the same database (gunicorn), asked for after ``migrated_db`` has emptied it."""
    return request.getfixturevalue("gunicorn") + "config"


def _written_meanwhile(monkeypatch, write):
    """Runs ``write`` (another worker's commit) once, after this process's PUT has drafted and before it locks."""
    drafted = document_view.DocumentView.draft
    done = []

    def draft(self, *args, **kwargs):
        result = drafted(self, *args, **kwargs)
        if not done:
            try:  # a write drafted under the lock would hold the other worker up: it times out
                done.append(write())
            except requests.Timeout:
                done.append("timed out")
        return result
    monkeypatch.setattr(document_view.DocumentView, "draft", draft)
    return done


def test_a_version_committed_between_the_draft_and_the_lock_is_drafted_over(cdb, server, monkeypatch):
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"])["id"]
    cdb.put(env, rid, {"a": 1, "password": "first"})
    url = "{0}/environments/{1}/resources/{2}/values".format(server, env, rid)
    done = _written_meanwhile(monkeypatch, lambda: requests.put(url, json={"a": 2, "password": "other"}).status_code)
    cdb.put(env, rid, {"a": 3, "password": "mine"})
    assert done == [204]
    history = cdb.app.get(cdb.url(env, rid) + "/history").json
    assert [(h["version"], h["revision"]) for h in history] == [(1, 1), (2, 2), (3, 3)]
    assert history[2]["changed_keys"] == ["/a", "/password"]  # against the other worker's version, not mine
    assert cdb.get(env, rid).json == {"a": 3, "password": "mine"}
    assert cdb.app.get(API + "/environments/{0}".format(env)).json["revision"] == 3


def test_if_match_is_checked_again_against_what_was_committed_meanwhile(cdb, server, monkeypatch):
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"])["id"]
    cdb.put(env, rid, {"a": 1})
    tag = cdb.get(env, rid).headers["ETag"]
    url = "{0}/environments/{1}/resources/{2}/values".format(server, env, rid)
    _written_meanwhile(monkeypatch, lambda: requests.put(url, json={"a": 2}).status_code)
    cdb.put(env, rid, {"a": 3}, headers={"If-Match": tag}, status=412)
    assert cdb.get(env, rid).json == {"a": 2}
    assert [h["version"] for h in cdb.app.get(cdb.url(env, rid) + "/history").json] == [1, 2]


def test_a_document_created_meanwhile_is_written_over_not_twice(cdb, server, monkeypatch):
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"])["id"]
    url = "{0}/environments/{1}/nodes/n1/resources/{2}/values".format(server, env, rid)
    _written_meanwhile(monkeypatch, lambda: requests.put(url, json={"theirs": 1}).status_code)
    cdb.put(env, rid, {"mine": 1}, levels="nodes/n1/")
    history = cdb.app.get(cdb.url(env, rid, "nodes/n1/") + "/history").json
    assert [(h["version"], h["changed_keys"]) for h in history] == [(1, ["/theirs"]), (2, ["/theirs", "/mine"])]


#: each write, from {"a": 1, "password": "first"} stored as version 1 while another worker stored
#: {"a": 2, "b": 2, "password": "other"} as version 2: (method, path, body, answer, what it stores, its changed keys)
WRITES = {
    "patch": ("PATCH", "", [{"op": "replace", "path": "/a", "value": 3}], 204,
              {"a": 3, "b": 2, "password": "other"}, ["/a"]),
    "keys set": ("PATCH", "/keys/set", [["a", 3]], 204, {"a": 3, "b": 2, "password": "other"}, ["/a"]),
    "keys delete": ("PUT", "/keys/delete", [["a"]], 204, {"b": 2, "password": "other"}, ["/a"]),
    "revert": ("POST", "/revert", {"version": 1}, 201, {"a": 1, "password": "first"}, ["/a", "/b", "/password"]),
}


def _media_type(method, path):
    return "application/json-patch+json" if (method, path) == ("PATCH", "") else "application/json"


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_drafts_before_the_lock_and_again_over_what_was_committed_meanwhile(cdb, server, monkeypatch,
                                                                                       write):
    method, path, body, status, stored, changed = WRITES[write]
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"])["id"]
    cdb.put(env, rid, {"a": 1, "password": "first"})
    url = "{0}/environments/{1}/resources/{2}/values".format(server, env, rid)
    done = _written_meanwhile(monkeypatch, lambda: requests.put(
        url, json={"a": 2, "b": 2, "password": "other"}, timeout=10).status_code)
    cdb.app.request(cdb.url(env, rid) + path, method=method, body=json.dumps(body).encode(),
                    content_type=_media_type(method, path), status=status)
    assert done == [204]
    history = cdb.app.get(cdb.url(env, rid) + "/history").json
    assert [(h["version"], h["revision"]) for h in history] == [(1, 1), (2, 2), (3, 3)]
    assert history[2]["changed_keys"] == changed  # against the other worker's version
    assert cdb.get(env, rid).json == stored


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_write_checks_if_match_again_against_what_was_committed_meanwhile(cdb, server, monkeypatch, write):
    method, path, body, _, _, _ = WRITES[write]
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"])["id"]
    cdb.put(env, rid, {"a": 1, "password": "first"})
    tag = cdb.get(env, rid).headers["ETag"]
    url = "{0}/environments/{1}/resources/{2}/values".format(server, env, rid)
    done = _written_meanwhile(monkeypatch, lambda: requests.put(
        url, json={"a": 2, "b": 2, "password": "other"}, timeout=10).status_code)
    cdb.app.request(cdb.url(env, rid) + path, method=method, body=json.dumps(body).encode(),
                    content_type=_media_type(method, path), headers={"If-Match": tag}, status=412)
    assert done == [204]
    assert cdb.get(env, rid).json == {"a": 2, "b": 2, "password": "other"}


def _put_versions(url, writer):
    with requests.Session() as http:
        for number in range(VERSIONS):
            answer = http.put(url, json={"writer": writer, "number": number, "password": "p{0}".format(number)})
            assert answer.status_code == 204, answer.text


@pytest.mark.parametrize("documents", ["of one environment", "of four environments", "one document"])
def test_concurrent_writers_keep_every_version_and_revision(server, documents):
    assert requests.post(server + "/components", json={"name": "c", "resource_definitions": [{"name": "r"}]}).ok
    for _ in range(4):
        assert requests.post(server + "/environments", json={"components": ["c"], "hierarchy_levels": ["nodes"]}).ok
    urls = {"of one environment": ["{0}/environments/1/nodes/n{1}/resources/1/values".format(server, n)
                                   for n in range(4)],
            "of four environments": ["{0}/environments/{1}/resources/1/values".format(server, n) for n in range(1, 5)],
            "one document": ["{0}/environments/1/resources/1/values".format(server)] * 4}[documents]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(_put_versions, urls, range(4)))
    for environment in sorted({int(url.split("/environments/")[1].split("/")[0]) for url in urls}):
        mine = sorted(set(url for url in urls if "/environments/{0}/".format(environment) in url))
        revisions = []
        for url in mine:
            history = requests.get(url + "/history").json()
            assert [h["version"] for h in history] == list(range(1, len(history) + 1))
            assert len(history) == VERSIONS * urls.count(url)
            revisions += [h["revision"] for h in history]
        assert sorted(revisions) == list(range(1, len(revisions) + 1))  # one revision each, none lost
        found = requests.get(server + "/environments/{0}".format(environment)).json()
        assert found["revision"] == len(revisions)
        feed = requests.get(server + "/environments/{0}/changes?since=0&limit=5000".format(environment)).json()
        assert sorted(c["revision"] for c in feed["changes"]) == sorted(revisions)
