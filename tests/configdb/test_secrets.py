"""ConfigDB keeps its secrets secret: sealed in every stored row, masked on every read path for
identities that may not see them, kept when the mask is written back, never quoted by an error.

Identities (local mode): reader (role reader), member (member), admin (admin), hiera (reader and hiera:
the Hiera backends read, and see secrets).
"""
import base64
import copy
import json
import re

import pytest
import sqlalchemy as sa
import webtest
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_host import errors
from nailgun_host.api.base import MASKED_HEADER
from nailgun_host.app import build_wsgi
from nailgun_host.settings import settings
from nailgun_platform.secrets import classify
from nailgun_platform.secrets.masking import MASK
from nailgun_ext_configdb.objects import secrets as configdb_secrets
from nailgun_ext_configdb.objects import value_schema
from tests.auth import write_users_file
from tests.conftest import over_the_settings_file
from tests.configdb.conftest import API, STORAGE, stored_texts

#: every test with the keys in a key repository and in Barbican (issue 28)
pytestmark = pytest.mark.usefixtures("each_key_manager")

USERS = {"reader": ("reader-pw", ["reader"]), "member": ("member-pw", ["member"]),
         "admin": ("admin-pw", ["admin"]), "hiera": ("hiera-pw", ["reader", "hiera"]),
         "puppet": ("puppet-pw", ["hiera"])}
MASKED, CLEAR = ("reader", "member"), ("admin", "hiera")
#: a resource whose schema marks secrets the key names alone would not
SCHEMA = {"type": "object", "maxProperties": 20, "properties": {
    "pin": {"x-secret": True},
    "service": {"type": "object", "properties": {"credential": {"type": "string", "format": "password"}}},
    "port": {"type": "integer"}}}


def auth(user):
    token = base64.b64encode("{0}:{1}".format(user, USERS[user][0]).encode()).decode()
    return {"Authorization": "Basic " + token}


@pytest.fixture
def app(migrated_db, tmp_path):
    saved = copy.deepcopy(dict(settings))
    users_file = write_users_file(str(tmp_path / "users.yaml"), USERS)
    settings.reload(overrides={"AUTH": {"method": "local", "users_file": users_file}})
    yield webtest.TestApp(build_wsgi())
    settings.clear()
    settings.update(saved)


class Client:
    """The ConfigDB document URLs of environment 1 (levels: nodes), as one identity."""

    def __init__(self, app, rid):
        self.app, self.rid = app, rid

    def url(self, kind="values", levels="", suffix=""):
        return "{0}/environments/1/{1}resources/{2}/{3}{4}".format(API, levels, self.rid, kind, suffix)

    def get(self, user, query="", status=200, **kwargs):
        url = self.url(**kwargs) + ("?" + query if query else "")
        return self.app.get(url, headers=auth(user), status=status)

    def put(self, user, data, status=204, headers=None, **kwargs):
        return self.app.put_json(self.url(**kwargs), data, headers=dict(auth(user), **(headers or {})),
                                 status=status)

    def keys(self, user, operation, paths, status=204, headers=None, **kwargs):
        return self.app.patch_json(self.url(suffix="/keys/" + operation, **kwargs), paths,
                                   headers=dict(auth(user), **(headers or {})), status=status)

    def history(self, **kwargs):
        return self.get("admin", suffix="/history", **kwargs).json


@pytest.fixture
def cdb(app):
    body = {"name": "comp", "resource_definitions": [{"name": "astute", "content": {"schema": SCHEMA}}]}
    rid = app.post_json(API + "/components", body, headers=auth("admin"), status=201).json[
        "resource_definitions"][0]["id"]
    app.post_json(API + "/environments", {"components": ["comp"], "hierarchy_levels": ["nodes"]},
                  headers=auth("admin"), status=201)
    return Client(app, rid)


ASTUTE = {"mysql": {"root_password": "Mv1yTbAk", "port": 3306},
          "keystone": {"admin_token": "tOkEnVaLuE"},
          "access": [{"user": "admin", "password": "AdMiNpW"}],
          "pin": 4242, "service": {"credential": "CrEdEnTiAl", "name": "svc"}, "port": 3306}
