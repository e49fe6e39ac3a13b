"""The cache of document answers (``nailgun_platform.read_cache``, ``objects.fingerprint``) never replays a
stale one: after any sequence of writes, of every kind, every read through an application with the
cache answers exactly what an application without it computes (status, body, ETag, masking), for
clear and masked readers, by id and by name, by node id and FQDN, effective or not.

The two applications share the database, as two workers do; in-process, so hypothesis can shrink.
"""
import base64
import copy
import itertools
import time

import pytest
import sqlalchemy as sa
import webtest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_host.app import build_wsgi
from nailgun_host.auth import local
from nailgun_host.settings import settings
from nailgun_platform import read_cache
from tests.auth import write_users_file
from tests.configdb.conftest import API, read_cache_of
from tests.factories import EnvironmentManager

USERS = {"admin": ("admin-pw", ["admin"]), "reader": ("reader-pw", ["reader"])}
SCHEMA = {"type": "object", "properties": {"pin": {"x-secret": True}}}
QUERIES = ("", "effective", "effective&show_lookup&key=a")
_names = itertools.count()


def auth(user):
    return {"Authorization": "Basic " + base64.b64encode("{0}:{1}".format(user, USERS[user][0]).encode()).decode()}


@pytest.fixture
def apps(migrated_db, tmp_path):
    """(cached, reference): one application with the read cache, one without, on one database."""
    saved = copy.deepcopy(dict(settings))
    users_file = write_users_file(str(tmp_path / "users.yaml"), USERS)
    settings.reload(overrides={"AUTH": {"method": "local", "users_file": users_file}, "READ_CACHE": {"max_bytes": 0}})
    reference = build_wsgi()
    settings.reload(overrides={"AUTH": {"method": "local", "users_file": users_file}})
    cached = build_wsgi()
    yield webtest.TestApp(cached), webtest.TestApp(reference)
    settings.clear()
    settings.update(saved)


