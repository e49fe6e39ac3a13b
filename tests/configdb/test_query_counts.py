"""SQL statements per request do not grow with depth, nodes, versions or list sizes."""
import json
import threading
import time

import pytest
import sqlalchemy as sa

from nailgun_platform import read_cache
from tests.configdb.conftest import API, STORAGE, read_cache_of


def _count(query_counter, call):
    """SQL statements run by ``call``, leaving out SQLite's explicit BEGIN."""
    with query_counter.counting():
        call()
    return len([s for s in query_counter.statements if not s.startswith("BEGIN")])


@pytest.fixture
def unleased(cdb):
    """Every read asks the database for the state (as when the last one is older than a lease)."""
    read_cache_of(cdb.app).lease_seconds = 0
    return cdb


def _hierarchy(cdb, depth, nodes, versions):
    levels = ["l{0}".format(i) for i in range(depth - 1)] + ["nodes"]
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"], levels=levels)
    prefix = "".join("{0}/v/".format(name) for name in levels[:-1])
    for version in range(versions):
        cdb.put(env["id"], rid, {"root": version})
    for depth_index in range(len(levels) - 1):
        cdb.put(env["id"], rid, {"level": depth_index}, levels="".join(
            "{0}/v/".format(n) for n in levels[:depth_index + 1]), kind="overrides")
    for node in range(nodes):
        cdb.put(env["id"], rid, {"node": node}, levels=prefix + "nodes/n{0}/".format(node))
    return env["id"], prefix + "nodes/n0/"


@pytest.mark.parametrize("query", ["effective", "effective&show_lookup&key=root", "effective&version=1"])
def test_effective_get_is_constant_in_depth_nodes_and_versions(unleased, query_counter, query):
    cdb = unleased
    small_env, small_path = _hierarchy(cdb, depth=1, nodes=1, versions=1)
    small = _count(query_counter, lambda: cdb.get(small_env, "r", small_path, query=query))
    cdb.app.delete(API + "/environments/{0}".format(small_env))
    cdb.app.delete(API + "/components/1")
    big_env, big_path = _hierarchy(cdb, depth=5, nodes=20, versions=8)
    big = _count(query_counter, lambda: cdb.get(big_env, "r", big_path, query=query))
    assert small == big
    # the read cache's fingerprint, then (computed once per change) what the URL names (environment and data
    # source in one statement, ``objects.address``), the merged documents' heads with whether the environment
    # stores anything at the node while it does at others (X-Level-Unknown), their content (with ?version=: the
    # documents, the version named and the versions of then)
    assert big == 1 + (5 if "version" in query else 3)
    assert _count(query_counter, lambda: cdb.get(big_env, "r", big_path, query=query)) == 1  # replayed
    # a write elsewhere: computed again, the merged documents' content from memory (``objects.opened``)
    # but for ?version=, which reads the versions of then
    rid = cdb.app.get(API + "/resource_definitions").json[-1]["id"]
    cdb.put(big_env, rid, {"node": "another"}, levels=big_path.replace("/n0/", "/n1/"))
    assert _count(query_counter, lambda: cdb.get(big_env, "r", big_path, query=query)) == 1 + (
        5 if "version" in query else 2)


def test_effective_get_on_a_linked_environment_by_fqdn(unleased, env, query_counter):
    cdb = unleased
    cluster = env.create(nodes_kwargs=[{"roles": ["compute"]}] * 3)
    cdb.component("c", ["astute"])
    cdb.environment(["c"], id=cluster["id"])
    level = "nodes/{0}/".format(env.nodes[0]["fqdn"])
    cdb.put(cluster["id"], "1", {"a": 1})
    cdb.put(cluster["id"], "1", {"b": 1}, levels=level)
    count = _count(query_counter, lambda: cdb.get(cluster["id"], "astute", level, query="effective"))
    # fingerprint; environment (linked or not), data source and node in one statement; the level's documents'
    # heads and whether it holds any; their content
    assert count == 1 + 3
    tag = cdb.get(cluster["id"], "astute", level, query="effective").headers["ETag"]
    count = _count(query_counter, lambda: cdb.get(cluster["id"], "astute", level, query="effective",
                                                  headers={"If-None-Match": tag}, status=304))
    assert count == 1  # a revalidation is answered from the fingerprint alone


@pytest.mark.parametrize("query", ["", "effective", "effective&show_lookup"])
def test_a_replayed_get_runs_one_statement_whatever_the_size_and_none_within_a_lease(cdb, query_counter, query):
    """The steady state of Hiera's reads: the answer from memory, the state asked at most once a lease."""
    env_id, path = _hierarchy(cdb, depth=3, nodes=20, versions=5)
    cache = read_cache_of(cdb.app)
    cache.lease_seconds = 0
    cdb.get(env_id, "r", path, query=query)
    assert _count(query_counter, lambda: cdb.get(env_id, "r", path, query=query)) == 1
    cache.lease_seconds = 600  # the state just read is trusted (no write follows: none is held)
    assert _count(query_counter, lambda: cdb.get(env_id, "r", path, query=query)) == 0
    cdb.get(env_id, "r", "", query=query)  # another URL, computed under the same lease
    assert _count(query_counter, lambda: cdb.get(env_id, "r", "", query=query)) == 0