ASTUTE_SECRETS = ("Mv1yTbAk", "tOkEnVaLuE", "AdMiNpW", "4242", "CrEdEnTiAl")
ASTUTE_MASKED = {"mysql": {"root_password": MASK, "port": 3306}, "keystone": {"admin_token": MASK},
                 "access": [{"user": "admin", "password": MASK}],
                 "pin": MASK, "service": {"credential": MASK, "name": "svc"}, "port": 3306}


def raw_rows(session, history=True):
    """The stored JSON of every document and version, as it is kept at rest (nothing opens it)."""
    return stored_texts(session, history)


def test_every_stored_row_holds_secrets_as_tokens_only(cdb, session):
    cdb.put("admin", ASTUTE)
    cdb.put("admin", dict(ASTUTE, port=3307))
    cdb.put("admin", {"rabbit": {"password": "RaBbItPw"}}, kind="overrides", levels="nodes/1/")
    rows = raw_rows(session)
    assert len(rows) == 5  # two documents, three versions
    for row in rows:
        assert "$fernet" in row
        for secret in ASTUTE_SECRETS + ("RaBbItPw",):
            assert secret not in row
    assert cdb.get("admin").json == dict(ASTUTE, port=3307)
    history = cdb.history()
    assert history[1]["changed_keys"] == ["/port"]  # new tokens of the same secrets are no change


def test_a_rewrite_of_the_same_secrets_is_no_new_version(cdb):
    cdb.put("admin", ASTUTE)
    cdb.put("admin", copy.deepcopy(ASTUTE))
    assert [h["version"] for h in cdb.history()] == [1]


@pytest.mark.parametrize("user", MASKED)
def test_every_read_path_masks_for_readers_and_members(cdb, user):
    cdb.put("admin", ASTUTE)
    cdb.put("admin", dict(ASTUTE, mysql={"root_password": "NeWpAsS", "port": 3306}, extra={"token": "NeWtOk"}))
    cdb.put("admin", {"mysql": {"port": 3307}, "keystone": {"admin_token": "OvErRiDe"}},
            kind="overrides", levels="nodes/1/")
    secrets = ASTUTE_SECRETS + ("NeWpAsS", "NeWtOk", "OvErRiDe")
    answers = {
        "values": cdb.get(user),
        "version": cdb.get(user, "version=1"),
        "key": cdb.get(user, "key=mysql"),
        "secret key": cdb.get(user, "key=mysql.root_password"),
        "pointer key": cdb.get(user, "key=/access/0"),
        "overrides": cdb.get(user, kind="overrides", levels="nodes/1/"),
        "effective": cdb.get(user, "effective", levels="nodes/1/"),
        "effective key": cdb.get(user, "effective&key=keystone", levels="nodes/1/"),
        "effective version": cdb.get(user, "effective&version=1"),
        "lookup": cdb.get(user, "effective&show_lookup", levels="nodes/1/"),
        "lookup key": cdb.get(user, "effective&show_lookup&key=mysql", levels="nodes/1/"),
        "diff": cdb.get(user, "from=1&to=2", suffix="/diff"),
    }
    for name, answer in answers.items():
        assert answer.headers.get(MASKED_HEADER) == "true", name
        for secret in secrets:
            assert secret not in answer.text, (name, secret)
    assert answers["values"].json == dict(ASTUTE_MASKED, extra={"token": MASK})
    assert answers["version"].json == ASTUTE_MASKED
    assert answers["key"].json == {"root_password": MASK, "port": 3306}
    assert answers["secret key"].json == MASK
    assert answers["pointer key"].json == {"user": "admin", "password": MASK}
    assert answers["overrides"].json == {"mysql": {"port": 3307}, "keystone": {"admin_token": MASK}}
    assert answers["effective"].json["mysql"] == {"root_password": MASK, "port": 3307}
    assert answers["effective key"].json == {"admin_token": MASK}
    assert answers["effective version"].json == ASTUTE_MASKED
    assert answers["lookup"].json["keystone"] == {"admin_token": [MASK, "/nodes/1/", "overrides"]}
    assert answers["lookup key"].json == {"root_password": [MASK, "/", "values"],
                                          "port": [3307, "/nodes/1/", "overrides"]}
    # a diff still says which secrets changed
    assert sorted(answers["diff"].json, key=lambda op: op["path"]) == [
        {"op": "add", "path": "/extra", "value": {"token": MASK}},
        {"op": "replace", "path": "/mysql/root_password", "value": MASK}]
    # an answer whose part holds no secret says nothing is masked
    plain = cdb.get(user, "key=mysql.port")
    assert plain.json == 3306 and MASKED_HEADER not in plain.headers


