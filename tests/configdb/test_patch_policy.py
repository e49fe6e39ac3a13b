"""A definition's x-patch-policy holds whatever route a write takes (issue 24): the patch forms that reach a
protected key through its parent or the root, a PUT, keys/set, keys/delete, a revert and a session's deploy
are each refused (403 naming the policy) and change nothing; an unchanged protected key is no change;
admins (``nailgun:bypass_patch_policy``) are not bound. So are the writes that take a protected key out
through the ``$unset`` marker, an override or a narrower level (the effective values at the written
level are judged too), and a member's deleting the definition that carries the policy.
"""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nailgun_host import errors
from nailgun_platform.public import type_strict_equal
from nailgun_platform.secrets.masking import MASK
from nailgun_ext_configdb.objects import merge, resource_definition, write_policy
from tests.configdb.conftest import API
from tests.configdb.test_secrets import app, auth  # noqa: F401 (the fixture of local users: member, admin, ...)

PATCH_TYPE = "application/json-patch+json"
HEADER = "X-Configuration-Session"
#: ``admin_token`` may be replaced, never removed nor added; ``/locked`` not touched at all
POLICY = {"/keystone/admin_token": ["replace"], "/locked": []}
START = {"keystone": {"admin_token": "t0", "workers": 2}, "other": {"workers": 3}, "locked": {"a": 1},
         "db": {"password": "s3cret"}}




class Document:
    """Values of resource ``keystone`` (x-patch-policy POLICY) in environment 1, stored by admin as START."""

    def __init__(self, app):
        self.app = app
        component = app.post_json(API + "/components", {"name": "c", "resource_definitions": [
            {"name": "keystone", "content": {"x-patch-policy": POLICY}}]}, headers=auth("admin"), status=201).json
        self.rid = component["resource_definitions"][0]["id"]
        app.post_json(API + "/environments", {"components": ["c"], "hierarchy_levels": []}, headers=auth("admin"),
                      status=201)
        self.url = "{0}/environments/1/resources/{1}/values".format(API, self.rid)
        self.put(START, "admin")

    def get(self):
        return self.app.get(self.url, headers=auth("admin")).json

    def versions(self):
        return len(self.app.get(self.url + "/history", headers=auth("admin")).json)

    def patch(self, ops, user="member", status=204, headers=None):
        return self.app.patch(self.url, json.dumps(ops), status=status,
                              headers=dict(auth(user), **{"Content-Type": PATCH_TYPE}, **(headers or {})))

    def put(self, data, user="member", status=204, headers=None):
        return self.app.put_json(self.url, data, headers=dict(auth(user), **(headers or {})), status=status)

    def keys(self, operation, paths, user="member", status=204, headers=None):
        return self.app.patch_json(self.url + "/keys/" + operation, paths, headers=dict(auth(user), **(headers or {})),
                                   status=status)

    def revert(self, version, user="member", status=201, headers=None):
        return self.app.post_json(self.url + "/revert", {"version": version},
                                  headers=dict(auth(user), **(headers or {})), status=status)

    def session(self, user="member"):
        return self.app.post_json(API + "/environments/1/configure", {}, headers=auth(user)).json["id"]

    def deploy(self, sid, user="member", status=200):
        return self.app.post(API + "/environments/1/sessions/{0}/deploy".format(sid), headers=auth(user),
                             status=status)


@pytest.fixture
def document(app):
    return Document(app)


def assert_refused(answer, document, versions=1, op="remove", path="/keystone/admin_token"):
    assert answer.status_int == 403
    assert "x-patch-policy of resource definition {0}".format(document.rid) in answer.json["message"]
    assert {"op": op, "path": path} in [{"op": e["op"], "path": e["path"]} for e in answer.json["errors"]]
    assert document.get() == START and document.versions() == versions


WITHOUT_TOKEN = {"workers": 2}
#: the issue's seven forms: each removes /keystone/admin_token through another path than its own
SEVEN_FORMS = {
    "remove the parent": [{"op": "remove", "path": "/keystone"}],
    "replace the parent": [{"op": "replace", "path": "/keystone", "value": WITHOUT_TOKEN}],
    "add over the parent": [{"op": "add", "path": "/keystone", "value": WITHOUT_TOKEN}],
    "replace the root": [{"op": "replace", "path": "", "value": dict(START, keystone=WITHOUT_TOKEN)}],
    "add over the root": [{"op": "add", "path": "", "value": dict(START, keystone=WITHOUT_TOKEN)}],
    "move onto the parent": [{"op": "move", "from": "/other", "path": "/keystone"}],
    "copy onto the parent": [{"op": "copy", "from": "/other", "path": "/keystone"}],
}