@pytest.mark.parametrize("url, make", [
    ("/components", lambda cdb, i: cdb.component("c{0}".format(i), ["r1", "r2"])),
    ("/environments", lambda cdb, i: cdb.environment([cdb.component("e{0}".format(i), ["r"])["id"]])),
    ("/resource_definitions", lambda cdb, i: cdb.component("d{0}".format(i), ["r1", "r2"])),
])
def test_list_endpoints_have_no_n_plus_one(cdb, query_counter, url, make):
    make(cdb, 0)
    one = _count(query_counter, lambda: cdb.app.get(API + url))
    for i in range(1, 8):
        make(cdb, i)
    many = _count(query_counter, lambda: cdb.app.get(API + url))
    assert len(cdb.app.get(API + url).json) >= 8
    assert one == many


def test_history_is_constant_in_versions(cdb, query_counter, demo):
    cdb.put(1, "1", {"v": 0})
    url = cdb.url(1, "1") + "/history"
    one = _count(query_counter, lambda: cdb.app.get(url))
    for value in range(1, 10):
        cdb.put(1, "1", {"v": value})
    assert _count(query_counter, lambda: cdb.app.get(url)) == one


def _staged_hierarchy(cdb, depth, nodes, versions):
    """``_hierarchy``, then a session that stages a document at every level down to the node's."""
    env_id, path = _hierarchy(cdb, depth, nodes, versions)
    rid = cdb.app.get(API + "/resource_definitions").json[-1]["id"]  # a write by name is a 308
    session = cdb.app.post_json(API + "/environments/{0}/configure".format(env_id), {}).json["id"]
    header = {"X-Configuration-Session": session}
    level = ""
    for name, value in zip(path.split("/")[0::2], path.split("/")[1::2]):
        cdb.put(env_id, rid, {"staged": name}, levels=level, kind="overrides", headers=header)
        level += "{0}/{1}/".format(name, value)
    cdb.put(env_id, rid, {"staged": "node"}, levels=level, kind="overrides", headers=header)
    return env_id, path, header


@pytest.mark.parametrize("query", ["effective", "effective&show_lookup&key=staged"])
def test_effective_get_in_a_session_is_constant_in_depth_nodes_versions_and_staged_documents(
        cdb, query_counter, query):
    """A session's reads skip the read cache: what the merge of staged over stored costs is counted."""
    small_env, small_path, small_header = _staged_hierarchy(cdb, depth=1, nodes=1, versions=1)
    cdb.get(small_env, "r", small_path, query=query, headers=small_header)  # the stored documents opened once
    small = _count(query_counter, lambda: cdb.get(small_env, "r", small_path, query=query, headers=small_header))
    cdb.app.delete(API + "/environments/{0}".format(small_env))
    cdb.app.delete(API + "/components/1")
    big_env, big_path, big_header = _staged_hierarchy(cdb, depth=5, nodes=20, versions=8)
    answer = cdb.get(big_env, "r", big_path, query=query, headers=big_header)
    if "key" in query:  # the node's staged override, traced to where it is staged
        assert answer.json == ["node", "/" + big_path, "overrides"]
    else:
        assert answer.json["staged"] == "node"
    big = _count(query_counter, lambda: cdb.get(big_env, "r", big_path, query=query, headers=big_header))
    assert small == big
    # environment and data source, session, the level's documents and versions (the ETag; their content then
    # from memory, ``objects.opened``) with whether the level holds documents, staged documents
    assert big == 4
    revalidation = _count(query_counter, lambda: cdb.get(
        big_env, "r", big_path, query=query, headers=dict(big_header, **{"If-None-Match": answer.headers["ETag"]}),
        status=304))
    assert revalidation == 3  # no documents read, no merge


