"""RFC 6902 JSON patch of ConfigDB documents: every operation, the per-path policy, and every failure
leaving the document and its version as they were."""
import contextlib
import json

import jsonpatch
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_host.settings import settings
from tests.configdb.conftest import API

PATCH_TYPE = "application/json-patch+json"
HEADER = "X-Configuration-Session"
SCHEMA = {"type": "object", "properties": {"workers": {"type": "integer"}}}
POLICY = {"/nova/**": ["add", "replace", "remove"], "/keystone/admin_token": ["replace"],
          "/locked": []}
START = {"workers": 4, "list": [1, 2], "a/b": 1, "m~n": 2, "nova": {"debug": False}, "locked": 1,
         "keystone": {"admin_token": "t"}}


@pytest.fixture
def doc(cdb, tmp_path):
    cdb.component("comp", [{"name": "nova", "content": {"schema": SCHEMA, "x-patch-policy": POLICY}},
                           {"name": "strict", "content": {"x-patch-default": "deny",
                                                          "x-patch-policy": {"/open/*": ["add", "replace"]}}},
                           {"name": "broken", "content": {}}])
    env_id = cdb.environment(["comp"])["id"]
    ids = {r["name"]: r["id"] for r in cdb.app.get(API + "/resource_definitions").json}
    cdb.put(env_id, ids["nova"], START)
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"nailgun:bypass_patch_policy": "!"\n')
    with bound(policy_file):
        yield Doc(cdb, env_id, ids)


@contextlib.contextmanager
def bound(policy_file):
    """The anonymous identity of these tests (role admin) held to the patch policy as a member is (by default
    the policy does not bind admins: tests/configdb/test_patch_policy.py has both)."""
    held = settings["AUTH"].get("policy_file")
    settings["AUTH"]["policy_file"] = policy_file and str(policy_file)
    try:
        yield
    finally:
        settings["AUTH"]["policy_file"] = held


class Doc:
    def __init__(self, cdb, env_id, ids):
        self.cdb, self.env_id, self.ids = cdb, env_id, ids

    def url(self, name="nova"):
        return self.cdb.url(self.env_id, self.ids[name])

    def patch(self, ops, status=204, name="nova", content_type=PATCH_TYPE, headers=None):
        body = ops if isinstance(ops, (bytes, str)) else json.dumps(ops)
        return self.cdb.app.patch(self.url(name), body, status=status,
                                  headers=dict({"Content-Type": content_type}, **(headers or {})))

    def get(self, name="nova"):
        return self.cdb.app.get(self.url(name)).json

    def versions(self, name="nova"):
        return len(self.cdb.app.get(self.url(name) + "/history").json)


@pytest.mark.parametrize("ops, expected", [
    ([{"op": "add", "path": "/new", "value": {"x": 1}}], dict(START, new={"x": 1})),
    ([{"op": "add", "path": "/list/-", "value": 3}], dict(START, list=[1, 2, 3])),
    ([{"op": "add", "path": "/list/0", "value": 0}], dict(START, list=[0, 1, 2])),
    ([{"op": "remove", "path": "/list/0"}], dict(START, list=[2])),
    ([{"op": "replace", "path": "/workers", "value": 8}], dict(START, workers=8)),
    ([{"op": "replace", "path": "/a~1b", "value": 5}], dict(START, **{"a/b": 5})),
    ([{"op": "remove", "path": "/m~0n"}], {k: v for k, v in START.items() if k != "m~n"}),
    ([{"op": "move", "from": "/nova/debug", "path": "/nova/verbose"}], dict(START, nova={"verbose": False})),
    ([{"op": "copy", "from": "/workers", "path": "/nova/workers"}], dict(START, nova={"debug": False, "workers": 4})),
    ([{"op": "test", "path": "/workers", "value": 4}, {"op": "replace", "path": "/workers", "value": 5}],
     dict(START, workers=5)),
    ([{"op": "test", "path": "/locked", "value": 1}], START),
])
def test_each_operation(doc, ops, expected):
    doc.patch(ops)
    assert doc.get() == expected
    assert doc.versions() == (1 if expected == START else 2)


