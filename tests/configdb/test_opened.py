"""Documents' opened content kept in memory (``objects.opened``) never changes an answer: after any writes
(with ``$unset`` markers and secret leaves), deletions and re-creations of the environment (SQLite gives the
new documents the ids of the deleted ones), key rotations, re-encryptions and retirements, every computed
effective GET equals the one computed with nothing kept (body, ETag, status)."""
import copy

import pytest
import webtest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_host.app import build_wsgi
from nailgun_host.db import sealed as host_sealed
from nailgun_host.settings import settings
from nailgun_platform import secrets
from nailgun_platform.secrets import keys
from nailgun_ext_configdb.objects import json_values, merge, opened
from tests.configdb.conftest import API, ConfigAPI

NODES = ("n1", "n2")
LEVELS = ("",) + tuple("nodes/{0}/".format(node) for node in NODES)
QUERIES = ("effective", "effective&key=a", "effective&show_lookup")


@pytest.fixture
def computing(migrated_db, monkeypatch):
    """A ConfigAPI whose every effective GET is computed (no answer replayed), the key set checked on every use."""
    saved = copy.deepcopy(dict(settings))
    settings.reload(overrides={"READ_CACHE": {"max_bytes": 0}})
    monkeypatch.setattr(secrets, "RECHECK_AFTER", 0)
    opened.clear()
    yield ConfigAPI(webtest.TestApp(build_wsgi(), extra_environ={"REMOTE_ADDR": "127.0.0.1"}))
    opened.clear()
    settings.clear()
    settings.update(saved)


VALUES = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["x", "y"]),
                      lambda inner: st.lists(inner, max_size=2) | st.dictionaries(
                          st.sampled_from(["a", "b", "password"]), inner | st.just(merge.UNSET), max_size=3),
                      max_leaves=6)
DOCUMENTS = st.dictionaries(st.sampled_from(["a", "b", "c", "password"]), VALUES | st.just(merge.UNSET), max_size=4)
STEPS = st.lists(st.one_of(
    st.tuples(st.just("put"), st.sampled_from(LEVELS), st.sampled_from(["values", "overrides"]), DOCUMENTS),
    st.tuples(st.just("recreate"), DOCUMENTS), st.tuples(st.just("rotate")), st.tuples(st.just("retire"))),
    min_size=1, max_size=8)


def _answers(cdb):
    return [(answer.status_int, answer.headers.get("ETag"), answer.body)
            for answer in (cdb.get(1, 1, "nodes/{0}/".format(node), query=query, status="*")
                           for node in NODES for query in QUERIES)]


def _without_kept(cdb):
    kept = settings["READ_CACHE"]["documents_max_bytes"]
    settings["READ_CACHE"]["documents_max_bytes"] = 0
    opened.clear()
    try:
        return _answers(cdb)
    finally:
        settings["READ_CACHE"]["documents_max_bytes"] = kept


def _environment(cdb, first=None):
    """Environment 1, its first document ``first``: a re-created one's take the deleted ones' ids, versions and
    revisions, so only what tells the environments apart keeps the old content from being read."""
    cdb.app.post_json(API + "/environments", {"id": 1, "components": ["c"], "hierarchy_levels": ["nodes"]},
                      status=201)
    cdb.put(1, 1, first if first is not None else {"a": {"b": 1}, "password": "p0"})


@hypothesis_settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_kept_documents_answer_what_documents_read_again_answer(computing, steps):
    cdb = computing
    if not cdb.app.get(API + "/components").json:
        cdb.component("c", ["r"])
    if cdb.app.get(API + "/environments/1", status="*").status_int == 404:
        _environment(cdb)
    path = secrets.repository_path()
    for step in steps:
        if step[0] == "put":
            cdb.put(1, 1, step[3], levels=step[1], kind=step[2])
        elif step[0] == "recreate":
            cdb.app.delete(API + "/environments/1", status=204)
            _environment(cdb, step[1])
        elif step[0] == "rotate":
            keys.rotate(path)
        else:
            host_sealed.reencrypt_all()
            keys.retire(path)
        _answers(cdb)  # what is kept now, read through it next
        assert _answers(cdb) == _without_kept(cdb)


def test_a_document_is_read_from_the_database_once_then_from_memory(computing, query_counter):
    cdb = computing
    cdb.component("c", ["r"])
    _environment(cdb)
    cdb.put(1, 1, {"a": 2}, levels="nodes/n1/")
    first = _answers(cdb)
    with query_counter.counting():
        assert _answers(cdb) == first
    assert not [s for s in query_counter.statements if "length(" in s.lower()]  # no content loaded


def test_the_memory_is_bounded_least_recently_used_out_first(computing):
    settings["READ_CACHE"]["documents_max_bytes"] = 100
    opened.put("a", {"x": 1}, True, 60, opened.keyset())
    opened.put("b", {"x": 2}, True, 30, opened.keyset())
    assert opened.get("a") == ({"x": 1}, True)  # now the most recently used
    opened.put("c", {"x": 3}, True, 30, opened.keyset())
    assert (opened.get("a"), opened.get("b"), opened.get("c")) == (({"x": 1}, True), None, ({"x": 3}, True))
    opened.put("d", {"x": 4}, True, 101, opened.keyset())  # larger than the bound: not kept
    assert opened.get("d") is None


