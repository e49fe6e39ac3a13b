"""Reads stay fresh across server processes: a read right after any write, through another worker, sees it.

Issue 14 lets each server process keep answers of GETs in memory, validated on every read. These
tests are the independent check that no write path leaves a stale answer in another process's
memory: two real ``nailgun-api`` processes share one database (SQLite, or PostgreSQL with
``NAILGUN_TEST_DB_URL``), a *writer* and a *reader*. Each test first reads, through the reader, every
URL form the write will affect, twice and once more with ``If-None-Match`` (so a cache would hold
the answer and its ETag); then writes through the writer; then, as soon as the write has answered,
reads again through the reader. The answer must be the new one, computed here from a small model of
the stored documents (``Model``), not copied from a server: a different ETag, no 304 to the old
ETag, a 404 where the thing is gone. There are no sleeps: "right after the write's answer" is the
point.

Both servers authenticate locally (one users file), so the secret test can read as a ``reader``.
The tables are emptied once for the module, not per test (``clean_db`` below): a cache surviving a
TRUNCATE that restarts every id would be a test artefact, not a write path. Each test makes its own
cluster, components and environments instead.
"""
import copy
import itertools
import json
import random
import uuid

import pytest
import requests

from nailgun_host.settings import settings
from tests.auth import LOCAL_USERS, auth_server, local_settings
from tests.conftest import _empty_tables
from tests.processes import state_readers

MASK = "<secret>"
JSON_PATCH = "application/json-patch+json"
SESSION = "X-Configuration-Session"

ENV_VALUES = {"deployment_id": 1, "nova": {"debug": "no", "workers": 4, "flavor": "m1"}}
ENV_OVERRIDES = {"nova": {"debug": "yes"}}
NODE_VALUES = {"uid": "1", "nova": {"workers": 8}}
NODE_OVERRIDES = {"deployment_id": 2}

#: (kind, query) of each document form a client uses; the key forms name the keys the writes change
QUERIES = [("values", ""), ("overrides", ""), ("values", "effective"), ("values", "effective&show_lookup"),
           ("values", "effective&key=nova.workers"), ("values", "effective&show_lookup&key=/nova"),
           ("values", "key=nova.workers"), ("overrides", "key=/deployment_id")]
#: fewer forms for the other spellings of a level (every request counts on PostgreSQL)
SOME_QUERIES = [("values", ""), ("values", "effective"), ("values", "effective&show_lookup")]
NODE2_QUERIES = [("values", "effective"), ("values", "effective&key=nova.workers")]


# --- the two servers ------------------------------------------------------------------------------------

class Api:
    """One identity's HTTP client of one server, paths relative to ``/api/v1``."""

    def __init__(self, server, user):
        self.base = server.url + "/api/v1"
        self.http = requests.Session()
        self.http.auth = (user, LOCAL_USERS[user])

    def request(self, method, path, body=None, status=None, headers=None, content_type=None):
        headers = dict(headers or {})
        data = None
        if body is not None:
            data = json.dumps(body)
            headers["Content-Type"] = content_type or "application/json"
        response = self.http.request(method, self.base + path, data=data, headers=headers, allow_redirects=False)
        if status is not None:
            assert response.status_code == status, (method, path, response.status_code, response.text)
        return response

    def get(self, path, **kwargs):
        return self.request("GET", path, **kwargs)

    def json(self, method, path, body=None, status=200, **kwargs):
        return self.request(method, path, body, status=status, **kwargs).json()


@pytest.fixture(autouse=True)
def clean_db(db_url):
    """Overrides the suite's: no emptying between these tests (see the module's docstring)."""
    settings.reload(overrides={"DATABASE_URL": db_url})
    yield


@pytest.fixture(scope="module")
def servers(request, migrated_db, db_url, tmp_path_factory):
    """Writer and reader ``nailgun-api`` processes on one database, with one local users file; the reader's
    states are read by its state reader process, as in the production recipe (``READ_CACHE.state_reader``; the
    writer's threads read their own)."""
    _empty_tables(*migrated_db)
    writer = auth_server(db_url, local_settings(), directory=str(tmp_path_factory.mktemp("writer")))
    request.addfinalizer(writer.stop)
    reader = auth_server(db_url, local_settings(users_file=writer.users_file),
                         directory=str(tmp_path_factory.mktemp("reader")),
                         sections={"READ_CACHE": {"state_reader": "process"}})
    request.addfinalizer(reader.stop)
    return writer, reader


@pytest.fixture(scope="module")
def release(servers):
    return Api(servers[0], "admin").json("POST", "/releases/", {
        "name": "Mitaka " + uuid.uuid4().hex[:8], "version": "mitaka-9.0", "operating_system": "Ubuntu"},
        status=201)["id"]


_counter = itertools.count(1)
_macs = itertools.count(1)
#: ids of unlinked environments: far above any cluster id the module makes, so none is taken by both
_unlinked_ids = itertools.count(100000)