class World:
    """A linked environment (a cluster of 3 nodes) with two data sources, written and read as users do."""

    def __init__(self, cached, reference):
        self.cached, self.reference = cached, reference
        admin = auth("admin")
        cluster_maker = EnvironmentManager(webtest.TestApp(reference.app, extra_environ={
            "HTTP_AUTHORIZATION": admin["Authorization"]}))
        unique = next(_names)
        cluster = cluster_maker.create(release_kwargs={"version": "mitaka-9.0.{0}".format(unique)},
                                       cluster_kwargs={"name": "cluster-{0}".format(unique)},
                                       nodes_kwargs=[{"roles": ["compute"]}] * 3)
        self.nodes = list(cluster_maker.nodes)
        self.unassigned = []
        self.watched = self.nodes[:2]
        self.env = cluster["id"]
        self.component = "c{0}".format(next(_names))
        self.names = ["astute", "globals"]
        made = reference.post_json(API + "/components", {"name": self.component, "resource_definitions": [
            {"name": name, "content": {"schema": SCHEMA}} for name in self.names]}, headers=admin).json
        self.ids = [d["id"] for d in made["resource_definitions"]]
        reference.post_json(API + "/environments", {"id": self.env, "components": [self.component],
                                                    "hierarchy_levels": ["nodes"]}, headers=admin)
        # another environment, which none of the writes but the data sources' own (``EVERYWHERE``) touch
        self.other = 100000 + unique  # an id no cluster takes
        reference.post_json(API + "/environments", {"id": self.other, "components": [self.component],
                                                    "hierarchy_levels": ["nodes"]}, headers=admin)
        for level in ("", "nodes/n1/"):
            reference.put_json(self.other_url(level), {"a": "other", "pin": "other-secret"}, headers=admin)

    def url(self, resource, level, kind="values"):
        return "{0}/environments/{1}/{2}resources/{3}/{4}".format(API, self.env, level, resource, kind)

    def levels(self):
        return [""] + ["nodes/{0}/".format(n["id"]) for n in self.nodes] + [
            "nodes/{0}/".format(n["fqdn"]) for n in self.nodes]

    def reads(self):
        """The URLs checked, in the forms clients use: two nodes' (by id and FQDN) even once removed."""
        first, second = self.watched
        for resource, level in ((self.ids[0], ""), (self.names[0], "nodes/{0}/".format(first["fqdn"])),
                                (self.ids[0], "nodes/{0}/".format(first["id"])),
                                (self.names[1], "nodes/{0}/".format(second["fqdn"]))):
            for query in QUERIES:
                yield self.url(resource, level) + ("?" + query if query else "")
        yield self.url(self.names[0], "nodes/{0}/".format(first["fqdn"]), "overrides") + "?effective"
        yield self.url(self.ids[0], "") + "?effective&version=1"

    def write(self, step, number):
        """One write of kind ``step``; errors (a version or node that is gone) are answers too."""
        admin = auth("admin")
        app = self.reference if number % 2 else self.cached  # either worker writes
        resource = self.ids[number % 2]
        levels = self.levels()
        level = levels[number % len(levels)]
        kind = ("values", "overrides")[number % 3 == 0]
        url = self.url(resource, level, kind)
        if step == "put":
            app.put_json(url, {"a": number, "pin": "p{0}".format(number), "deep": {"n": number}}, headers=admin,
                         status="*")
        elif step == "keys":
            app.patch_json(url + "/keys/" + ("set", "delete")[number % 2], [["a"]] if number % 2 else
                           [["a", number]], headers=admin, status="*")
        elif step == "revert":
            app.post_json(url + "/revert", {"version": 1}, headers=admin, status="*")
        elif step == "patch":
            app.patch(url, '[{"op": "add", "path": "/b", "value": %d}]' % number, headers=dict(
                admin, **{"Content-Type": "application/json-patch+json"}), status="*")
        elif step == "session":
            session = app.post_json(API + "/environments/{0}/configure".format(self.env), {}, headers=admin).json
            app.put_json(url, {"a": "staged{0}".format(number)}, headers=dict(
                admin, **{"X-Configuration-Session": session["id"]}), status="*")
            app.post_json(API + "/environments/{0}/sessions/{1}/deploy".format(self.env, session["id"]), {},
                          headers=admin, status="*")
        elif step == "new_version":
            schema = {"type": "object", "properties": {"a": {"x-secret": bool(number % 2)}}}
            app.put_json(API + "/resource_definitions/{0}".format(resource), {"content": {"schema": schema}},
                         headers=admin, status="*")
        elif step == "pin":
            app.put_json(API + "/environments/{0}/pins/{1}".format(self.env, resource),
                         {"version": "latest" if number % 2 else 1, "force": True}, headers=admin, status="*")
        elif step == "rename":
            new = "renamed{0}".format(next(_names))
            if app.put_json(API + "/resource_definitions/{0}".format(resource), {"name": new}, headers=admin,
                            status="*").status_int == 200:
                self.names[number % 2] = new
        elif step == "remove_node" and self.nodes:
            node = self.nodes.pop(number % len(self.nodes))
            if number % 2:
                app.delete("/api/v1/nodes/{0}".format(node["id"]), headers=admin)
            else:
                app.put_json("/api/v1/nodes/{0}".format(node["id"]), {"cluster_id": None}, headers=admin)
                self.unassigned.append(node)
        elif step == "assign_node" and self.unassigned:
            node = self.unassigned.pop(number % len(self.unassigned))
            app.put_json("/api/v1/nodes/{0}".format(node["id"]), {"cluster_id": self.env}, headers=admin)
            self.nodes.append(node)
        elif step == "hierarchy":
            levels = ["nodes"] if number % 2 else ["rack"]
            app.put_json(API + "/environments/{0}".format(self.env), {"hierarchy_levels": levels}, headers=admin)

    def other_url(self, level):
        return "{0}/environments/{1}/{2}resources/{3}/values".format(API, self.other, level, self.ids[0])

    def other_reads(self):
        for level, query in itertools.product(("", "nodes/n1/"), QUERIES):
            yield self.other_url(level) + ("?" + query if query else "")

    def check_other(self):
        """The other environment's reads equal the reference's; how many the cache computed (misses)."""
        store = read_cache_of(self.cached).store
        misses = store.misses
        for url, user in itertools.product(self.other_reads(), USERS):
            expected = self.reference.get(url, headers=auth(user), status="*")
            got = self.cached.get(url, headers=auth(user), status="*")
            assert (got.status_int, got.body, got.headers.get("ETag")) == (
                expected.status_int, expected.body, expected.headers.get("ETag")), (url, user)
        return store.misses - misses

    def check(self):
        """Every read through the cache (replayed when an earlier check left its answer) equals the reference's."""
        for url, user in itertools.product(self.reads(), USERS):
            expected = self.reference.get(url, headers=auth(user), status="*")
            got = self.cached.get(url, headers=auth(user), status="*")
            headers = ("ETag", "X-Secrets-Masked", "X-Level-Unknown")
            assert (got.status_int, got.body, [got.headers.get(h) for h in headers]) == (
                expected.status_int, expected.body, [expected.headers.get(h) for h in headers]), (url, user)
            if expected.status_int == 200:
                revalidated = self.cached.get(url, headers=dict(auth(user), **{
                    "If-None-Match": expected.headers["ETag"]}), status="*")
                assert revalidated.status_int == 304 and revalidated.headers["ETag"] == expected.headers["ETag"]