def test_a_diff_masks_appended_secrets_and_secrets_inside_new_objects(cdb):
    cdb.put("admin", {"api_tokens": ["TkOne"], "hosts": ["a"], "db": {"port": 1}})
    cdb.put("admin", {"api_tokens": ["TkOne", "TkTwo", "TkThree"], "hosts": ["a", "b"],
                      "db": {"port": 1, "conf": {"password": "DbPw", "user": "nova"}}})
    answer = cdb.get("reader", "from=1", suffix="/diff")
    assert answer.headers[MASKED_HEADER] == "true"
    assert sorted(answer.json, key=json.dumps) == sorted([
        {"op": "add", "path": "/api_tokens/-", "value": MASK}, {"op": "add", "path": "/api_tokens/-", "value": MASK},
        {"op": "add", "path": "/hosts/-", "value": "b"},
        {"op": "add", "path": "/db/conf", "value": {"password": MASK, "user": "nova"}}], key=json.dumps)
    plain = cdb.get("reader", "from=2&to=2", suffix="/diff")
    assert plain.json == [] and MASKED_HEADER not in plain.headers


@pytest.mark.parametrize("user", CLEAR)
def test_admins_and_hiera_read_clear_values_on_every_path(cdb, user):
    cdb.put("admin", ASTUTE)
    cdb.put("admin", dict(ASTUTE, port=1))
    answers = [cdb.get(user), cdb.get(user, "version=1"), cdb.get(user, "effective"),
               cdb.get(user, "effective&show_lookup&key=pin"), cdb.get(user, "from=1", suffix="/diff")]
    for answer in answers:
        assert MASKED_HEADER not in answer.headers
    assert answers[0].json == answers[2].json == dict(ASTUTE, port=1)
    assert answers[1].json == ASTUTE
    assert answers[4].json == [{"op": "replace", "path": "/port", "value": 1}]
    assert answers[3].json == [4242, "/", "values"]


def test_the_hiera_role_alone_reads_clear_values_and_writes_nothing(cdb):
    cdb.put("admin", ASTUTE)
    assert cdb.get("puppet", "effective").json == ASTUTE
    refused = cdb.put("puppet", ASTUTE, status=403)
    assert refused.json["errors"] == ["nailgun:write"]


def test_effective_etags_differ_between_masked_and_clear_views(cdb):
    cdb.put("admin", ASTUTE)
    reader = cdb.get("reader", "effective")
    admin = cdb.get("admin", "effective")
    assert reader.headers["ETag"] != admin.headers["ETag"]
    cdb.app.get(cdb.url() + "?effective", headers=dict(auth("reader"), **{"If-None-Match": reader.headers["ETag"]}),
                status=304)
    again = cdb.app.get(cdb.url() + "?effective", headers=dict(auth("hiera"), **{"If-None-Match": reader.headers[
        "ETag"]}), status=200)
    assert again.json == ASTUTE


def test_a_members_read_modify_write_keeps_the_secrets(cdb):
    cdb.put("admin", ASTUTE)
    read = cdb.get("member")
    cdb.put("member", read.json, headers={"If-Match": read.headers["ETag"]})
    cdb.keys("member", "set", [["mysql", read.json["mysql"]], ["pin", MASK]],
             headers={"If-Match": read.headers["ETag"]})
    assert [h["version"] for h in cdb.history()] == [1]
    edited = dict(read.json, port=3307)
    cdb.put("member", edited, headers={"If-Match": read.headers["ETag"]})
    assert cdb.get("admin").json == dict(ASTUTE, port=3307)
    assert cdb.history()[-1]["changed_keys"] == ["/port"]
    # the ETag of the clear document is not the member's: If-Match with it fails
    cdb.put("member", edited, status=412, headers={"If-Match": cdb.get("admin").headers["ETag"]})
    cdb.put("member", dict(edited, port=1), status=412, headers={"If-Match": read.headers["ETag"]})