def unique(prefix):
    return "{0}{1}".format(prefix, next(_counter))


@pytest.fixture
def api(servers, release):
    """``writer``: admin on the writer; ``reader``: admin on the reader; ``reader_role``: a reader there."""
    writer, reader = servers
    return World(Api(writer, "admin"), Api(reader, "admin"), Api(reader, "reader"), release)


# --- the model: what every form must answer -------------------------------------------------------------

def key_tokens(key):
    return key.strip("/").split("/") if key.startswith("/") else key.split(".")


def merge_into(target, lookup, doc, origin):
    """merge.effective's rule: objects merge key by key, anything else replaces (no markers here)."""
    for key, value in doc.items():
        if isinstance(value, dict) and value and isinstance(target.get(key), dict):
            if not isinstance(lookup.get(key), dict):
                lookup[key] = {}
            merge_into(target[key], lookup[key], value, origin)
        else:
            target[key] = copy.deepcopy(value)
            lookup[key] = origin_tree(value, origin)


def origin_tree(value, origin):
    if isinstance(value, dict) and value:
        return {k: origin_tree(v, origin) for k, v in value.items()}
    return origin


def annotate(values, lookup):
    if isinstance(lookup, dict):
        return {k: annotate(values[k], lookup[k]) for k in values}
    return [values] + list(lookup)


def masked(doc, secret_paths, prefix=()):
    if isinstance(doc, dict):
        return {k: masked(v, secret_paths, prefix + (k,)) for k, v in doc.items()}
    return MASK if prefix in secret_paths else doc


def masked_lookup(doc, secret_paths, prefix=()):
    if isinstance(doc, dict):
        return {k: masked_lookup(v, secret_paths, prefix + (k,)) for k, v in doc.items()}
    return [MASK] + doc[1:] if prefix in secret_paths else doc


class Model:
    """The stored documents of one data source in one environment, and what each form answers."""

    def __init__(self, docs=None):
        self.docs = {k: copy.deepcopy(v) for k, v in (docs or {}).items()}  # (level path, kind): document
        self.secret = set()  # leaf paths a reader-role identity sees masked

    def copy(self):
        other = Model(self.docs)
        other.secret = set(self.secret)
        return other

    def effective(self, level):
        merged, lookup = {}, {}
        for path in ([""] + ([level] if level else [])):
            for kind in ("values", "overrides"):
                if (path, kind) in self.docs:
                    display = "/" + path + "/" if path else "/"
                    merge_into(merged, lookup, self.docs[path, kind], (display, kind))
        return merged, lookup

    def expect(self, form, sees_secrets=True):
        """(status, body) of ``form``; a 404's body is not compared."""
        params = dict(p.partition("=")[::2] for p in form.query.split("&") if p)
        if "effective" in params:
            merged, lookup = self.effective(form.level)
            body = annotate(merged, lookup) if "show_lookup" in params else merged
        else:
            body = copy.deepcopy(self.docs.get((form.level, form.kind), {}))
        if not sees_secrets:
            body = masked_lookup(body, self.secret) if "show_lookup" in params else masked(body, self.secret)
        if "key" in params:
            for token in key_tokens(params["key"]):
                if not isinstance(body, dict) or token not in body:
                    return 404, None
                body = body[token]
        return 200, body


class Form:
    """One URL of a document as a client writes it: environment, level (by id or FQDN), resource (by
    id or name), kind and query. ``level`` is the stored level path the model knows it by."""

    def __init__(self, env_id, level, level_url, ref, kind, query):
        self.env_id, self.level, self.level_url, self.ref = env_id, level, level_url, ref
        self.kind, self.query = kind, query

    @property
    def url(self):
        return "/config/environments/{0}/{1}resources/{2}/{3}{4}".format(
            self.env_id, self.level_url, self.ref, self.kind, "?" + self.query if self.query else "")

    def __repr__(self):
        return self.url


def forms(env_id, levels, refs, queries=None):
    """The forms of the documents at ``levels`` ({stored path: [(URL spelling, its queries)]}) by each of
    ``refs``; ``queries``, when given, for every spelling."""
    return [Form(env_id, level, spelling, ref, kind, query)
            for level, spellings in levels.items() for spelling, own in spellings
            for ref in refs for kind, query in (queries or own)]


def body_of(response):
    return response.json() if response.content else None


# --- the world of one test: a cluster, its nodes, a component, a linked environment ----------------------