#: the writes that change what every environment's answers depend on (data sources)
EVERYWHERE = ("new_version", "rename")
STEPS = st.lists(st.tuples(st.sampled_from(["put", "keys", "revert", "patch", "session", "new_version", "pin",
                                            "rename", "remove_node", "assign_node", "hierarchy"]),
                           st.integers(min_value=0, max_value=11)), min_size=1, max_size=6)


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS)
def test_replayed_answers_equal_computed_ones_after_any_writes(apps, steps):
    """... and a write to one environment leaves another's answers replayed, unless it changes a data
    source (what every environment's answers depend on)."""
    world = World(*apps)
    world.write("put", 0)
    world.write("put", 1)
    world.check()
    world.check_other()
    for step, number in steps:
        world.write(step, number)
        misses = world.check_other()
        if step not in EVERYWHERE:
            assert misses == 0, step
        world.check()


def test_a_hit_answers_from_memory_and_a_write_makes_the_next_read_compute(apps):
    cached, _ = apps
    world = World(*apps)
    world.write("put", 0)
    store = read_cache_of(cached).store
    url = world.url("astute", "nodes/{0}/".format(world.nodes[0]["fqdn"])) + "?effective"
    first = cached.get(url, headers=auth("admin")).body
    hits, misses = store.hits, store.misses
    assert cached.get(url, headers=auth("admin")).body == first
    assert (store.hits, store.misses) == (hits + 1, misses)
    world.write("put", 4)
    assert cached.get(url, headers=auth("admin")).body != first
    assert (store.hits, store.misses) == (hits + 1, misses + 1)


def test_a_replayed_read_asks_the_policy_one_remembered_decision(apps, monkeypatch):
    """Whether the route's read rule lets the identity in and whether it sees secrets: one decision per rule and
    identity (``policy.read_access``), not two, and the masked view stays the reader's own."""
    from nailgun_host import policy

    cached, _ = apps
    world = World(*apps)
    world.write("put", 0)
    url = world.url("astute", "") + "?effective"
    assert cached.get(url, headers=auth("reader")).json["pin"] == "<secret>"
    assert cached.get(url, headers=auth("admin")).json["pin"] == "p0"
    asked = []
    for name in ("allowed", "read_access"):
        original = getattr(policy._Rules, name)
        monkeypatch.setattr(policy._Rules, name, lambda self, *args, _name=name, _original=original: asked.append(
            _name) or _original(self, *args))
    store = read_cache_of(cached).store
    hits = store.hits
    for user, pin in (("reader", "<secret>"), ("admin", "p0")) * 2:
        assert cached.get(url, headers=auth(user)).json["pin"] == pin
    assert store.hits == hits + 4
    assert asked == ["read_access"] * 4


def test_a_write_is_answered_a_lease_after_its_commit_so_no_worker_replays_what_it_changed(apps):
    """Two workers on one database: a read trusts the state it read for a lease (no statement), and
    a write's answer comes a lease after its commit, so the next read anywhere asks again."""
    world = World(*apps)
    reader, writer = webtest.TestApp(build_wsgi()), webtest.TestApp(build_wsgi())
    for worker in (reader, writer):
        read_cache_of(worker).lease_seconds = 0.3
    url, admin = world.url("astute", "") + "?effective", auth("admin")
    writer.put_json(world.url(world.ids[0], ""), {"a": 0}, headers=admin, status=204)
    store = read_cache_of(reader).store
    assert reader.get(url, headers=admin).json["a"] == 0
    hits = store.hits
    assert reader.get(url, headers=admin).json["a"] == 0 and store.hits == hits + 1
    started = time.monotonic()
    writer.put_json(world.url(world.ids[0], ""), {"a": 1}, headers=admin, status=204)
    assert time.monotonic() - started >= 0.3
    assert reader.get(url, headers=admin).json["a"] == 1

    # what the wait is for: a write answered at once leaves a worker replaying the old answer
    read_cache_of(reader).lease_seconds = 600
    read_cache_of(writer).lease_seconds = 0
    assert reader.get(url, headers=admin).json["a"] == 1
    writer.put_json(world.url(world.ids[0], ""), {"a": 2}, headers=admin, status=204)
    assert reader.get(url, headers=admin).json["a"] == 1
    read_cache_of(reader).lease_seconds = 0
    assert reader.get(url, headers=admin).json["a"] == 2