@pytest.mark.parametrize("ops", SEVEN_FORMS.values(), ids=list(SEVEN_FORMS))
def test_the_seven_patch_forms_are_refused_and_change_nothing(document, ops):
    assert_refused(document.patch(ops, status="*"), document)


@pytest.mark.parametrize("ops", SEVEN_FORMS.values(), ids=list(SEVEN_FORMS))
def test_an_admin_is_not_bound(document, ops):
    document.patch(ops, user="admin")
    assert "admin_token" not in document.get().get("keystone", {})


def test_a_put_keys_and_a_revert_are_refused_alike(document):
    assert_refused(document.put(dict(START, keystone=WITHOUT_TOKEN), status="*"), document)
    assert_refused(document.keys("delete", [["keystone", "admin_token"]], status="*"), document)
    assert_refused(document.keys("set", [["keystone", WITHOUT_TOKEN]], status="*"), document)
    assert_refused(document.keys("set", [["locked", "b", 1]], status="*"), document, op="replace", path="/locked")
    # a version without the token, stored by admin, cannot be reverted to by a member
    document.put(dict(START, keystone=WITHOUT_TOKEN), user="admin")
    document.put(START, user="admin")
    versions = document.versions()
    answer = document.revert(2, status="*")
    assert answer.status_int == 403 and document.get() == START and document.versions() == versions
    document.revert(2, user="admin")


def test_what_leaves_a_protected_key_as_it_was_or_changes_it_as_allowed_passes(document):
    document.patch([{"op": "replace", "path": "/keystone", "value": {"admin_token": "t0", "workers": 5}}])
    document.put(dict(document.get(), other={"workers": 9}))
    document.patch([{"op": "add", "path": "/keystone", "value": {"admin_token": "t1"}}])  # a replace of the token
    document.keys("set", [["keystone", "admin_token", "t2"]])
    assert document.get() == dict(START, keystone={"admin_token": "t2"}, other={"workers": 9})
    # an add of the token where it is not: refused as the policy says (it allows replace only)
    document.put(dict(START, keystone=WITHOUT_TOKEN), user="admin")
    document.keys("set", [["keystone", "admin_token", "t3"]], status=403)


def test_a_first_put_adds_every_path(app):
    """A document that does not exist yet is created by adding all it holds: a member cannot create the
    protected keys the policy lets only be replaced; an admin can."""
    document = Document(app)
    app.post_json(API + "/environments", {"components": ["c"], "hierarchy_levels": []}, headers=auth("admin"),
                  status=201)
    other = document.url.replace("environments/1", "environments/2")
    answer = app.put_json(other, {"keystone": {"admin_token": "x"}}, headers=auth("member"), status=403).json
    assert answer["errors"] == [{"op": "add", "path": "/keystone/admin_token", "allowed": ["replace", "test"]}]
    app.put_json(other, {"keystone": {"workers": 1}}, headers=auth("member"), status=204)
    app.put_json(other, {"keystone": {"admin_token": "x"}}, headers=auth("admin"), status=204)


def test_masked_secrets_are_judged_by_their_stored_values(app, tmp_path):
    """A member reads ``db.password`` masked; writing the mask back keeps the stored value: no change, not
    refused even where the policy protects it; another value is a replace it refuses."""
    component = app.post_json(API + "/components", {"name": "c", "resource_definitions": [
        {"name": "db", "content": {"x-patch-policy": {"/db/password": []}}}]}, headers=auth("admin"),
        status=201).json
    app.post_json(API + "/environments", {"components": ["c"], "hierarchy_levels": []}, headers=auth("admin"))
    url = "{0}/environments/1/resources/{1}/values".format(API, component["resource_definitions"][0]["id"])
    app.put_json(url, {"db": {"password": "s3cret", "port": 1}}, headers=auth("admin"), status=204)
    seen = app.get(url, headers=auth("member")).json
    assert seen["db"]["password"] == MASK
    app.put_json(url, dict(seen, db=dict(seen["db"], port=2)), headers=auth("member"), status=204)
    app.patch(url, json.dumps([{"op": "replace", "path": "/db", "value": {"password": MASK, "port": 3}}]),
              headers=dict(auth("member"), **{"Content-Type": PATCH_TYPE}), status=204)
    app.put_json(url, {"db": {"password": "other", "port": 3}}, headers=auth("member"), status=403)
    assert app.get(url, headers=auth("admin")).json == {"db": {"password": "s3cret", "port": 3}}