class World:
    def __init__(self, writer, reader, reader_role, release):
        self.writer, self.reader, self.reader_role, self.release = writer, reader, reader_role, release

    def cluster(self, nodes=2):
        cluster = self.writer.json("POST", "/clusters/", {"name": unique("cluster-"), "release_id": self.release},
                                   status=201)
        made = [self.node(cluster["id"]) for _ in range(nodes)]
        return cluster["id"], made

    def node(self, cluster_id):
        value = next(_macs)
        mac = "52:54:01:{0:02x}:{1:02x}:{2:02x}".format((value >> 16) & 255, (value >> 8) & 255, value & 255)
        node = self.writer.json("POST", "/nodes/", {"mac": mac}, status=201)
        return self.writer.json("PUT", "/nodes/{0}/".format(node["id"]),
                                {"cluster_id": cluster_id, "roles": ["compute"]})

    def component(self, *names, content=None):
        comp = self.writer.json("POST", "/config/components", {
            "name": unique("comp-"), "resource_definitions": [
                dict({"name": n}, **({"content": content} if content is not None else {})) for n in names]},
            status=201)
        return comp["id"], {d["name"]: d["id"] for d in comp["resource_definitions"]}

    def environment(self, components, env_id=None, levels=("nodes",)):
        body = {"components": components, "hierarchy_levels": list(levels)}
        body["id"] = next(_unlinked_ids) if env_id is None else env_id
        return self.writer.json("POST", "/config/environments", body, status=201)

    def put(self, env_id, ref, data, level_url="", kind="values"):
        self.writer.request("PUT", "/config/environments/{0}/{1}resources/{2}/{3}".format(
            env_id, level_url, ref, kind), data, status=204)

    def linked(self, content=None):
        """A cluster of two nodes and its linked environment, using data sources ``astuteN`` (documents at
        both levels) and ``override/nodeN``; the forms of astute at the environment, node 1 by id and
        FQDN, and node 2 (no documents of its own) by FQDN."""
        cluster_id, nodes = self.cluster()
        self.env_id = cluster_id
        self.nodes = nodes
        self.name, self.other = unique("hiera/astute"), unique("override/node")
        self.comp_id, ids = self.component(self.name, self.other, content=content)
        self.res_id = ids[self.name]
        env = self.environment([self.comp_id], env_id=cluster_id)
        assert env["linked"] is True
        self.node_level = "nodes/{0}".format(nodes[0]["id"])
        self.level_spellings = {
            "": [("", QUERIES)],
            self.node_level: [("nodes/{0}/".format(nodes[0]["fqdn"]), QUERIES),
                              ("nodes/{0}/".format(nodes[0]["id"]), SOME_QUERIES)],
            "nodes/{0}".format(nodes[1]["id"]): [("nodes/{0}/".format(nodes[1]["fqdn"]), NODE2_QUERIES)]}
        self.model = self.seed(cluster_id, self.node_level, "nodes/{0}/".format(nodes[0]["fqdn"]))
        return self

    def unlinked(self):
        """The same documents in an unlinked environment, whose ``nodes`` level takes free-form values."""
        self.name, self.other = unique("hiera/astute"), unique("override/node")
        self.comp_id, ids = self.component(self.name, self.other)
        self.res_id = ids[self.name]
        self.env_id = self.environment([self.comp_id])["id"]
        self.node_level = "nodes/n1"
        self.level_spellings = {"": [("", QUERIES)], "nodes/n1": [("nodes/n1/", QUERIES)],
                                "nodes/n2": [("nodes/n2/", NODE2_QUERIES)]}
        self.model = self.seed(self.env_id, self.node_level, "nodes/n1/")
        return self

    def seed(self, env_id, node_level, node_url):
        self.put(env_id, self.res_id, ENV_VALUES)
        self.put(env_id, self.res_id, ENV_OVERRIDES, kind="overrides")
        self.put(env_id, self.res_id, NODE_VALUES, node_url)
        self.put(env_id, self.res_id, NODE_OVERRIDES, node_url, "overrides")
        return Model({("", "values"): ENV_VALUES, ("", "overrides"): ENV_OVERRIDES,
                      (node_level, "values"): NODE_VALUES, (node_level, "overrides"): NODE_OVERRIDES})

    def forms(self, refs=None, queries=None):
        return forms(self.env_id, self.level_spellings, refs or [self.res_id, self.name], queries)

    def doc_url(self, level="", kind="values", ref=None):
        level_url = level + "/" if level else ""
        return "/config/environments/{0}/{1}resources/{2}/{3}".format(
            self.env_id, level_url, self.res_id if ref is None else ref, kind)

    # -- the check --

    def prime(self, all_forms, model=None, client=None, sees_secrets=True):
        """Reads every form twice, then revalidates it (304), through the reader; answers as ``model`` says.

        Returns {url: (status, body, ETag)} of what a cache would now hold."""
        client = client or self.reader
        model = model or self.model
        held = {}
        for form in all_forms:
            first, second = client.get(form.url), client.get(form.url)
            status, body = model.expect(form, sees_secrets)
            for response in (first, second):
                assert response.status_code == status, (form, response.status_code, response.text)
                if status == 200:
                    assert body_of(response) == body, form
            tag = second.headers.get("ETag")
            if status == 200:
                assert tag and first.headers.get("ETag") == tag, form
                assert client.get(form.url, headers={"If-None-Match": tag}).status_code == 304, form
            held[form.url] = (status, body_of(second) if status == 200 else None, tag)
        return held

    def assert_fresh(self, all_forms, held, model, client=None, sees_secrets=True):
        """Right after a write: every form answers as ``model`` says, through the reader. Where the answer
        changed, the old ETag gets the new answer (not 304) and the new ETag differs (where it did not,
        304 or the same answer). Returns how many
        forms changed, which a test asserts so that it cannot pass by writing nothing."""
        client = client or self.reader
        changed = 0
        self.answered = {}
        for form in all_forms:
            status, body = model.expect(form, sees_secrets)
            old_status, old_body, old_tag = held[form.url]
            if (status, body) != (old_status, old_body):
                changed += 1
            if old_tag is not None:
                revalidated = client.get(form.url, headers={"If-None-Match": old_tag})
                if (status, body) == (old_status, old_body):  # an effective ETag names the versions merged
                    assert revalidated.status_code in (304, status), (form, revalidated.status_code)
                    if revalidated.status_code == 200:
                        assert body_of(revalidated) == body, form
                else:
                    assert revalidated.status_code == status, (
                        "stale revalidation", form, revalidated.status_code, old_body, body)
                    if status == 200:
                        assert body_of(revalidated) == body, ("stale", form, body_of(revalidated), body)
            response = client.get(form.url)
            self.answered[form.url] = (status, body, response.headers.get("ETag"))
            assert response.status_code == status, ("stale status", form, response.status_code, response.text)
            if status == 200:
                assert body_of(response) == body, ("stale", form, body_of(response), body)
                if body != old_body:
                    assert response.headers.get("ETag") != old_tag, ("same ETag for a new body", form)
        return changed


