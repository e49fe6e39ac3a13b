"""A data source's new version that makes a leaf secret reseals the stored documents
(``resealing.reseal_documents``) while writers of those documents run in other workers: the reseal locks the
environments it reseals, so a write either commits before it reads the documents (and is resealed) or sees the new
version's markers under its lock (and seals with them). No leaf stays in clear at rest (PostgreSQL: two workers)."""
import time

import pytest
import requests

from nailgun_host.db import db, get_engine, sealed
from nailgun_platform.secrets import sealing
from nailgun_ext_configdb.objects import document_view, resealing
from tests.configdb.conftest import API, STORAGE, stored_texts

SECRET_SCHEMA = {"schema": {"type": "object", "properties": {"pin_code": {"x-secret": True}}}}


@pytest.fixture
def server(db_url, migrated_db, request):
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL): two workers writing at once")
    return request.getfixturevalue("gunicorn") + "config"


@pytest.mark.skipif(STORAGE != "sql", reason="the git driver's commits keep what they held (docs: storage drivers)")
def test_a_write_stored_while_a_new_version_reseals_leaves_no_newly_secret_leaf_in_clear(cdb, server, session,
                                                                                       monkeypatch):
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"])["id"]
    cdb.put(env, rid, {"pin_code": "ClEaR-1"})
    assert requests.get("{0}/resource_definitions/{1}".format(server, rid), timeout=30).ok  # the worker started
    stored = document_view.DocumentView.store
    answers = []

    def store(self, *args, **kwargs):  # under the environment's lock, before this write commits
        if not answers:
            try:
                answers.append(requests.put("{0}/resource_definitions/{1}".format(server, rid),
                                            json={"content": SECRET_SCHEMA}, timeout=10).status_code)
            except requests.Timeout:  # waits for this write's lock: it reseals once this write commits
                answers.append("waited")
        return stored(self, *args, **kwargs)
    monkeypatch.setattr(document_view.DocumentView, "store", store)
    cdb.put(env, rid, {"pin_code": "ClEaR-2"})
    for _ in range(100):  # the other worker's new version, committed
        if len(cdb.app.get(API + "/resource_definitions?name=r").json) == 2:
            break
        time.sleep(0.1)
    assert len(cdb.app.get(API + "/resource_definitions?name=r").json) == 2
    assert answers
    texts = stored_texts(session)
    assert len(texts) == 3  # the document and its two versions
    assert not [text for text in texts if "ClEaR" in text], texts
    assert cdb.get(env, rid).json == {"pin_code": "ClEaR-2"}


def test_a_write_while_reencrypt_rewrites_its_document_is_kept_not_overwritten_by_the_older_value(
        cdb, server, monkeypatch):
    """``nailgun-secrets reencrypt`` after ``rotate`` rewrites every document's tokens while the service runs: a
    write to a document it has read but not yet written back waits for that environment's reseal to commit, and
    lands after it (it is not overwritten by the older value, resealed)."""
    rid = cdb.component("c", [{"name": "r", "content": SECRET_SCHEMA}])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"])["id"]
    cdb.put(env, rid, {"pin_code": "before"})
    url = "{0}/environments/{1}/resources/{2}/values".format(server, env, rid)
    assert requests.get(url, timeout=30).json() == {"pin_code": "before"}  # the worker started
    sealed.rotate_keys(get_engine())  # every token is renewed: every document is written back
    renew = sealing.reencrypt
    answers = []

    def reencrypt(value, keyset):  # the reseal has read the environment's documents and writes them back next
        if not answers:
            try:
                answers.append(requests.put(url, json={"pin_code": "after"}, timeout=2).status_code)
            except requests.Timeout:
                answers.append("waited")
        return renew(value, keyset)
    monkeypatch.setattr(sealing, "reencrypt", reencrypt)
    resealing.reseal_documents()  # what `nailgun-secrets reencrypt` runs for ConfigDB, a commit per environment
    db.remove()
    monkeypatch.undo()
    assert answers == ["waited"]
    for _ in range(100):  # the waiting write, committed
        if cdb.get(env, rid).json != {"pin_code": "before"}:
            break
        time.sleep(0.1)
    assert cdb.get(env, rid).json == {"pin_code": "after"}
    assert [h["version"] for h in cdb.app.get(cdb.url(env, rid) + "/history").json] == [1, 2]