def test_seed_000_media_type(doc):
    doc.patch([{"op": "replace", "path": "/workers", "value": 6}], content_type="application/env-model-json-patch")
    assert doc.get()["workers"] == 6


@pytest.mark.parametrize("ops, status", [
    ([{"op": "test", "path": "/workers", "value": 5}], 409),  # compare-and-swap failed
    ([{"op": "replace", "path": "/locked", "value": 2}], 403),  # the policy allows nothing there
    ([{"op": "add", "path": "/keystone/admin_token", "value": "x"}], 403),  # only replace there
    ([{"op": "move", "from": "/locked", "path": "/nova/locked"}], 403),  # remove at from is refused
    ([{"op": "replace", "path": "/workers", "value": "many"}], 400),  # the result violates the schema
    ([{"op": "replace", "path": "workers", "value": 1}], 400),  # not a pointer
    ([{"op": "add", "path": "/missing/x", "value": 1}], 404),  # no parent
    ([{"op": "remove", "path": "/list/7"}], 404),  # index out of range
    ([{"op": "add", "path": "/workers/x", "value": 1}], 409),  # through a scalar
    ([{"op": "replace", "path": "/list/x", "value": 1}], 409),  # non-numeric index
    ([{"op": "add", "path": "/x"}], 400),  # value missing on add
    ([{"op": "copy", "path": "/x"}], 400),  # from missing on copy
    ([{"op": "frobnicate", "path": "/x"}], 400),
    ({"op": "add", "path": "/x", "value": 1}, 400),  # not a list
    (b"[{", 400),
    ([{"op": "replace", "path": "/workers", "value": 5}, {"op": "remove", "path": "/nope"}], 404),  # all or nothing
])
def test_failures_leave_the_document(doc, ops, status):
    answer = doc.patch(ops, status=status).json
    assert set(answer) >= {"message", "errors"}
    assert doc.get() == START and doc.versions() == 1


def test_remove_needs_no_value(doc):
    doc.patch([{"op": "remove", "path": "/nova/debug"}])
    assert doc.get()["nova"] == {}


def test_forbidden_names_what_is_allowed(doc):
    answer = doc.patch([{"op": "add", "path": "/keystone/admin_token", "value": "x"}], status=403).json
    assert answer["errors"] == [{"op": "add", "path": "/keystone/admin_token", "allowed": ["replace", "test"]}]


def test_other_media_types_are_415(doc):
    doc.patch([{"op": "remove", "path": "/workers"}], content_type="application/json", status=415)
    doc.patch([{"op": "remove", "path": "/workers"}], content_type="text/plain", status=415)
    assert doc.get() == START


def test_default_deny_allows_test_and_the_patterns(doc):
    doc.patch([{"op": "add", "path": "/open", "value": {}}], name="strict", status=403)
    doc.cdb.put(doc.env_id, doc.ids["strict"], {"open": {}}, status=403)
    with bound(None):  # an admin fills it
        doc.cdb.put(doc.env_id, doc.ids["strict"], {"open": {}})
    doc.patch([{"op": "add", "path": "/open/x", "value": 1}, {"op": "test", "path": "/open/x", "value": 1}],
              name="strict")
    assert doc.get("strict") == {"open": {"x": 1}}


@pytest.mark.parametrize("content", [{"x-patch-policy": ["add"]}, {"x-patch-policy": {"nova": ["add"]}},
                                     {"x-patch-policy": {"/nova": ["append"]}}, {"x-patch-default": "maybe"}])
def test_a_definition_whose_policy_is_not_one_is_refused_when_written(doc, content):
    url = API + "/resource_definitions/{0}".format(doc.ids["broken"])
    answer = doc.cdb.app.patch_json(url, {"content": content}, status=400).json
    assert "x-patch-" in answer["message"]
    assert doc.cdb.app.get(url).json["content"] == {}