def test_a_member_sets_a_new_secret_and_reverts_through_the_mask(cdb):
    cdb.put("admin", ASTUTE)
    cdb.keys("member", "set", [["mysql", "root_password", "ChAnGeD"]])
    assert cdb.get("admin", "key=mysql.root_password").json == "ChAnGeD"
    answer = cdb.app.post_json(cdb.url(suffix="/revert"), {"version": 1}, headers=auth("member"), status=201)
    assert "Mv1yTbAk" not in answer.text
    assert cdb.get("admin").json == ASTUTE


@pytest.mark.parametrize("write", [
    lambda cdb: cdb.put("admin", dict(ASTUTE, rabbit={"password": MASK}), status=400),
    lambda cdb: cdb.put("member", {"mysql": {"root_password": MASK}}, status=400, kind="overrides"),
    lambda cdb: cdb.keys("member", "set", [["keystone", "service_token", MASK]], status=400),
    lambda cdb: cdb.keys("admin", "set", [["new", {"password": MASK}]], status=400),
])
def test_the_mask_where_nothing_is_stored_is_refused(cdb, session, write):
    cdb.put("admin", ASTUTE)
    before = (cdb.get("admin").json, cdb.history(), raw_rows(session))
    answer = write(cdb)
    assert "no value is stored" in answer.json["message"]
    assert (cdb.get("admin").json, cdb.history(), raw_rows(session)) == before


@pytest.mark.parametrize("body, where", [
    (dict({"k{0}".format(n): n for n in range(20)}, db_password="hunter2hunter2"), None),
    ({"service": {"credential": 991199}}, "service/credential"),
    ({"service": {"credential": ["hunter2hunter2"]}}, "service/credential"),
    ({"port": {"password": "hunter2hunter2"}}, "port"),
])
def test_schema_errors_never_quote_a_secret(cdb, session, body, where):
    answer = cdb.put("admin", body, status=400)
    assert "hunter2hunter2" not in answer.text and "991199" not in answer.text
    assert MASK in answer.json["message"]
    if where:
        assert where in answer.json["message"]
    assert session.execute(sa.text("SELECT count(*) FROM configdb_document_versions")).scalar() == 0


def test_key_path_errors_never_quote_a_value(cdb):
    cdb.put("admin", ASTUTE)
    answer = cdb.keys("admin", "set", [[{"a": 1}, "hunter2hunter2"]], status=400)
    assert "hunter2hunter2" not in answer.text


# -- property: random documents, secrets at random depths ------------------------------------

SECRET_NAMES = ("password", "db_password", "admin_token", "secret_key", "root_passwd", "private_key")
PLAIN_NAMES = ("host", "nodes", "a", "b", "user", "settings")
SECRET_PREFIX = "S3cR3t"
plain_leaf = st.one_of(st.integers(-100, 100), st.booleans(), st.none(), st.text("abc", max_size=4))
secret_leaf = st.one_of(st.integers(0, 10 ** 6).map(lambda n: "{0}{1}".format(SECRET_PREFIX, n)),
                        st.integers(0, 10 ** 6).map(lambda n: 7770000000 + n),
                        st.just({}), st.just([]))
secret_value = st.recursive(secret_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(PLAIN_NAMES), inner, max_size=3)), max_leaves=6)
document = st.recursive(
    st.dictionaries(st.sampled_from(SECRET_NAMES), secret_value, max_size=2),
    lambda inner: st.dictionaries(st.sampled_from(PLAIN_NAMES + SECRET_NAMES), st.one_of(plain_leaf, inner), max_size=4)
    .flatmap(lambda d: st.dictionaries(st.sampled_from(SECRET_NAMES), secret_value, max_size=1).map(
        lambda s: dict(d, **s))),
    max_leaves=12)
schema_marked = st.fixed_dictionaries({}, optional={
    "pin": secret_value, "service": st.fixed_dictionaries({}, optional={
        "credential": st.integers(0, 10 ** 6).map(lambda n: "{0}{1}".format(SECRET_PREFIX, n)),
        "name": st.text("abc", max_size=3)})})


def leaks(text):
    return SECRET_PREFIX in text or "7770" in text