def test_identities_the_policy_refuses_are_refused_after_an_admin_warmed_the_answer(apps, tmp_path):
    cached, _ = apps
    world = World(*apps)
    world.write("put", 0)
    url = world.url("astute", "") + "?effective"
    assert cached.get(url, headers=auth("admin")).json["pin"] == "p0"
    assert cached.get(url, headers=auth("reader")).json["pin"] == "<secret>"  # the masked view is its own
    assert cached.get(url, status=401).json["message"].startswith("Authentication required")
    users_file = settings["AUTH"]["users_file"]
    write_users_file(users_file, dict(USERS, nobody=("nobody-pw", [])))
    time.sleep(local.LOOK_SECONDS)  # an edit by hand counts within that time
    nobody = {"Authorization": "Basic " + base64.b64encode(b"nobody:nobody-pw").decode()}
    assert cached.get(url, headers=nobody, status=403).json["errors"] == ["nailgun:read"]


def test_a_request_in_a_session_and_a_head_are_answered_by_the_application(apps):
    cached, _ = apps
    world = World(*apps)
    world.write("put", 0)
    url = world.url(world.ids[0], "")
    cached.put_json(url, {"a": 0}, headers=auth("admin"), status=204)
    cached.get(url, headers=auth("admin"))
    session = cached.post_json(API + "/environments/{0}/configure".format(world.env), {},
                               headers=auth("admin")).json["id"]
    in_session = dict(auth("admin"), **{"X-Configuration-Session": session})
    cached.put_json(url, {"a": "staged"}, headers=in_session, status=204)
    assert cached.get(url, headers=in_session).json == {"a": "staged"}
    assert cached.get(url, headers=auth("admin")).json["a"] == 0
    head = cached.head(url, headers=auth("admin"))
    assert head.body == b"" and head.headers["ETag"] == cached.get(url, headers=auth("admin")).headers["ETag"]


def _answer(number, size):
    return read_cache.Answer(("/p{0}".format(number), "", True), (number,), [("ETag", '"{0}"'.format(number))],
                             b"x" * size)


def test_the_store_keeps_the_most_recently_used_answers_within_its_bytes():
    store = read_cache.AnswerStore(max_bytes=40000)
    for number in range(20):
        store.put(("/p{0}".format(number), "", True), _answer(number, 1000))
        store.get(("/p0", "", True))  # used again and again: never the one pushed out
        assert store.size <= store.max_bytes
    kept = [number for number in range(20) if store.get(("/p{0}".format(number), "", True)) is not None]
    assert 0 in kept and kept[-1] == 19 and len(kept) == len(store) < 20
    assert store.size == sum(store.get(("/p{0}".format(n), "", True)).size for n in kept)
    store.put(("/big", "", True), _answer(99, 9000))  # more than a quarter of the budget: not kept
    assert store.get(("/big", "", True)) is None


def test_a_path_longer_than_any_real_one_is_refused_before_routing(apps):
    """The document routes' patterns take time quadratic in a path's length: a 40 KB one cost 5 s of CPU."""
    cached, _ = apps
    path = API + "/environments/1/" + "resources/" * 500 + "x"
    answer = cached.get(path, headers=auth("reader"), status=414)
    assert answer.json["message"] == "The URL's path is longer than 4096 characters"


def _generations(session):
    rows = dict(session.execute(sa.text("SELECT environment_id, generation FROM configdb_generations")).all())
    session.commit()
    return rows


def _environment(session, environment_id):
    session.execute(sa.text("INSERT INTO configdb_environments (id, hierarchy_levels, revision, created_at, linked) "
                            "VALUES (:id, '[\"nodes\"]', 0, CURRENT_TIMESTAMP, true)"), {"id": environment_id})
    session.commit()