def test_a_session_is_refused_when_staging_and_when_deploying(document):
    sid = document.session()
    hdr = {HEADER: sid}
    for ops in SEVEN_FORMS.values():
        document.patch(ops, status=403, headers=hdr)
    document.put(dict(START, keystone=WITHOUT_TOKEN), status=403, headers=hdr)
    document.keys("delete", [["keystone", "admin_token"]], status=403, headers=hdr)
    document.patch([{"op": "replace", "path": "/other/workers", "value": 7}], headers=hdr)
    document.deploy(sid)
    assert document.get() == dict(START, other={"workers": 7})


def test_a_deploy_is_judged_by_the_policy_of_when_it_deploys(document):
    """Staged while the policy allowed it; the environment then moved to a version of the definition whose
    policy refuses it (by an admin): the deploy, by the member who staged it, is refused and writes nothing."""
    sid = document.session()
    document.patch([{"op": "remove", "path": "/other"}], headers={HEADER: sid})
    latest = document.app.put_json(API + "/resource_definitions/{0}".format(document.rid), {
        "name": "keystone", "content": {"x-patch-policy": dict(POLICY, **{"/other": []})}},
        headers=auth("admin"), status=200).json
    document.app.put_json(API + "/environments/1/pins/keystone", {"version": "latest"}, headers=auth("admin"))
    answer = document.deploy(sid, status=403).json
    assert {"op": "remove", "path": "/other"} in [{"op": e.get("op"), "path": e.get("path")} for e in answer["errors"]]
    assert "x-patch-policy of resource definition {0} (keystone version 2)".format(latest["id"]) in answer["message"]
    assert document.get() == START and document.versions() == 1


def test_overrides_are_judged_alike(document):
    url = document.url.replace("/values", "/overrides")
    document.app.put_json(url, {"keystone": {"admin_token": "o0"}}, headers=auth("admin"), status=204)
    document.app.put_json(url, {"keystone": {}}, headers=auth("member"), status=403)
    document.app.patch(url, json.dumps([{"op": "remove", "path": "/keystone"}]), status=403,
                       headers=dict(auth("member"), **{"Content-Type": PATCH_TYPE}))
    document.app.patch_json(url + "/keys/delete", [["keystone"]], headers=auth("member"), status=403)
    assert document.app.get(url, headers=auth("admin")).json == {"keystone": {"admin_token": "o0"}}


UNSET = {"$unset": True}
#: what admin stores as the environment's values in ``Levelled``
VALUES = {"keystone": {"admin_token": "t0", "x": 1}}


class Levelled:
    """Resource ``keystone`` (``admin_token`` may only be replaced) in environment 1, levels ``nodes``; its
    environment values VALUES, stored by admin."""

    def __init__(self, app):
        self.app = app
        component = app.post_json(API + "/components", {"name": "c", "resource_definitions": [
            {"name": "keystone", "content": {"x-patch-policy": {"/keystone/admin_token": ["replace"]}}}]},
            headers=auth("admin"), status=201).json
        self.rid = component["resource_definitions"][0]["id"]
        app.post_json(API + "/environments", {"components": ["c"], "hierarchy_levels": ["nodes"]},
                      headers=auth("admin"), status=201)
        self.put("", "values", VALUES, "admin")

    def url(self, levels, kind):
        return "{0}/environments/1/{1}resources/{2}/{3}".format(API, levels, self.rid, kind)

    def put(self, levels, kind, data, user="member", status=204, headers=None):
        return self.app.put_json(self.url(levels, kind), data, headers=dict(auth(user), **(headers or {})),
                                 status=status)

    def keys(self, levels, kind, paths, user="member", status=204):
        return self.app.patch_json(self.url(levels, kind) + "/keys/set", paths, headers=auth(user), status=status)

    def patch(self, levels, kind, ops, user="member", status=204):
        return self.app.patch(self.url(levels, kind), json.dumps(ops), status=status,
                              headers=dict(auth(user), **{"Content-Type": PATCH_TYPE}))

    def state(self):
        """Every document of the chain down to node 5, its number of versions, and node 5's effective values."""
        def read(url):
            return self.app.get(url, headers=auth("admin")).json

        documents = {(levels, kind): (read(self.url(levels, kind)), len(read(self.url(levels, kind) + "/history")))
                     for levels in ("", "nodes/5/") for kind in ("values", "overrides")}
        return documents, self.app.get(self.url("nodes/5/", "values") + "?effective", headers=auth("admin")).json