def test_a_broken_policy_stored_before_the_check_is_409_naming_the_definition(doc, session):
    value = "CAST(:content AS jsonb)" if session.get_bind().dialect.name == "postgresql" else ":content"
    session.execute(sa.text("UPDATE configdb_resource_definitions SET content = " + value + " WHERE id = :id"),
                    {"content": json.dumps({"x-patch-policy": ["add"]}), "id": doc.ids["broken"]})
    session.commit()
    answer = doc.patch([{"op": "add", "path": "/x", "value": 1}], name="broken", status=409).json
    assert str(doc.ids["broken"]) in answer["message"]


def test_if_match(doc):
    tag = doc.cdb.app.get(doc.url()).headers["ETag"]
    doc.patch([{"op": "replace", "path": "/workers", "value": 5}], headers={"If-Match": '"stale"'}, status=412)
    doc.patch([{"op": "replace", "path": "/workers", "value": 5}], headers={"If-Match": tag})
    doc.patch([{"op": "replace", "path": "/workers", "value": 6}], headers={"If-Match": tag}, status=412)
    assert doc.get()["workers"] == 5


def test_patch_in_a_session_is_staged(doc):
    app = doc.cdb.app
    sid = app.post_json("{0}/environments/{1}/configure".format(API, doc.env_id), {}).json["id"]
    doc.patch([{"op": "replace", "path": "/workers", "value": 9}], headers={HEADER: sid})
    doc.patch([{"op": "add", "path": "/list/-", "value": 3}], headers={HEADER: sid})
    assert doc.get() == START
    assert app.get(doc.url(), headers={HEADER: sid}).json == dict(START, workers=9, list=[1, 2, 3])
    app.post("{0}/environments/{1}/sessions/{2}/deploy".format(API, doc.env_id, sid))
    assert doc.get() == dict(START, workers=9, list=[1, 2, 3]) and doc.versions() == 2


POINTERS = st.sampled_from(["", "/", "/workers", "/list", "/list/0", "/list/-", "/list/9", "/nova", "/nova/debug",
                            "/nova/x", "/a~1b", "/m~0n", "/locked", "/x/y", "/workers/0", "~", "/list/x", 5])
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3),
                   st.lists(st.integers(0, 2), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(0, 2),
                                                                          max_size=2))
OPERATION = st.fixed_dictionaries(
    {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "bad"]), "path": POINTERS},
    optional={"value": VALUES, "from": POINTERS})


@hypothesis_settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPERATION, max_size=4))
def test_random_patches_never_500_and_never_apply_in_part(doc, ops):
    before, versions = doc.get(), doc.versions()
    answer = doc.patch(ops, status="*")
    assert answer.status_int in (204, 400, 403, 404, 409), answer.text
    if answer.status_int == 204:  # applied whole, as RFC 6902 says
        assert doc.get() == jsonpatch.apply_patch(before, ops)
    else:
        assert doc.get() == before and doc.versions() == versions
        assert set(answer.json) >= {"message", "errors"}


@pytest.mark.parametrize("value", [[1], "str", 1, None, True])
def test_a_patch_cannot_make_the_document_anything_but_an_object(doc, value):
    for op in ("add", "replace"):
        answer = doc.patch([{"op": op, "path": "", "value": value}], status=400).json
        assert answer["message"] == "The patch must leave the document a JSON object"
    sid = doc.cdb.app.post_json(API + "/environments/{0}/configure".format(doc.env_id), {}).json["id"]
    doc.patch([{"op": "replace", "path": "", "value": value}], status=400, headers={HEADER: sid})
    assert doc.get() == START and doc.versions() == 1
    assert doc.cdb.app.get(doc.url() + "?effective").json == START
    assert doc.cdb.app.get(API + "/environments/{0}/sessions/{1}".format(doc.env_id, sid)).json["documents"] == []


def test_a_patch_longer_than_max_operations_is_400_naming_the_limit(doc, monkeypatch):
    monkeypatch.setitem(settings["PATCH"], "max_operations", 2)
    answer = doc.patch([{"op": "replace", "path": "/workers", "value": 5}] * 3, status=400).json
    assert answer["message"] == "A patch may hold at most 2 operations (PATCH.max_operations); this one holds 3"
    assert doc.get() == START and doc.versions() == 1
    doc.patch([{"op": "replace", "path": "/workers", "value": 5}] * 2)