@pytest.fixture
def linked(api):
    return api.linked()


# --- documents: PUT, keys, revert, JSON patch, sessions -------------------------------------------------

@pytest.mark.parametrize("kind", ["values", "overrides"])
@pytest.mark.parametrize("where", ["environment", "node"])
def test_put(linked, kind, where):
    """A PUT of a document, at the environment or a node, is seen at once by every form of every level
    under it, through the other process."""
    world = linked
    everything = world.forms()
    held = world.prime(everything)
    level = "" if where == "environment" else world.node_level
    new = {"deployment_id": 7, "nova": {"workers": 16}, "extra": kind}
    world.writer.request("PUT", world.doc_url(level, kind), new, status=204)
    model = world.model.copy()
    model.docs[level, kind] = new
    assert world.assert_fresh(everything, held, model) >= 8


@pytest.mark.parametrize("operation, body, change", [
    pytest.param("set", [["nova", "workers", 32], ["new", "key", "v"]],
                 lambda d: (d.setdefault("nova", {}).update(workers=32), d.update(new={"key": "v"})), id="set"),
    pytest.param("delete", [["nova", "workers"]], lambda d: d["nova"].pop("workers"), id="delete"),
])
@pytest.mark.parametrize("where", ["environment", "node"])
def test_keys_operation(linked, operation, body, change, where):
    """keys/set and keys/delete change one key of a stored document: the reader sees it at once."""
    world = linked
    everything = world.forms()
    held = world.prime(everything)
    level = "" if where == "environment" else world.node_level
    world.writer.request("PATCH", world.doc_url(level) + "/keys/" + operation, body, status=204)
    model = world.model.copy()
    change(model.docs[level, "values"])
    assert world.assert_fresh(everything, held, model) >= 4


def test_revert(linked):
    """Reverting to an earlier version is a write like any other: the reader stops serving the later one."""
    world = linked
    later = {"deployment_id": 3, "nova": {"workers": 12}}
    world.writer.request("PUT", world.doc_url(world.node_level), later, status=204)
    before = world.model.copy()
    before.docs[world.node_level, "values"] = later
    everything = world.forms()
    held = world.prime(everything, before)
    reverted = world.writer.json("POST", world.doc_url(world.node_level) + "/revert", {"version": 1}, status=201)
    assert reverted["version"] == 3
    assert world.assert_fresh(everything, held, world.model) >= 4


@pytest.mark.parametrize("media_type", [JSON_PATCH, "application/env-model-json-patch"])
def test_json_patch(linked, media_type):
    """An RFC 6902 patch (replace, add, remove, move) is one new version the reader sees at once."""
    world = linked
    everything = world.forms()
    held = world.prime(everything)
    patch = [{"op": "test", "path": "/nova/workers", "value": 4},
             {"op": "replace", "path": "/nova/workers", "value": 6},
             {"op": "add", "path": "/added", "value": {"x": 1}}, {"op": "remove", "path": "/deployment_id"},
             {"op": "move", "from": "/nova/flavor", "path": "/flavor"}]
    world.writer.request("PATCH", world.doc_url(), patch, status=204, content_type=media_type)
    model = world.model.copy()
    model.docs["", "values"] = {"nova": {"debug": "no", "workers": 6}, "added": {"x": 1}, "flavor": "m1"}
    assert world.assert_fresh(everything, held, model) >= 8