@pytest.fixture
def levelled(app):
    return Levelled(app)


def test_setting_the_unset_marker_is_a_remove(levelled):
    """``{"$unset": true}`` takes the key out of every merge: writing it where the key is removes the key,
    whatever the operation that wrote it; writing a value where the marker is adds the key."""
    before = levelled.state()
    answer = levelled.keys("", "values", [["keystone", "admin_token", UNSET]], status=403).json
    assert {"op": "remove", "path": "/keystone/admin_token", "allowed": ["replace", "test"]} in answer["errors"]
    levelled.patch("", "values", [{"op": "replace", "path": "/keystone/admin_token", "value": UNSET}], status=403)
    levelled.put("", "values", {"keystone": {"admin_token": UNSET, "x": 1}}, status=403)
    assert levelled.state() == before
    levelled.keys("", "values", [["keystone", "admin_token", UNSET]], user="admin")
    answer = levelled.keys("", "values", [["keystone", "admin_token", "t1"]], status=403).json
    assert {"op": "add", "path": "/keystone/admin_token", "allowed": ["replace", "test"]} in answer["errors"]


#: the reviewer's three: each changes no document holding the token, yet takes it out of the effective values
THROUGH_THE_MERGE = {
    "a null override": lambda doc, **kw: doc.put("", "overrides", {"keystone": None}, **kw),
    "an unset override": lambda doc, **kw: doc.keys("", "overrides", [["keystone", UNSET]], **kw),
    "a node's value": lambda doc, **kw: doc.put("nodes/5/", "values", {"keystone": "gone"}, **kw),
}


@pytest.mark.parametrize("write", THROUGH_THE_MERGE.values(), ids=list(THROUGH_THE_MERGE))
def test_the_effective_values_at_the_written_level_are_judged(levelled, write):
    before = levelled.state()
    answer = write(levelled, status=403).json
    assert "in the effective values at /" in answer["message"]
    assert "x-patch-policy of resource definition {0}".format(levelled.rid) in answer["message"]
    assert {"op": "remove", "path": "/keystone/admin_token"} in [
        {"op": e["op"], "path": e["path"]} for e in answer["errors"]]
    assert levelled.state() == before
    write(levelled, user="admin")  # not bound
    assert "admin_token" not in (levelled.state()[1].get("keystone") or {})


def test_what_leaves_the_effective_token_alone_passes(levelled):
    levelled.put("", "overrides", {"keystone": {"x": 2}})
    levelled.put("nodes/5/", "values", {"keystone": {"x": 3}, "y": 1})
    levelled.keys("nodes/5/", "overrides", [["keystone", "x", UNSET]])
    levelled.put("", "overrides", {"keystone": {"admin_token": "t1"}}, status=403)  # added to the overrides
    assert levelled.state()[1] == {"keystone": {"admin_token": "t0"}, "y": 1}


def test_a_deploy_judges_the_effective_values_as_they_are_then(levelled):
    """An override staged while the environment held no token; admin then stores one: the member's deploy
    would take it out of the effective values, and is refused."""
    levelled.put("", "values", {}, "admin")
    sid = levelled.app.post_json(API + "/environments/1/configure", {}, headers=auth("member")).json["id"]
    levelled.put("", "overrides", {"keystone": None}, headers={HEADER: sid})
    levelled.put("", "values", VALUES, "admin")
    before = levelled.state()
    answer = levelled.app.post(API + "/environments/1/sessions/{0}/deploy".format(sid), headers=auth("member"),
                               status=403).json
    assert {"op": "remove", "path": "/keystone/admin_token"} in [
        {"op": e.get("op"), "path": e.get("path")} for e in answer["errors"]]
    assert levelled.state() == before