def test_a_put_drafts_before_it_locks_and_stores_in_a_constant_number_of_statements(cdb, query_counter, db_url):
    """ConfigDB's statements of a PUT (the notification the host sends at commit left out): the target and the
    stored document read unlocked, the new version drafted from them; then the environment locked, the target
    resolved again and the document's head compared (``document.Draft.current``); then the writes. The same
    JSON again writes nothing. Unlocked, the environment and the data source are read in one statement
    (``objects.address``)."""
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"])["id"]

    def put(data):
        with query_counter.counting():
            cdb.put(env, rid, {"big": list(range(200)), **data})
        return [s for s in query_counter.statements if "configdb_" in s]

    reads = ["configdb_environments", "configdb_documents"] + [
        "configdb_environments", "configdb_resource_definitions", "configdb_documents"]
    for data, stored in (({"a": 1}, "INSERT INTO configdb_documents"), ({"a": 2}, "UPDATE configdb_documents"),
                         ({"a": 2}, None)):
        statements = put(data)
        # one flush writes the environment's revision, the document and its version (in the ORM's order);
        # the change feed is pruned at one revision in max_changes / 100 (changes.PRUNE_SHARE): not at these
        flushed = sorted([stored, "UPDATE configdb_environments", "INSERT INTO configdb_document_versions"]
                         if stored else [])
        assert len(statements) == len(reads) + len(flushed) + bool(stored), statements
        assert all(name in statement for name, statement in zip(reads, statements)), statements
        assert sorted(next(name for name in flushed if name in statement)
                      for statement in statements[len(reads):len(reads) + len(flushed)]) == flushed
        assert all("INSERT INTO configdb_changes" in statement for statement in statements[len(reads) + len(flushed):])
        if db_url.startswith("postgresql"):
            assert [i for i, s in enumerate(statements) if "FOR UPDATE" in s] == [2]  # after the document's read

def test_threads_finding_the_lease_run_out_together_send_one_statement(cdb, query_counter, monkeypatch):
    """Single flight: the threads arriving while a read of the state is on its way wait for it rather than
    each sending their own (under load, 514 statements a second were sent for a 5 ms lease)."""
    env_id, path = _hierarchy(cdb, depth=1, nodes=1, versions=1)
    cache = read_cache_of(cdb.app)
    cache.lease_seconds = 600
    first = cdb.get(env_id, "r", path, query="effective").body
    reader, started = cache.reader, threading.Barrier(THREADS)

    class SlowReader:  # a statement on its way long enough for every thread to find the lease run out
        available = staticmethod(reader.available)

        @staticmethod
        def rows(statement):
            time.sleep(0.2)
            return reader.rows(statement)

    monkeypatch.setattr(cache, "reader", SlowReader)
    cache._leases.clear()
    bodies = []

    def read():
        started.wait()
        bodies.append(cdb.get(env_id, "r", path, query="effective").body)

    def run():
        threads = [threading.Thread(target=read) for _ in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert _count(query_counter, run) == 1
    assert bodies == [first] * THREADS


def test_a_failed_read_of_the_state_is_leased_too_and_the_application_answers(cdb, monkeypatch):
    """A database that cannot be asked is asked once per lease, not by every thread: the application answers."""
    env_id, path = _hierarchy(cdb, depth=1, nodes=1, versions=1)
    cache = read_cache_of(cdb.app)
    cache.lease_seconds = 600
    first = cdb.get(env_id, "r", path, query="effective").body
    asked, started = [], threading.Barrier(THREADS)

    class FailingReader:
        available = staticmethod(cache.reader.available)

        @staticmethod
        def rows(statement):
            asked.append(statement)
            time.sleep(0.2)
            raise read_cache.StatementFailed("the database cannot be asked")

    monkeypatch.setattr(cache, "reader", FailingReader)
    cache._leases.clear()
    misses, bodies = cache.store.misses, []

    def read():
        started.wait()
        bodies.append(cdb.get(env_id, "r", path, query="effective").body)

    threads = [threading.Thread(target=read) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(asked) == 1 and bodies == [first] * THREADS
    assert cache.store.misses == misses  # computed by the application, not kept


THREADS = 16


@pytest.mark.skipif(STORAGE != "sql", reason="the git driver keeps the content in its repository")
def test_a_put_sends_the_content_to_the_database_once(cdb, migrated_db):
    """The new version's row is copied from the document's by the database (``document._COPY_VERSION``): a write
    serializes and sends its content once, not once per row."""
    rid = cdb.component("c", ["r"])["resource_definitions"][0]["id"]
    env = cdb.environment(["c"])["id"]
    sent = []

    def record(_conn, _cursor, _statement, parameters, *_args):
        for each in parameters if isinstance(parameters, list) else [parameters]:
            values = each.values() if isinstance(each, dict) else each or ()
            texts = [json.dumps(getattr(value, "obj", None)) if hasattr(value, "obj") else str(value)
                     for value in values]  # psycopg wraps JSON in ``Jsonb(obj)``
            sent.extend(text for text in texts if "x" * 1000 in text)
    sa.event.listen(migrated_db[0], "before_cursor_execute", record)
    try:
        for number in range(3):  # a new document, then new versions of it
            cdb.put(env, rid, {"big": "x" * 5000, "number": number, "password": "p{0}".format(number)})
    finally:
        sa.event.remove(migrated_db[0], "before_cursor_execute", record)
    assert len(sent) == 3, sent
    history = cdb.app.get(cdb.url(env, rid) + "/history").json
    assert [h["version"] for h in history] == [1, 2, 3]
    for version in (1, 2, 3):
        assert cdb.app.get(cdb.url(env, rid) + "?version={0}".format(version)).json == {
            "big": "x" * 5000, "number": version - 1, "password": "p{0}".format(version - 1)}