def test_merge_shares_what_no_narrower_layer_fills_and_changes_no_layer():
    broad = {"shared": {"deep": [1]}, "filled": {"x": 1, "y": {"z": 1}}}
    narrow = {"filled": {"y": {"w": 2}}, "gone": merge.UNSET}
    before = copy.deepcopy((broad, narrow))
    merged = merge.values([("broad", broad), ("narrow", narrow)], marker_free={"broad"})
    assert merged == merge.effective([("broad", broad), ("narrow", narrow)])[0]
    assert merged["shared"] is broad["shared"] and merged["filled"] is not broad["filled"]
    assert (broad, narrow) == before


def test_a_document_deleted_between_its_head_and_its_content_is_left_out(computing, monkeypatch):
    """Two statements apart (the ETag's heads, then the content of those not kept), a racing deletion must not
    make the read fail: what is gone is not merged, as when one statement read both."""
    from nailgun_ext_configdb.objects import document as document_obj
    cdb = computing
    cdb.component("c", ["r"])
    _environment(cdb)
    expected = cdb.get(1, 1, "nodes/n1/", query="effective").json
    real = document_obj.holding_and_heads
    gone = (10 ** 6, 1, 1, "nodes/n1", "values")
    monkeypatch.setattr(document_obj, "holding_and_heads", lambda *args: (real(*args)[0], real(*args)[1] + [gone]))
    opened.clear()
    assert cdb.get(1, 1, "nodes/n1/", query="effective").json == expected


def test_a_recreated_environment_never_reads_the_deleted_ones_content(computing):
    """Its documents may take the deleted ones' ids (SQLite), versions and revisions: all but its creation time."""
    cdb = computing
    cdb.component("c", ["r"])
    _environment(cdb, {"a": "old"})
    assert cdb.get(1, 1, "nodes/n1/", query="effective").json == {"a": "old"}
    cdb.app.delete(API + "/environments/1", status=204)
    _environment(cdb, {"a": "new"})
    assert cdb.get(1, 1, "nodes/n1/", query="effective").json == {"a": "new"}


def test_content_opened_before_the_keys_change_is_not_kept_for_the_new_keys(computing, monkeypatch):
    """The key set may change (a rotation, a retirement) between the read of a document's content, opened with
    the old keys, and keeping it: kept then, it would be what the new keys open, a secret of a retired key
    served in clear after the retirement until something else changes the keys."""
    from nailgun_ext_configdb.objects import document as document_obj
    cdb = computing
    cdb.component("c", ["r"])
    _environment(cdb)
    real = document_obj._filled

    def filled_then_keys_change(*args):
        rows = real(*args)
        secrets._cache["keyset"] = keys.load(secrets.repository_path())  # another key set in force from now
        return rows
    monkeypatch.setattr(document_obj, "_filled", filled_then_keys_change)
    opened.clear()
    assert cdb.get(1, 1, "nodes/n1/", query="effective").json == {"a": {"b": 1}, "password": "p0"}
    assert not opened._kept


def test_an_answer_is_made_from_the_text_of_kept_members_encoded_once(computing, monkeypatch):
    """A computed effective answer takes the text of the members it shares with kept documents from them
    (``json_values.spliced``): encoded once per document version, not whole again for every read."""
    cdb = computing
    cdb.component("c", ["r"])
    _environment(cdb, {"a": {"b": 1}, "big": list(range(100)), "password": "p0"})
    cdb.put(1, 1, {"c": 2, "a": {"d": None}}, levels="nodes/n1/")
    made, encoded = [], []
    real_members, real_canonical = json_values.members, json_values.canonical
    monkeypatch.setattr(json_values, "members", lambda document: made.append(document) or real_members(document))
    monkeypatch.setattr(json_values, "canonical", lambda value: encoded.append(value) or real_canonical(value))
    first = cdb.get(1, 1, "nodes/n1/", query="effective")
    assert sorted(map(sorted, made)) == [["a", "big", "password"], ["a", "c"]]  # the two documents, once each
    cdb.put(1, 1, {"other": 1}, levels="nodes/n2/")  # a write elsewhere: the answer is computed again
    del made[:], encoded[:]
    again = cdb.get(1, 1, "nodes/n1/", query="effective")
    assert again.body == first.body and first.json["a"] == {"b": 1, "d": None}
    assert made == [] and encoded == [{"b": 1, "d": None}]  # only what the merge made: the node's "a"


def test_the_text_of_members_counts_in_the_bound_and_goes_with_its_document(computing):
    settings["READ_CACHE"]["documents_max_bytes"] = 100
    first, second, third = {"x": "y" * 20}, {"z": 1}, {"w": 2}
    opened.put("first", first, True, 30, opened.keyset())
    opened.put("second", second, True, 30, opened.keyset())
    assert opened.members(first) == {"x": '"x": "' + "y" * 20 + '"'} and opened.members(second) == {"z": '"z": 1'}
    assert opened.members(first) is opened.members(first)  # made once
    opened.put("third", third, True, 30, opened.keyset())  # 30 + 27 + 30 + 6 + 30 > 100: the first goes
    assert (opened.get("first"), opened.members(first)) == (None, None)
    assert opened.get("second") == (second, True)
    marked = {"x": merge.UNSET}
    opened.put("marked", marked, False, 10, opened.keyset())
    assert opened.members(marked) is None  # the merge copies its objects: nothing to share
    assert opened.members({"z": 1}) is None  # not kept
