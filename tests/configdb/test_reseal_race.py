"""A data source's new version that makes a leaf secret reseals the stored documents
(``resealing.reseal_documents``) while writers of those documents run in other workers: the reseal locks the
environments it reseals, so a write either commits before it reads the documents (and is resealed) or sees the new
version's markers under its lock (and seals with them). No leaf stays in clear at rest (PostgreSQL: two workers)."""
import time

import pytest
import requests

from nailgun_ext_configdb.objects import document_view
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