@hypothesis_settings(max_examples=30, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(values=st.tuples(document, schema_marked).map(lambda pair: dict(pair[0], **pair[1])), overrides=document)
def test_no_read_path_shows_a_secret_to_a_reader_and_the_mask_written_back_changes_nothing(
        cdb, session, values, overrides):
    cdb.put("admin", values)
    cdb.put("admin", overrides, kind="overrides", levels="nodes/1/")
    for user in CLEAR:
        assert cdb.get(user).json == values
        assert cdb.get(user, kind="overrides", levels="nodes/1/").json == overrides
    version = cdb.history()[-1]["version"]
    paths = [("", {}), ("effective", {"levels": "nodes/1/"}), ("effective&show_lookup", {"levels": "nodes/1/"}),
             ("version={0}".format(version), {}), ("", {"kind": "overrides", "levels": "nodes/1/"}),
             ("from=1", {"suffix": "/diff"})]
    paths += [("key=" + key, {}) for key in values] + [("effective&key=" + key, {"levels": "nodes/1/"})
                                                       for key in overrides]
    for query, where in paths:
        for user in MASKED:
            assert not leaks(cdb.get(user, query, **where).text), (user, query)
    for row in raw_rows(session):
        assert not leaks(row)
    for kind, levels in (("values", ""), ("overrides", "nodes/1/")):
        before = cdb.history(kind=kind, levels=levels)
        read = cdb.get("member", kind=kind, levels=levels)
        cdb.put("member", read.json, kind=kind, levels=levels, headers={"If-Match": read.headers["ETag"]})
        if read.json:
            cdb.keys("member", "set", [[key, value] for key, value in read.json.items()], kind=kind, levels=levels)
        assert cdb.history(kind=kind, levels=levels) == before
    assert cdb.get("admin").json == values
    assert cdb.get("admin", kind="overrides", levels="nodes/1/").json == overrides


@hypothesis_settings(max_examples=200, deadline=None)
@given(doc=document.filter(bool), schema=st.sampled_from([
    {"additionalProperties": {"type": "integer"}}, {"maxProperties": 0}, {"not": {"type": "object"}},
    {"additionalProperties": {"additionalProperties": {"type": "integer"}}}, {"anyOf": [{"type": "array"}]}]))
def test_no_schema_error_quotes_a_secret(doc, schema):
    """Whatever rule fails, on whatever part of a document, its message never quotes a secret leaf."""
    try:
        value_schema.validate(doc, schema, lambda: configdb_secrets.secret_pointers(doc, [schema]))
    except errors.InvalidData as exc:
        assert not leaks(exc.message)


# -- what is secret changes: only with nailgun:change_secrets, and stored values follow -------------------

DEFINITION = API + "/resource_definitions/{0}"


def definition_content(cdb):
    return cdb.app.get(DEFINITION.format(cdb.rid), headers=auth("admin")).json["content"]


@pytest.mark.parametrize("route", ["PUT definition", "PATCH definition", "PUT component", "PATCH component"])
@pytest.mark.parametrize("content", [
    {"schema": {"type": "object"}},  # the markers gone: the stored secrets would read in clear
    {"schema": dict(SCHEMA, properties=dict(SCHEMA["properties"], pin={"x-secret": True, "maximum": 5000}))},
    {},
], ids=["declassify", "oracle", "emptied"])
def test_a_member_cannot_change_what_is_secret(cdb, session, route, content):
    cdb.put("admin", ASTUTE)
    before = (definition_content(cdb), cdb.history(), raw_rows(session))
    what, noun = route.split()
    if noun == "definition":
        url, body = DEFINITION.format(cdb.rid), {"content": content}
    else:
        component = cdb.app.get(DEFINITION.format(cdb.rid), headers=auth("admin")).json["component_id"]
        url, body = API + "/components/{0}".format(component), {"resource_definitions": [
            {"id": cdb.rid, "content": content}]}
    refused = cdb.app.request(url, method=what, body=json.dumps(body).encode(), headers=auth("member"),
                              content_type="application/json", expect_errors=True)
    assert refused.status_int == 403, refused
    assert refused.json["errors"] == ["nailgun:change_secrets"]
    assert "nailgun:change_secrets" in refused.json["message"]
    assert (definition_content(cdb), cdb.history(), raw_rows(session)) == before
    assert cdb.get("member").json == ASTUTE_MASKED
    # the oracle stays shut: a guess written back through the mask is no question the member may ask
    cdb.put("member", cdb.get("member").json)
    assert cdb.history() == before[1]


def test_a_member_still_creates_definitions_and_renames_them(cdb):
    made = cdb.app.post_json(API + "/resource_definitions", {"name": "new", "component_id": 1,
                                                             "content": {"schema": {"type": "object"}}},
                             headers=auth("member"), status=201).json
    cdb.app.post_json(API + "/components", {"name": "c2", "resource_definitions": [
        {"name": "r", "content": {"schema": {"type": "object"}}}]}, headers=auth("member"), status=201)
    cdb.app.put_json(API + "/components/1", {"resource_definitions": [{"name": "added", "content": {"x": 1}}]},
                     headers=auth("member"), status=200)
    # the same content written back (a client's read-modify-write of a rename) changes nothing secret
    renamed = cdb.app.put_json(DEFINITION.format(cdb.rid), {"name": "astute2", "content": {"schema": SCHEMA}},
                               headers=auth("member"), status=200).json
    assert renamed["name"] == "astute2"
    cdb.app.patch_json(DEFINITION.format(made["id"]), {"name": "newer"}, headers=auth("member"), status=200)
    cdb.app.put_json(API + "/components/1", {"resource_definitions": [{"id": cdb.rid, "name": "astute"}]},
                     headers=auth("member"), status=200)


PLAIN = {"wifi": {"psk": "PsKvAlUe1"}, "pin_code": 1234987, "port": 3306}


def test_values_that_become_secret_by_the_schema_are_sealed_in_every_stored_row_at_once(cdb, session):
    cdb.put("admin", PLAIN)
    cdb.put("admin", dict(PLAIN, port=3307))
    cdb.put("admin", {"wifi": {"psk": "OvErRiDePsK"}}, kind="overrides", levels="nodes/1/")
    clear = ("PsKvAlUe1", "1234987", "OvErRiDePsK")
    assert all(any(value in row for row in raw_rows(session)) for value in clear)
    history = cdb.history()
    properties = dict(SCHEMA["properties"], wifi={"properties": {"psk": {"format": "password"}}},
                      pin_code={"x-secret": True})
    cdb.app.put_json(DEFINITION.format(cdb.rid), {"content": {"schema": dict(SCHEMA, properties=properties)}},
                     headers=auth("admin"), status=200)
    for row in raw_rows(session, history=STORAGE == "sql"):
        assert "$fernet" in row
        for value in clear:
            assert value not in row
    if STORAGE == "git":  # the storage drivers page's limit: a commit never changes, so older versions keep what they held
        assert any("PsKvAlUe1" in row for row in raw_rows(session))
    assert cdb.get("admin").json == dict(PLAIN, port=3307)  # the same values, no new version
    assert cdb.get("admin", "version=1").json == PLAIN
    assert cdb.get("admin", kind="overrides", levels="nodes/1/").json == {"wifi": {"psk": "OvErRiDePsK"}}
    assert cdb.history() == history
    assert cdb.get("reader").json == {"wifi": {"psk": MASK}, "pin_code": MASK, "port": 3307}
    # a marker taken away by an admin in a newer version: still secret while a live version marks it
    newest = cdb.app.put_json(DEFINITION.format(cdb.rid), {"content": {}}, headers=auth("admin"), status=200).json
    assert cdb.get("reader").json == {"wifi": {"psk": MASK}, "pin_code": MASK, "port": 3307}
    # the marking version deleted (the environment moved off it first): the values stay sealed, open on read
    marking = cdb.app.get(API + "/resource_definitions?name={0}&version={1}".format(
        newest["name"], newest["version"] - 1), headers=auth("admin")).json[0]
    cdb.app.put_json(API + "/environments/1/pins/{0}".format(newest["name"]), {"version": "latest"},
                     headers=auth("admin"))
    cdb.app.delete(DEFINITION.format(marking["id"]), headers=auth("admin"), status=204)
    assert not any(value in row for row in raw_rows(session, history=STORAGE == "sql") for value in clear)
    assert cdb.get("reader").json == dict(PLAIN, port=3307)


def nailgun_secrets(db_url, *args):
    import os
    import subprocess
    import sys
    command = os.path.join(os.path.dirname(sys.executable), "nailgun-secrets")
    return subprocess.run([command, "--db-url", db_url] + list(args), capture_output=True, text=True, timeout=60)


def stale_count(db_url, *args):
    status = nailgun_secrets(db_url, *(args + ("status",)))
    assert status.returncode == 0, status.stderr
    return int(status.stdout.strip().splitlines()[-1].split()[0])


def test_values_that_become_secret_by_a_new_pattern_are_sealed_by_reencrypt(cdb, session, db_url, tmp_path):
    cdb.put("admin", PLAIN)
    cdb.put("admin", dict(PLAIN, port=3307))
    cdb.put("admin", {"wifi": {"psk": "OvErRiDePsK"}}, kind="overrides", levels="nodes/1/")
    assert stale_count(db_url) == 0
    config = tmp_path / "nailgun.yaml"
    config.write_text(json.dumps(over_the_settings_file(
        {"SECRETS": {"patterns": list(classify.DEFAULT_PATTERNS) + ["psk"]}})))
    # the pattern matches the psk of two versions, one document of values and the overrides (document, version);
    # the git driver reseals the current documents (a commit never changes)
    assert stale_count(db_url, "--config", str(config)) == (5 if STORAGE == "sql" else 2)
    assert any("PsKvAlUe1" in row for row in raw_rows(session))
    done = nailgun_secrets(db_url, "--config", str(config), "reencrypt")
    assert done.returncode == 0, done.stderr
    if STORAGE == "sql":
        assert "configdb_documents.data: 2 value(s)" in done.stdout
        assert "configdb_document_versions.data: 3 value(s)" in done.stdout
    else:
        assert "git: 2 value(s)" in done.stdout
    for row in raw_rows(session, history=STORAGE == "sql"):
        for value in ("PsKvAlUe1", "OvErRiDePsK"):
            assert value not in row
    assert stale_count(db_url, "--config", str(config)) == 0
    assert cdb.get("admin").json == dict(PLAIN, port=3307)
    assert cdb.get("admin", "version=1").json == PLAIN
    assert [h["version"] for h in cdb.history()] == [1, 2]


def _schema_marking(path):
    schema = {"x-secret": True}
    for key in reversed(path):
        schema = {"type": "object", "properties": {key: schema}}
    return schema


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    return [value]


_examples = iter(range(10 ** 6))
plain_value = st.recursive(st.one_of(plain_leaf, st.integers(0, 10 ** 6).map(lambda n: "HiD{0}x".format(n))),
                           lambda inner: st.dictionaries(st.sampled_from(PLAIN_NAMES), inner, min_size=1, max_size=3),
                           max_leaves=8)


@hypothesis_settings(max_examples=25, deadline=None,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(values=st.dictionaries(st.sampled_from(PLAIN_NAMES), plain_value, min_size=1, max_size=4), data=st.data())
def test_whatever_a_new_schema_marks_is_sealed_in_every_stored_row(cdb, session, values, data):
    """Any subtree of a stored document that a definition's new schema marks, at any depth, is sealed at once."""
    example = "E{0}e".format(next(_examples))
    numbers = iter(range(10 ** 6))  # each tagged leaf a value of its own, of this example only
    values = json.loads(re.sub(r"HiD\d+x", lambda _: "{0}{1}x".format(example, next(numbers)), json.dumps(values)))
    cdb.app.put_json(DEFINITION.format(cdb.rid), {"content": {}}, headers=auth("admin"), status=200)
    cdb.put("admin", values)
    path, marked = [], values
    while isinstance(marked, dict) and (not path or data.draw(st.booleans())):
        key = data.draw(st.sampled_from(sorted(marked)))
        path.append(key)
        marked = marked[key]
    hidden = [leaf for leaf in _leaves(marked) if isinstance(leaf, str) and leaf.startswith(example)]
    cdb.app.put_json(DEFINITION.format(cdb.rid), {"content": {"schema": _schema_marking(path)}},
                     headers=auth("admin"), status=200)
    for row in raw_rows(session):
        for leaf in hidden:
            assert '"{0}"'.format(leaf) not in row, (path, leaf)
    assert cdb.get("admin").json == values