@pytest.mark.parametrize("environment, session_routes", [
    ("linked", "clusters"), ("linked", "config/environments"), ("unlinked", "config/environments")])
def test_session_deploy(api, environment, session_routes):
    """Writes staged in a configuration session change nothing the reader serves (without the header)
    until the deploy, and all of them show at once right after the deploy has answered."""
    world = getattr(api, environment)()
    sessions = "/{0}/{1}".format(session_routes, world.env_id)
    sid = world.writer.json("POST", sessions + "/configure", {})["id"]
    everything = world.forms()
    held = world.prime(everything)
    staged = {SESSION: sid}
    world.writer.request("PUT", world.doc_url(), {"deployment_id": 9, "nova": {"workers": 2}}, status=204,
                         headers=staged)
    world.writer.request("PATCH", world.doc_url(world.node_level, "overrides") + "/keys/set",
                         [["nova", "debug", "staged"]], status=204, headers=staged)
    model = world.model.copy()
    model.docs["", "values"] = {"deployment_id": 9, "nova": {"workers": 2}}
    model.docs[world.node_level, "overrides"] = dict(NODE_OVERRIDES, nova={"debug": "staged"})
    # staged: the reader without the header still serves the stored documents, with the header the staged
    assert world.assert_fresh(everything, held, world.model) == 0
    effective = world.doc_url(world.node_level) + "?effective"
    assert body_of(world.reader.get(effective, headers=staged)) == model.effective(world.node_level)[0]
    deployed = world.writer.json("POST", sessions + "/sessions/{0}/deploy".format(sid))
    assert deployed["state"] == "deployed"
    assert world.assert_fresh(everything, held, model) >= 8


# --- nodes leaving the cluster ---------------------------------------------------------------------------

def _delete_node(world, node, _):
    world.writer.request("DELETE", "/nodes/{0}".format(node["id"]), status=204)


def _delete_nodes(world, node, _):
    world.writer.request("DELETE", "/nodes?ids={0}".format(node["id"]), status=204)


def _remove_from_cluster(world, node, _):
    world.writer.json("PUT", "/nodes/{0}".format(node["id"]), {"cluster_id": None})


def _remove_in_bulk(world, node, _):
    world.writer.json("PUT", "/nodes", [{"id": node["id"], "cluster_id": None}])


def _unassign(world, node, cluster_id):
    world.writer.json("POST", "/clusters/{0}/unassignment".format(cluster_id), [{"id": node["id"]}])


def _move_to_another_cluster(world, node, _):
    other, _ = world.cluster(nodes=0)
    world.writer.json("PUT", "/nodes/{0}".format(node["id"]), {"cluster_id": other, "roles": ["compute"]})


@pytest.mark.parametrize("departure", [_delete_node, _delete_nodes, _remove_from_cluster, _remove_in_bulk,
                                       _unassign, _move_to_another_cluster])
def test_node_leaves_the_cluster(linked, departure):
    """A node that leaves the linked environment's cluster (deleted, removed, unassigned, moved): its
    level answers 404 by id and by FQDN at once; the other levels keep their answers."""
    world = linked
    everything = world.forms(queries=SOME_QUERIES)
    held = world.prime(everything)
    departure(world, world.nodes[0], world.env_id)
    changed = world.assert_fresh([f for f in everything if f.level != world.node_level], held, world.model)
    assert changed == 0
    for form in everything:
        if form.level == world.node_level:
            response = world.reader.get(form.url, headers={"If-None-Match": held[form.url][2] or '"x"'})
            assert response.status_code == 404, ("stale", form, response.status_code, response.text)
            assert world.reader.get(form.url).status_code == 404, form


def test_node_back_in_the_cluster_has_lost_its_documents(linked):
    """A node unassigned and assigned again reads as a node without documents of its own (they were
    deleted when it left), by id and FQDN, through the reader."""
    world = linked
    everything = world.forms()
    held = world.prime(everything)
    node = world.nodes[0]
    _unassign(world, node, world.env_id)
    world.writer.json("POST", "/clusters/{0}/assignment".format(world.env_id),
                      [{"id": node["id"], "roles": ["compute"]}])
    model = world.model.copy()
    del model.docs[world.node_level, "values"], model.docs[world.node_level, "overrides"]
    assert world.assert_fresh(everything, held, model) >= 8


# --- the environment itself -------------------------------------------------------------------------------