def test_deleting_a_definition_with_a_policy_needs_the_bypass_rule(levelled, app):
    url = API + "/resource_definitions/{0}".format(levelled.rid)
    before = levelled.state()
    answer = app.delete(url, headers=auth("member"), status=403).json
    assert "nailgun:bypass_patch_policy" in answer["message"]
    assert levelled.state() == before
    free = app.post_json(API + "/components", {"name": "d", "resource_definitions": [
        {"name": "free", "content": {"x-patch-default": "allow"}}]}, headers=auth("admin"), status=201).json
    app.delete(API + "/resource_definitions/{0}".format(free["resource_definitions"][0]["id"]),
               headers=auth("member"), status=204)
    denied = app.post_json(API + "/components", {"name": "e", "resource_definitions": [
        {"name": "denied", "content": {"x-patch-default": "deny"}}]}, headers=auth("admin"), status=201).json
    app.delete(API + "/resource_definitions/{0}".format(denied["resource_definitions"][0]["id"]),
               headers=auth("member"), status=403)
    app.delete(url, headers=auth("admin"), status=204)


def test_judging_the_effective_values_costs_one_statement_and_nothing_without_a_policy(levelled, app,
                                                                                        query_counter):
    """The documents of the level chain come in one query; a definition whose policy refuses nothing runs none."""
    free = app.post_json(API + "/components", {"name": "d", "resource_definitions": [
        {"name": "free", "content": {}}]}, headers=auth("admin"), status=201).json["resource_definitions"][0]["id"]
    app.post_json(API + "/environments", {"components": ["c", "d"], "hierarchy_levels": ["nodes"]},
                  headers=auth("admin"), status=201)

    def count(resource, value):
        url = "{0}/environments/2/nodes/5/resources/{1}/values".format(API, resource)
        with query_counter.counting():
            app.put_json(url, {"keystone": {"x": value}}, headers=auth("member"), status=204)
        return len([s for s in query_counter.statements if not s.startswith("BEGIN")])

    for value in (1, 2):  # a first write (no document yet), then a second
        assert count(levelled.rid, value) == count(free, value) + 1


#: documents over a few keys, where ``/k/t`` (the protected key) and the marker turn up often
_LEAVES = st.one_of(st.integers(0, 2), st.none(), st.just(UNSET))
_DOCUMENTS = st.dictionaries(st.sampled_from(["k", "t", "x"]), st.recursive(
    _LEAVES, lambda inner: st.dictionaries(st.sampled_from(["k", "t", "x"]), inner, max_size=3), max_leaves=6),
    max_size=3)
_PLACES = [(path, kind) for path in ("", "nodes/5") for kind in ("values", "overrides")]


def _token(effective):
    keystone = effective.get("k")
    return keystone.get("t", "absent") if isinstance(keystone, dict) else "absent"


@settings(max_examples=300, deadline=None)
@given(chain=st.fixed_dictionaries({place: _DOCUMENTS for place in _PLACES}), where=st.sampled_from(_PLACES),
       new=_DOCUMENTS, operations=st.sampled_from([["replace"], []]))
def test_no_accepted_write_adds_or_removes_the_effective_protected_key(chain, where, new, operations):
    """Whatever a write at any place of the chain (markers, nulls, scalars over objects) is accepted for, the
    effective ``/k/t`` at its level is neither added nor removed, and with no operation allowed not changed."""
    resource = resource_definition.Resource(id=1, name="k", component_id=1, version=1, definition_id=1, content={
        "x-patch-policy": {"/k/t": operations}}, secret_schemas=())
    paths = ["", "nodes/5"][:["", "nodes/5"].index(where[0]) + 1]
    stored = chain.pop(where)
    try:
        write_policy.judge(resource, chain, paths, where, stored, new)
    except errors.NotAllowed:
        return
    layers = [(place, new if place == where else chain[place]) for place in _PLACES if place[0] in paths]
    before = _token(merge.effective([(p, stored if p == where else d) for p, d in layers])[0])
    after = _token(merge.effective(layers)[0])
    assert (before == "absent") == (after == "absent")
    if not operations:
        assert type_strict_equal(before, after)