def test_the_database_counts_each_change_in_the_rows_of_the_answers_it_changes_and_no_other(env, session):
    """Row 0 counts what every environment's answers depend on, an environment's row its own; a node
    counts the environments of its clusters and of the nodes sharing its FQDNs (the lowest id wins a
    ``nodes`` FQDN), and its status counts nowhere."""
    cluster = env.create(nodes_kwargs=[{"roles": ["compute"]}] * 2)
    other = env.create(nodes_kwargs=[{"roles": ["compute"]}], release_kwargs={"version": "mitaka-9.0.other"},
                       cluster_kwargs={"name": "other"})
    third = env.create(cluster_kwargs={"name": "third"}, release_kwargs={"version": "mitaka-9.0.third"})
    mine, theirs, idle = cluster["id"], other["id"], third["id"]
    for environment_id in (mine, theirs, idle):
        _environment(session, environment_id)
    node, second, their_node = (n["id"] for n in env.nodes[:2] + env.nodes[2:3])
    counted = [
        ("UPDATE configdb_environments SET revision = 1 WHERE id = {0}".format(mine), {mine}),
        ("INSERT INTO configdb_components (name) VALUES ('counted')", {0}),
        ("UPDATE configdb_components SET name = 'renamed' WHERE name = 'counted'", {0}),
        ("INSERT INTO configdb_environment_components (environment_id, component_id, position) SELECT {0}, id, 0 "
         "FROM configdb_components WHERE name = 'renamed'".format(theirs), {theirs}),
        ("DELETE FROM configdb_components WHERE name = 'renamed'", {0, theirs}),  # cascades to theirs
        ("UPDATE nodes SET fqdn = 'moved.example' WHERE id = {0}".format(node), {mine}),
        # their node takes the FQDN: if its id is lower, mine's ``nodes/moved.example`` is now a 404
        ("UPDATE nodes SET fqdn = 'moved.example' WHERE id = {0}".format(their_node), {mine, theirs}),
        ("UPDATE nodes SET cluster_id = {0} WHERE id = {1}".format(theirs, node), {mine, theirs}),
        ("UPDATE nodes SET cluster_id = NULL WHERE id = {0}".format(node), {theirs}),
        ("DELETE FROM clusters WHERE id = {0}".format(mine), {mine}),  # the second node's cluster_id: SET NULL
        ("DELETE FROM nodes WHERE id = {0}".format(second), set()),  # in no cluster, its FQDN shared by none
        ("DELETE FROM nodes WHERE id = {0}".format(node), {theirs}),  # the FQDN their node shares
        ("DELETE FROM configdb_environments WHERE id = {0}".format(mine), {mine}),
    ]
    for statement, rows in counted:
        before = _generations(session)
        session.execute(sa.text(statement))
        session.commit()
        after = _generations(session)
        assert {key for key in after if after[key] != before.get(key)} == rows, statement
        assert all(after[key] > before[key] for key in rows if key in before), statement
    assert mine in _generations(session)  # rows are never deleted: a re-created environment counts on
    before = _generations(session)
    session.execute(sa.text("UPDATE nodes SET status = 'ready', online = false"))
    session.commit()
    assert _generations(session) == before


def test_a_lease_is_a_whole_number_of_milliseconds_no_longer_than_a_second():
    saved = copy.deepcopy(dict(settings))
    try:
        for bad, message in ((1001, "at most 1000"), (-1, "at least 0"), (0.5, "whole number"), ("5", "whole number")):
            with pytest.raises(ValueError, match=message):
                settings.reload(overrides={"READ_CACHE": {"lease_ms": bad}})
        assert settings.reload(overrides={"READ_CACHE": {"lease_ms": 1000}})["READ_CACHE"]["lease_ms"] == 1000
    finally:
        settings.clear()
        settings.update(saved)


def test_an_emptied_generation_never_comes_back_to_a_value_an_answer_was_kept_under(apps, session):
    """As a database emptied or restored under a running server: the next change's generation is new."""
    cached, reference = apps
    world = World(*apps)
    read_cache_of(cached).lease_seconds = 0
    url, admin = world.url("astute", "") + "?effective", auth("admin")
    seen = []
    for value in range(3):
        reference.put_json(world.url(world.ids[0], ""), {"a": value}, headers=admin, status=204)
        assert cached.get(url, headers=admin).json["a"] == value
        seen.append(_generations(session)[world.env])
        session.execute(sa.text("DELETE FROM configdb_generations"))
        session.commit()
    assert seen == sorted(set(seen))