def test_environment_drops_its_nodes_level(linked):
    """PUT of the environment without ``nodes``: node levels answer 404 at once; put back, they answer
    as levels without documents (removing the level deleted them)."""
    world = linked
    everything = world.forms()
    held = world.prime(everything)
    env_url = "/config/environments/{0}".format(world.env_id)
    assert world.writer.json("PUT", env_url, {"components": [world.comp_id], "hierarchy_levels": []})[
        "hierarchy_levels"] == []
    assert world.reader.json("GET", env_url)["hierarchy_levels"] == []
    for form in everything:
        if form.level:
            assert world.reader.get(form.url, headers={"If-None-Match": held[form.url][2]}).status_code == 404, form
    assert world.assert_fresh([f for f in everything if not f.level], held, world.model) == 0
    world.writer.json("PATCH", env_url, {"components": [world.comp_id], "hierarchy_levels": ["nodes"]})
    model = world.model.copy()
    del model.docs[world.node_level, "values"], model.docs[world.node_level, "overrides"]
    assert world.assert_fresh(everything, held, model) >= 8


def test_environment_drops_and_adds_components(linked):
    """PUT of the environment's components: the data sources of a dropped component answer 404 at once,
    those of an added one answer (by id and name) where they answered 404."""
    world = linked
    world.other_comp, added = world.component(unique("added"))
    (added_name, added_id), = added.items()
    everything = world.forms()
    newcomer = world.forms(refs=[added_id, added_name], queries=[("values", ""), ("values", "effective")])
    held = world.prime(everything)
    for form in newcomer:  # not the environment's yet
        assert world.reader.get(form.url).status_code == 404 and world.reader.get(form.url).status_code == 404
    env_url = "/config/environments/{0}".format(world.env_id)
    env = world.writer.json("PUT", env_url, {"components": [world.other_comp], "hierarchy_levels": ["nodes"]})
    assert env["components"] == [world.other_comp]
    assert world.reader.json("GET", env_url)["components"] == [world.other_comp]
    assert [p["resource"] for p in world.reader.json("GET", env_url + "/pins")] == [added_name]
    for form in everything:
        if held[form.url][2]:
            assert world.reader.get(form.url, headers={"If-None-Match": held[form.url][2]}).status_code == 404, form
        assert world.reader.get(form.url).status_code == 404, form
    for form in newcomer:
        assert (world.reader.get(form.url).status_code, body_of(world.reader.get(form.url))) == (200, {}), form


@pytest.mark.parametrize("how", ["environment", "cluster"])
def test_environment_deleted_and_created_again_with_its_id(linked, how):
    """Deleting the environment (or its cluster) makes every form 404 at once; an environment created
    again with the same id, whose documents are written again at the same versions and revisions
    with other content, is served as the new one: the revision and version numbers repeat, so a
    cache checked by them alone would serve the deleted environment's answers."""
    world = linked
    everything = world.forms()
    held = world.prime(everything)
    env_url = "/config/environments/{0}".format(world.env_id)
    world.cluster(nodes=0)  # a higher cluster id: SQLite would give the deleted cluster's id to the next one
    if how == "environment":
        world.writer.request("DELETE", env_url, status=204)
    else:
        world.writer.request("DELETE", "/clusters/{0}".format(world.env_id), status=204)
    for form in everything:
        if held[form.url][2]:
            assert world.reader.get(form.url, headers={"If-None-Match": held[form.url][2]}).status_code == 404, form
        assert world.reader.get(form.url).status_code == 404, form
    assert world.reader.get(env_url).status_code == 404
    if how == "cluster":  # a new cluster with new nodes cannot reuse the id: an unlinked environment can
        env = world.writer.json("POST", "/config/environments", {
            "id": world.env_id, "components": [world.comp_id], "hierarchy_levels": ["nodes"]}, status=201)
        assert env["linked"] is False
        world.level_spellings = {"": [("", QUERIES)],
                                 world.node_level: [("nodes/{0}/".format(world.nodes[0]["id"]), SOME_QUERIES)]}
        everything = [f for f in world.forms() if f.url in held]
    else:
        assert world.environment([world.comp_id], env_id=world.env_id)["linked"] is True
    node_url = world.level_spellings[world.node_level][-1][0]
    seeded = {("", "values"): {"deployment_id": 11, "nova": {"workers": 40, "flavor": "m2"}},
              ("", "overrides"): {"nova": {"debug": "again"}},
              (world.node_level, "values"): {"uid": "1", "nova": {"workers": 80}},
              (world.node_level, "overrides"): {"deployment_id": 22}}
    for (level, kind), data in seeded.items():
        world.put(world.env_id, world.res_id, data, node_url if level else "", kind)
    assert world.reader.json("GET", env_url)["revision"] == 4  # as the deleted one's
    assert world.assert_fresh(everything, held, Model(seeded)) >= 8


# --- definitions: renames, moves, versions, pins, secrets, deletion ---------------------------------------

def test_data_source_renamed(linked):
    """After a rename, the old name answers 404 and the new one the documents, through the reader, at once."""
    world = linked
    new_name = unique("renamed/astute")
    old_forms = world.forms(refs=[world.name])
    new_forms = world.forms(refs=[new_name], queries=[("values", ""), ("values", "effective")])
    by_id = world.forms(refs=[world.res_id])
    held = world.prime(old_forms + by_id)
    for form in new_forms:
        assert world.reader.get(form.url).status_code == 404 and world.reader.get(form.url).status_code == 404
    world.writer.json("PUT", "/config/resource_definitions/{0}".format(world.res_id), {"name": new_name})
    for form in old_forms:
        if held[form.url][2]:
            assert world.reader.get(form.url, headers={"If-None-Match": held[form.url][2]}).status_code == 404, form
        assert world.reader.get(form.url).status_code == 404, form
    for form in new_forms:
        response = world.reader.get(form.url)
        assert (response.status_code, body_of(response)) == world.model.expect(form), form
    assert world.assert_fresh(by_id, held, world.model) == 0
    pins = world.reader.json("GET", "/config/environments/{0}/pins".format(world.env_id))
    assert sorted(p["resource"] for p in pins) == sorted([new_name, world.other])


@pytest.mark.parametrize("how", ["definition", "component"])
def test_data_source_moved_to_another_component(linked, how):
    """A data source moved to a component the environment does not use (PUT of the definition, or of the
    other component listing it) is no longer the environment's: every form answers 404 at once."""
    world = linked
    everything = world.forms()
    held = world.prime(everything)
    other = world.writer.json("POST", "/config/components", {"name": unique("elsewhere")}, status=201)["id"]
    if how == "definition":
        world.writer.json("PUT", "/config/resource_definitions/{0}".format(world.res_id), {"component_id": other})
    else:
        world.writer.json("PUT", "/config/components/{0}".format(other),
                          {"resource_definitions": [{"id": world.res_id, "name": world.name}]})
    for form in everything:
        if held[form.url][2]:
            assert world.reader.get(form.url, headers={"If-None-Match": held[form.url][2]}).status_code == 404, form
        assert world.reader.get(form.url).status_code == 404, form
    pins = world.reader.json("GET", "/config/environments/{0}/pins".format(world.env_id))
    assert [p["resource"] for p in pins] == [world.other]


def test_new_definition_version_and_pin_move(linked):
    """A new version of the definition leaves the environment on its pin; moving the pin is seen at once
    in the reader's pins, environment and by-name PUT redirect, and the documents keep their answers."""
    world = linked
    env_url = "/config/environments/{0}".format(world.env_id)
    pin_url = "{0}/pins/{1}".format(env_url, world.name)
    everything = world.forms()
    held = world.prime(everything)
    for _ in range(2):
        assert world.reader.json("GET", pin_url) == {"resource": world.name, "id": world.res_id, "version": 1,
                                                     "latest_version": 1}
        assert world.reader.json("GET", env_url)["revision"] == 4
    v2 = world.writer.json("POST", "/config/resource_definitions", {
        "name": world.name, "component_id": world.comp_id,
        "content": {"schema": {"type": "object", "properties": {"deployment_id": {"type": "integer"}}}}}, status=201)
    assert v2["version"] == 2
    assert world.reader.json("GET", pin_url) == {"resource": world.name, "id": world.res_id, "version": 1,
                                                 "latest_version": 2}
    moved = world.writer.json("PUT", pin_url, {"version": "latest"})
    assert moved["moved"] is True and moved["to"] == 2
    assert world.reader.json("GET", pin_url) == {"resource": world.name, "id": v2["id"], "version": 2,
                                                 "latest_version": 2}
    env = world.reader.json("GET", env_url)
    assert env["revision"] == moved["revision"] == 5
    assert {p["resource"]: p["version"] for p in env["pins"]}[world.name] == 2
    redirect = world.reader.request("PUT", world.doc_url(ref=world.name), {}, status=308)
    assert redirect.headers["Location"].endswith(world.doc_url(ref=v2["id"]))
    assert world.assert_fresh(everything, held, world.model) == 0
    by_new_id = world.forms(refs=[v2["id"]], queries=[("values", "effective")])
    for form in by_new_id:
        assert (world.reader.get(form.url).status_code, body_of(world.reader.get(form.url))) == \
            world.model.expect(form), form


@pytest.mark.parametrize("how", ["new version", "definition content"])
def test_definition_version_marks_a_leaf_secret(api, how):
    """A definition version whose schema marks ``nova.flavor`` secret masks it at once for a reader-role
    identity, on every form, through the other process; admins keep seeing it."""
    world = api.linked(content={"schema": {"type": "object"}})
    everything = world.forms()
    held = world.prime(everything, client=world.reader_role, sees_secrets=False)
    admin_held = world.prime(everything)
    content = {"schema": {"type": "object", "properties": {"nova": {"type": "object", "properties": {
        "flavor": {"type": "string", "x-secret": True}}}}}}
    if how == "new version":
        world.writer.json("POST", "/config/resource_definitions", {
            "name": world.name, "component_id": world.comp_id, "content": content}, status=201)
    else:
        world.writer.json("PUT", "/config/resource_definitions/{0}".format(world.res_id), {"content": content})
    model = world.model.copy()
    model.secret = {("nova", "flavor")}
    assert world.assert_fresh(everything, held, model, client=world.reader_role, sees_secrets=False) >= 4
    masked_answer = world.reader_role.get(world.doc_url() + "?effective")
    assert masked_answer.headers.get("X-Secrets-Masked") == "true"
    assert masked_answer.json()["nova"]["flavor"] == MASK
    assert world.assert_fresh(everything, admin_held, model) == 0


@pytest.mark.parametrize("again", [False, True])
def test_data_source_deleted(linked, again):
    """Deleting a data source's last version deletes its documents: every form answers 404 at once.
    Created again under the same name, it reads as empty by name, never as the deleted one."""
    world = linked
    everything = world.forms()
    held = world.prime(everything)
    world.writer.request("DELETE", "/config/resource_definitions/{0}".format(world.res_id), status=204)
    if not again:
        for form in everything:
            if held[form.url][2]:
                assert world.reader.get(form.url, headers={"If-None-Match": held[form.url][2]}).status_code == 404
            assert world.reader.get(form.url).status_code == 404, form
        return
    world.writer.json("POST", "/config/resource_definitions", {"name": world.name, "component_id": world.comp_id},
                      status=201)
    assert world.assert_fresh(world.forms(refs=[world.name]), held, Model()) >= 8


# --- random writes, read back at once ---------------------------------------------------------------------

def _random_document(rng):
    doc = {k: rng.randint(0, 9) for k in rng.sample(["a", "b", "c"], rng.randint(1, 3))}
    if rng.random() < 0.7:
        doc["nova"] = {k: rng.choice(["x", "y", rng.randint(0, 99)]) for k in rng.sample(["w", "d", "f"], 2)}
    return doc


def test_random_writes_are_read_back_at_once(api):
    """Rounds of random writes (PUT, keys set/delete, JSON patch, revert) at the environment and a node,
    each followed at once by reads of every form through the reader: each answer is the model's, and
    the writer's own answer for the URL agrees. Fixed seed: a failure replays."""
    rng = random.Random(14)
    world = api.linked()
    versions = {key: [doc] for key, doc in world.model.docs.items()}
    queries = [("values", ""), ("overrides", ""), ("values", "effective"), ("values", "effective&show_lookup")]
    everything = world.forms(queries=queries)
    model = world.model
    held = world.prime(everything, model)
    changed = 0
    for round_number in range(20):
        level, kind = rng.choice(sorted(model.docs))
        url = world.doc_url(level, kind)
        current = model.docs[level, kind]
        operation = rng.choice(["put", "set", "delete", "patch", "revert"])
        if operation == "delete" and not current:
            operation = "set"
        if operation == "revert" and len(versions[level, kind]) < 2:
            operation = "put"
        if operation == "put":
            new = _random_document(rng)
            world.writer.request("PUT", url, new, status=204)
        elif operation == "set":
            key, value = rng.choice(["a", "b", "nova"]), rng.randint(10, 99)
            new = copy.deepcopy(current)
            if key == "nova" and isinstance(current.get("nova"), dict):
                path = ["nova", "w"]
                new["nova"]["w"] = value
            else:
                path = [key]
                new[key] = value
            world.writer.request("PATCH", url + "/keys/set", [path + [value]], status=204)
        elif operation == "delete":
            key = rng.choice(sorted(current))
            new = {k: v for k, v in current.items() if k != key}
            world.writer.request("PATCH", url + "/keys/delete", [[key]], status=204)
        elif operation == "patch":
            new = copy.deepcopy(current)
            new["p"] = rng.randint(0, 99)
            patch = [{"op": "add", "path": "/p", "value": new["p"]}]
            if current:
                gone = rng.choice(sorted(current))
                patch.append({"op": "remove", "path": "/" + gone})
                del new[gone]
            world.writer.request("PATCH", url, patch, status=204, content_type=JSON_PATCH)
        else:
            version = rng.randint(1, len(versions[level, kind]))
            new = versions[level, kind][version - 1]
            world.writer.request("POST", url + "/revert", {"version": version},
                                 status=200 if new == current else 201)
        if new != current:
            versions[level, kind].append(copy.deepcopy(new))
        after = model.copy()
        after.docs[level, kind] = copy.deepcopy(new)
        changed += world.assert_fresh(everything, held, after)
        for form in rng.sample(everything, 4):  # the writer agrees with the model on what the reader said
            response = world.writer.get(form.url)
            assert (response.status_code, body_of(response)) == after.expect(form), (round_number, form)
        model = after
        held = world.answered
    assert changed >= 60


def test_the_reader_read_its_states_in_a_process_of_its_own(servers):
    """(Last: the reader process starts with the first read that wants a state; so every test above read
    through a state reader's board.)"""
    assert len(state_readers(servers[1].process.pid)) == 1
    assert state_readers(servers[0].process.pid) == []
