"""Environments pin the version of each data source they use (seed 004's plans, issue 13), over HTTP.

An environment is pinned to the latest version of a data source when it starts using it, validates
its values against that version whatever is written later, and moves only by an explicit request:
a dry run lists the stored documents the new version rejects; the move is refused while any is, or
forced; a move is one revision and one change-feed entry. Moving needs ``nailgun:change_secrets``,
and no report quotes a secret. Migration cdb004 pins every environment of a cdb003 database.
"""
import base64
import copy
import datetime
import json

import pytest
import sqlalchemy as sa
import webtest
from alembic import command
from sqlalchemy.dialects import postgresql

from nailgun_host.app import build_wsgi
from nailgun_host.db import db as host_db, migration
from nailgun_host.settings import settings
from nailgun_platform.secrets.masking import MASK
from nailgun_ext_configdb.extension import ConfigDBExtension
from tests.auth import write_users_file
from tests.configdb.conftest import API

DEFS = API + "/resource_definitions"

#: version 1: ports are integers; ``pin`` is secret by the schema alone (its name says nothing)
V1 = {"schema": {"type": "object", "properties": {
    "port": {"type": "integer"}, "pin": {"type": "string", "x-secret": True}}}}
#: version 2, stricter: privileged ports only, a port required, a pin of digits only
V2 = {"schema": {"type": "object", "required": ["port"], "properties": {
    "port": {"type": "integer", "maximum": 1024}, "pin": {"type": "string", "x-secret": True, "pattern": "^[0-9]+$"}}}}
VALID_FOR_BOTH = {"port": 80, "pin": "1234"}
V1_ONLY = {"port": 8080}
INVALID_FOR_BOTH = {"port": "eighty"}
SECRET = "S3cr3t-pin-value"


def def_url(definition_id):
    return "{0}/{1}".format(DEFS, definition_id)


def env_url(env_id, suffix=""):
    return "{0}/environments/{1}{2}".format(API, env_id, suffix)


def pins_of(app, env_id, **kwargs):
    """``{resource: version}`` of the environment's pins."""
    return {p["resource"]: p["version"] for p in app.get(env_url(env_id, "/pins"), **kwargs).json}


def move(app, env_id, resource, body, status=200, query="", **kwargs):
    url = env_url(env_id, "/pins/" + str(resource)) + ("?" + query if query else "")
    return app.put_json(url, body, status=status, **kwargs).json


def feed(app, env_id, since, **kwargs):
    return app.get(env_url(env_id, "/changes?since={0}".format(since)), **kwargs).json["changes"]


def revision(app, env_id, **kwargs):
    return app.get(env_url(env_id), **kwargs).json["revision"]


def write(cdb, env_id, ref, data, levels="", kind="values", status=204, **kwargs):
    """PUT a document as a client does, following a 308 to the id URL it names."""
    resp = cdb.app.put_json(cdb.url(env_id, ref, levels, kind), data, expect_errors=True, **kwargs)
    if resp.status_int == 308:
        resp = cdb.app.put_json(resp.headers["Location"], data, expect_errors=True, **kwargs)
    assert resp.status_int == status, (ref, levels, resp.status, resp.text)
    return resp


@pytest.fixture
def astute(cdb):
    """Component ``fuel`` with ``astute`` v1 (``V1``) and ``globals``; environment 1 over nodes, pinned to
    v1; then ``astute`` v2 (``V2``). ``{"v1", "v2", "globals", "component"}``: their bodies."""
    component = cdb.component("fuel", [{"name": "astute", "content": V1}, "globals"])
    v1, globals_ = component["resource_definitions"]
    env = cdb.environment(["fuel"])
    assert env["id"] == 1
    v2 = cdb.app.post_json(DEFS, {"name": "astute", "component_id": component["id"], "content": V2}, status=201).json
    assert v2["version"] == 2
    return {"v1": v1, "v2": v2, "globals": globals_, "component": component}


# --- where pins come from ----------------------------------------------------------------------------

def test_an_environment_is_pinned_to_the_latest_version_of_each_data_source(cdb):
    component = cdb.component("fuel", [{"name": "astute", "content": {"n": 1}}, "globals"])
    v2 = cdb.app.post_json(DEFS, {"name": "astute", "component_id": component["id"], "content": {"n": 2}},
                           status=201).json
    env = cdb.environment(["fuel"])
    globals_id = component["resource_definitions"][1]["id"]
    expected = [{"resource": "astute", "id": v2["id"], "version": 2, "latest_version": 2},
                {"resource": "globals", "id": globals_id, "version": 1, "latest_version": 1}]
    assert env["pins"] == expected
    assert cdb.app.get(env_url(env["id"])).json["pins"] == expected
    assert cdb.app.get(env_url(env["id"], "/pins")).json == expected
    assert cdb.app.get(env_url(env["id"], "/pins/astute")).json == expected[0]
    assert cdb.app.get(env_url(env["id"], "/pins/{0}".format(globals_id))).json == expected[1]
    assert [e["pins"] for e in cdb.app.get(API + "/environments").json] == [expected]
    cdb.app.get(env_url(env["id"], "/pins/nothing"), status=404)
    cdb.app.get(env_url(99, "/pins"), status=404)


def test_a_newer_version_changes_no_pin(cdb, astute):
    assert cdb.app.get(env_url(1, "/pins/astute")).json == {
        "resource": "astute", "id": astute["v1"]["id"], "version": 1, "latest_version": 2}
    # an environment created now starts on the newest
    later = cdb.environment(["fuel"])
    assert pins_of(cdb.app, later["id"]) == {"astute": 2, "globals": 1}
    assert pins_of(cdb.app, 1) == {"astute": 1, "globals": 1}


def test_a_component_added_later_is_pinned_at_its_latest(cdb):
    cdb.component("base", ["globals"])
    extra = cdb.component("extra", [{"name": "plugins", "content": {"n": 1}}])
    env = cdb.environment(["base"])
    cdb.app.post_json(DEFS, {"name": "plugins", "component_id": extra["id"], "content": {"n": 2}}, status=201)
    assert pins_of(cdb.app, env["id"]) == {"globals": 1}
    cdb.app.put_json(env_url(env["id"]), {"components": ["base", "extra"]})
    assert pins_of(cdb.app, env["id"]) == {"globals": 1, "plugins": 2}
    cdb.put(env["id"], "plugins", {"a": 1}, status=308)
    # dropped with the component, pinned anew (at the latest) when it comes back
    cdb.app.put_json(env_url(env["id"]), {"components": ["base"]})
    assert pins_of(cdb.app, env["id"]) == {"globals": 1}
    cdb.app.post_json(DEFS, {"name": "plugins", "component_id": extra["id"], "content": {"n": 3}}, status=201)
    cdb.app.put_json(env_url(env["id"]), {"components": ["extra", "base"]})
    assert pins_of(cdb.app, env["id"]) == {"globals": 1, "plugins": 3}


@pytest.mark.parametrize("route", ["POST definition", "PUT component", "POST component then PUT env"])
def test_a_new_data_source_in_a_used_component_is_pinned(cdb, route):
    component = cdb.component("fuel", ["globals"])
    env = cdb.environment(["fuel"])
    other = cdb.environment(["fuel"])
    if route == "POST definition":
        made = cdb.app.post_json(DEFS, {"name": "astute", "component_id": component["id"], "content": V1},
                                 status=201).json
    elif route == "PUT component":
        body = cdb.app.put_json(API + "/components/{0}".format(component["id"]),
                                {"resource_definitions": [{"name": "astute", "content": V1}]}).json
        made = body["resource_definitions"][1]
    else:
        made = cdb.component("more", [{"name": "astute", "content": V1}])["resource_definitions"][0]
        for env_id in (env["id"], other["id"]):
            cdb.app.put_json(env_url(env_id), {"components": ["fuel", "more"]})
    for env_id in (env["id"], other["id"]):
        assert cdb.app.get(env_url(env_id, "/pins/astute")).json == {
            "resource": "astute", "id": made["id"], "version": 1, "latest_version": 1}
        write(cdb, env_id, "astute", VALID_FOR_BOTH)
        write(cdb, env_id, "astute", INVALID_FOR_BOTH, status=400)


# --- validation against the pinned version ------------------------------------------------------------

def test_values_validate_against_the_pinned_version_not_the_latest(cdb, astute):
    write(cdb, 1, "astute", V1_ONLY)  # valid for v1, which env 1 uses; v2 would reject it
    write(cdb, 1, astute["v2"]["id"], V1_ONLY, levels="nodes/1/")  # any version's id names the data source
    write(cdb, 1, astute["v1"]["id"], INVALID_FOR_BOTH, status=400)
    assert cdb.get(1, "astute").json == V1_ONLY
    later = cdb.environment(["fuel"])
    resp = write(cdb, later["id"], "astute", V1_ONLY, status=400)
    assert "1024" in resp.json["message"]
    write(cdb, later["id"], "astute", VALID_FOR_BOTH)


# --- moving: dry run, refusal, force, success ---------------------------------------------------------

@pytest.fixture
def stored(cdb, astute):
    """Documents of environment 1 under v1: two that v2 rejects (env level, node 1), one it accepts
    (node 2), an override v2's schema would reject (overrides follow no schema) and other data."""
    write(cdb, 1, "astute", V1_ONLY)
    write(cdb, 1, "astute", {"port": 80, "pin": SECRET}, levels="nodes/1/")
    write(cdb, 1, "astute", VALID_FOR_BOTH, levels="nodes/2/")
    write(cdb, 1, "astute", {"port": 65000}, levels="nodes/2/", kind="overrides")
    write(cdb, 1, "globals", {"g": 1})
    return astute


def _state(cdb, env_id=1):
    """Everything a refused or dry-run move must leave as it was."""
    return {"revision": revision(cdb.app, env_id), "pins": cdb.app.get(env_url(env_id, "/pins")).json,
            "feed": feed(cdb.app, env_id, 0),
            "documents": {(levels, kind): cdb.get(env_id, "astute", levels=levels, kind=kind).json
                          for levels in ("", "nodes/1/", "nodes/2/") for kind in ("values", "overrides")},
            "history": cdb.app.get(cdb.url(env_id, "astute", "nodes/1/") + "/history", expect_errors=True).text}


REJECTED_LEVELS = ["/", "/nodes/1/"]


@pytest.mark.parametrize("how", ["body", "query", "body and force", "query and force"])
def test_a_dry_run_lists_exactly_the_rejected_documents_and_changes_nothing(cdb, stored, how):
    before = _state(cdb)
    body, query = {"version": 2}, ""
    if how.startswith("body"):
        body["dry_run"] = True
    else:
        query = "dry_run=true"
    if how.endswith("force"):
        body["force"] = True
    report = move(cdb.app, 1, "astute", body, query=query)
    assert (report["resource"], report["from"], report["to"], report["dry_run"], report["moved"]) == (
        "astute", 1, 2, True, False)
    assert [r["level"] for r in report["rejected"]] == REJECTED_LEVELS
    assert all(r["kind"] == "values" and r["message"] for r in report["rejected"])
    assert "1024" in report["rejected"][0]["message"]
    assert SECRET not in json.dumps(report)
    assert _state(cdb) == before
    # by "latest" and by a version's id, the same report
    assert move(cdb.app, 1, stored["v2"]["id"], dict(body, version="latest"), query=query)["rejected"] == \
        report["rejected"]


def test_a_dry_run_with_nothing_rejected_reports_nothing_and_changes_nothing(cdb, astute):
    write(cdb, 1, "astute", VALID_FOR_BOTH)
    before = _state(cdb)
    report = move(cdb.app, 1, "astute", {"version": 2, "dry_run": True})
    assert report["rejected"] == [] and report["moved"] is False
    assert _state(cdb) == before


def test_a_move_with_rejected_documents_is_409_naming_them_and_changes_nothing(cdb, stored):
    before = _state(cdb)
    resp = cdb.app.put_json(env_url(1, "/pins/astute"), {"version": 2}, status=409).json
    assert "2 stored document" in resp["message"] and "force" in resp["message"]
    assert [e["level"] for e in resp["errors"]] == REJECTED_LEVELS
    assert [(e["resource"], e["kind"], e["level"]) for e in resp["errors"]] == [
        ("astute", "values", "/"), ("astute", "values", "/nodes/1/")]
    assert SECRET not in json.dumps(resp)
    cdb.app.put_json(env_url(1, "/pins/astute"), {"version": "latest", "force": False}, status=409)
    assert _state(cdb) == before
    write(cdb, 1, "astute", V1_ONLY, levels="nodes/3/")  # still on v1


def test_a_forced_move_moves_as_one_revision(cdb, stored):
    before = revision(cdb.app, 1)
    report = move(cdb.app, 1, "astute", {"version": 2, "force": True})
    assert report["moved"] is True and report["revision"] == before + 1
    assert [r["level"] for r in report["rejected"]] == REJECTED_LEVELS
    assert SECRET not in json.dumps(report)
    assert revision(cdb.app, 1) == before + 1
    assert pins_of(cdb.app, 1) == {"astute": 2, "globals": 1}
    entries = feed(cdb.app, 1, before)
    assert [(e["change"], e["revision"], e["resource_name"], e["version"]) for e in entries] == [
        ("pin", before + 1, "astute", 2)]
    # the stored values are kept as they were; writing them again is checked against v2
    assert cdb.get(1, "astute").json == V1_ONLY
    write(cdb, 1, "astute", V1_ONLY, status=400)


def test_after_a_fix_the_move_succeeds_as_exactly_one_revision_and_one_feed_entry(cdb, stored):
    write(cdb, 1, "astute", VALID_FOR_BOTH)
    write(cdb, 1, "astute", {"port": 443, "pin": "0000"}, levels="nodes/1/")
    assert move(cdb.app, 1, "astute", {"version": 2, "dry_run": True})["rejected"] == []
    before = revision(cdb.app, 1)
    report = move(cdb.app, 1, "astute", {"version": 2})
    assert report == {"resource": "astute", "from": 1, "to": 2, "rejected": [], "moved": True, "dry_run": False,
                      "revision": before + 1}
    assert revision(cdb.app, 1) == before + 1
    entries = feed(cdb.app, 1, before)
    assert len(entries) == 1
    assert (entries[0]["change"], entries[0]["revision"], entries[0]["resource_name"], entries[0]["version"],
            entries[0]["kind"]) == ("pin", before + 1, "astute", 2, "values")
    assert cdb.app.get(env_url(1, "/pins/astute")).json == {
        "resource": "astute", "id": stored["v2"]["id"], "version": 2, "latest_version": 2}
    # values now follow v2, at every level and on every write path
    for levels in ("", "nodes/1/", "nodes/4/"):
        resp = write(cdb, 1, "astute", V1_ONLY, levels=levels, status=400)
        assert "1024" in resp.json["message"]
    cdb.app.patch_json(cdb.url(1, stored["v1"]["id"]) + "/keys/set", [["port", 8080]], status=400)
    write(cdb, 1, "astute", {"port": 22})
    assert cdb.get(1, "astute").json == {"port": 22}
    # moving to the pinned version again changes nothing (before + 2: the write of port 22)
    assert move(cdb.app, 1, "astute", {"version": 2})["to"] == 2
    assert revision(cdb.app, 1) == before + 2
    assert [e["change"] for e in feed(cdb.app, 1, before + 1)] == ["write"]


def test_moving_back_to_version_1(cdb, stored):
    move(cdb.app, 1, "astute", {"version": 2, "force": True})
    write(cdb, 1, "astute", V1_ONLY, status=400)
    before = revision(cdb.app, 1)
    report = move(cdb.app, 1, "astute", {"version": 1})
    assert (report["from"], report["to"], report["moved"], report["rejected"]) == (2, 1, True, [])
    assert revision(cdb.app, 1) == before + 1
    assert [(e["change"], e["version"]) for e in feed(cdb.app, 1, before)] == [("pin", 1)]
    assert pins_of(cdb.app, 1)["astute"] == 1
    write(cdb, 1, "astute", V1_ONLY, levels="nodes/5/")
    write(cdb, 1, "astute", INVALID_FOR_BOTH, status=400)


@pytest.mark.parametrize("body, status", [
    ({"version": 3}, 404), ({"version": 3, "dry_run": True}, 404), ({"version": 3, "force": True}, 404),
    ({}, 400), ({"version": 0}, 400), ({"version": "2"}, 400), ({"version": "newest"}, 400),
    ({"version": 2, "force": "yes"}, 400), ({"version": 2, "other": 1}, 400), ([2], 400)])
def test_bad_moves(cdb, stored, body, status):
    before = _state(cdb)
    resp = cdb.app.put_json(env_url(1, "/pins/astute"), body, status=status)
    assert resp.json["message"]
    assert _state(cdb) == before


def test_moves_of_unknown_things_are_404(cdb, stored):
    before = _state(cdb)
    cdb.app.put_json(env_url(1, "/pins/nothing"), {"version": 1}, status=404)
    cdb.app.put_json(env_url(99, "/pins/astute"), {"version": 1}, status=404)
    other = cdb.component("other", ["elsewhere"])
    cdb.app.put_json(env_url(1, "/pins/elsewhere"), {"version": 1}, status=404)
    cdb.app.put_json(env_url(1, "/pins/{0}".format(other["resource_definitions"][0]["id"])), {"version": 1},
                     status=404)
    # a deleted version is no target
    v3 = cdb.app.post_json(DEFS, {"name": "astute", "component_id": stored["component"]["id"], "content": V1},
                           status=201).json
    cdb.app.delete(def_url(v3["id"]), status=204)
    resp = cdb.app.put_json(env_url(1, "/pins/astute"), {"version": 3, "force": True}, status=404)
    assert "3" in resp.json["message"]
    assert _state(cdb) == before


# --- deleting pinned versions -----------------------------------------------------------------------

def test_a_pinned_version_cannot_be_deleted_while_others_live(cdb, stored):
    resp = cdb.app.delete(def_url(stored["v1"]["id"]), status=409)
    assert "1" in resp.json["message"] and "environment" in resp.json["message"]
    later = cdb.environment(["fuel"])  # on v2
    resp = cdb.app.delete(def_url(stored["v2"]["id"]), status=409)
    assert str(later["id"]) in resp.json["message"]
    assert [d["version"] for d in cdb.app.get(DEFS + "?name=astute").json] == [1, 2]
    assert cdb.get(1, "astute").json == V1_ONLY
    # once nobody uses it, it goes
    move(cdb.app, later["id"], "astute", {"version": 1})
    cdb.app.delete(def_url(stored["v2"]["id"]), status=204)
    assert pins_of(cdb.app, 1)["astute"] == 1
    assert cdb.get(1, "astute").json == V1_ONLY


def test_deleting_the_first_version_keeps_the_data_source_usable(cdb, astute):
    """Documents and pins refer to the data source by its first version's id: once that version is gone,
    the data source is still read and written by name and by the id of a live version."""
    later = cdb.environment(["fuel"])  # on v2
    move(cdb.app, 1, "astute", {"version": 2})
    write(cdb, later["id"], "astute", VALID_FOR_BOTH)
    cdb.app.delete(def_url(astute["v1"]["id"]), status=204)
    assert pins_of(cdb.app, later["id"]) == {"astute": 2, "globals": 1}
    assert cdb.get(later["id"], "astute").json == VALID_FOR_BOTH
    assert cdb.get(later["id"], astute["v2"]["id"]).json == VALID_FOR_BOTH
    write(cdb, later["id"], "astute", {"port": 21})
    write(cdb, later["id"], astute["v2"]["id"], {"port": 22}, levels="nodes/1/")
    assert cdb.get(later["id"], "astute", levels="nodes/1/", query="effective").json == {"port": 22}
    assert len(cdb.app.get(cdb.url(later["id"], astute["v2"]["id"]) + "/history").json) == 2
    move(cdb.app, later["id"], "astute", {"version": 2, "dry_run": True})


# --- who may move, and secrets -----------------------------------------------------------------------

USERS = {"reader": ("reader-pw", ["reader"]), "member": ("member-pw", ["member"]),
         "admin": ("admin-pw", ["admin"])}


def auth(user):
    token = base64.b64encode("{0}:{1}".format(user, USERS[user][0]).encode()).decode()
    return {"Authorization": "Basic " + token}


@pytest.fixture
def secured(migrated_db, tmp_path):
    """The app with local authentication: reader, member, admin; ``astute`` v1 and v2 as ``astute``
    sets them up, environment 1 on v1 with a value of ``pin`` (a secret) at node 1."""
    saved = copy.deepcopy(dict(settings))
    users_file = write_users_file(str(tmp_path / "users.yaml"), USERS)
    settings.reload(overrides={"AUTH": {"method": "local", "users_file": users_file}})
    app = webtest.TestApp(build_wsgi())
    admin = auth("admin")
    component = app.post_json(API + "/components", {"name": "fuel", "resource_definitions": [
        {"name": "astute", "content": V1}]}, headers=admin, status=201).json
    app.post_json(API + "/environments", {"components": ["fuel"], "hierarchy_levels": ["nodes"]},
                  headers=admin, status=201)
    app.post_json(DEFS, {"name": "astute", "component_id": component["id"], "content": V2}, headers=admin,
                  status=201)
    rid = component["resource_definitions"][0]["id"]
    app.put_json("{0}/environments/1/nodes/1/resources/{1}/values".format(API, rid), {"port": 80, "pin": SECRET},
                 headers=admin, status=204)
    yield app
    settings.clear()
    settings.update(saved)


@pytest.mark.parametrize("user", ["reader", "member"])
@pytest.mark.parametrize("body", [{"version": 2}, {"version": 2, "force": True}, {"version": 2, "dry_run": True}])
def test_only_who_may_change_secrets_moves_a_pin(secured, user, body):
    before = (pins_of(secured, 1, headers=auth("admin")), revision(secured, 1, headers=auth("admin")))
    assert pins_of(secured, 1, headers=auth(user)) == {"astute": 1}  # reading is allowed
    resp = secured.put_json(env_url(1, "/pins/astute"), body, headers=auth(user), status=403).json
    # a reader may not write at all; a member may write, but not this
    assert ("nailgun:write" if user == "reader" else "nailgun:change_secrets") in resp["message"]
    assert SECRET not in json.dumps(resp)
    assert (pins_of(secured, 1, headers=auth("admin")), revision(secured, 1, headers=auth("admin"))) == before
    secured.put_json(env_url(1, "/pins/astute"), body, status=401)
    assert (pins_of(secured, 1, headers=auth("admin")), revision(secured, 1, headers=auth("admin"))) == before
    # the admin may (v2 rejects the stored pin: a plain move is refused)
    plain = not body.get("force") and not body.get("dry_run")
    answer = secured.put_json(env_url(1, "/pins/astute"), body, headers=auth("admin"),
                              status=409 if plain else 200).json
    assert SECRET not in json.dumps(answer)
    if not plain:
        assert answer["moved"] is bool(body.get("force"))


def test_a_move_is_authored_by_the_identity(secured):
    before = revision(secured, 1, headers=auth("admin"))
    move(secured, 1, "astute", {"version": 2, "force": True}, headers=auth("admin"))
    entries = feed(secured, 1, before, headers=auth("admin"))
    assert [(e["change"], e["author"]) for e in entries] == [("pin", "admin")]


@pytest.mark.parametrize("marked_in", ["both", "v2 only", "by its name"])
def test_no_report_of_rejected_documents_quotes_a_secret(cdb, marked_in):
    """v2's pattern rejects a secret value: the dry run, the refusal and the forced move say which
    document, never with what; so does the 400 of a write once moved."""
    key = "password" if marked_in == "by its name" else "pin"
    secret_v1 = {"type": "string"} if marked_in != "both" else {"type": "string", "x-secret": True}
    secret_v2 = {"type": "string", "pattern": "^[0-9]+$"}
    if marked_in != "by its name":
        secret_v2["x-secret"] = True
    component = cdb.component("fuel", [{"name": "astute", "content": {"schema": {
        "type": "object", "properties": {key: secret_v1}}}}])
    env = cdb.environment(["fuel"])
    write(cdb, env["id"], "astute", {key: SECRET})
    write(cdb, env["id"], "astute", {key: SECRET + "-node", "other": 1}, levels="nodes/1/")
    cdb.app.post_json(DEFS, {"name": "astute", "component_id": component["id"], "content": {"schema": {
        "type": "object", "properties": {key: secret_v2}}}}, status=201)
    answers = [move(cdb.app, env["id"], "astute", {"version": 2, "dry_run": True}),
               cdb.app.put_json(env_url(env["id"], "/pins/astute"), {"version": 2}, status=409).json,
               move(cdb.app, env["id"], "astute", {"version": 2, "force": True})]
    assert [r["level"] for r in answers[0]["rejected"]] == ["/", "/nodes/1/"]
    answers.append(write(cdb, env["id"], "astute", {key: SECRET + "-new"}, status=400).json)
    for answer in answers:
        text = json.dumps(answer)
        assert SECRET not in text, text


def test_a_member_cannot_make_a_new_version_by_any_route(secured):
    """Creating a version of an existing data source needs ``nailgun:change_secrets`` (POST of its name,
    new content through the definition or through its component)."""
    member = auth("member")
    listed = secured.get(DEFS + "?name=astute", headers=member).json
    component_id = listed[0]["component_id"]
    new = {"schema": {"type": "object", "properties": {"pin": {"x-secret": True, "maxLength": 2}}}}
    attempts = [
        ("POST", DEFS, {"name": "astute", "component_id": component_id, "content": new}),
        ("PUT", def_url(listed[1]["id"]), {"content": new}),
        ("PUT", API + "/components/{0}".format(component_id), {"resource_definitions": [{"id": listed[0]["id"],
                                                                                       "content": new}]}),
        ("PUT", API + "/components/{0}".format(component_id), {"resource_definitions": [{"name": "astute",
                                                                                       "content": new}]}),
    ]
    for method, url, body in attempts:
        resp = secured.request(url, method=method, body=json.dumps(body).encode(), headers=member,
                               content_type="application/json", expect_errors=True)
        assert resp.status_int == 403, (method, url, body, resp.status, resp.text)
        assert "nailgun:change_secrets" in resp.json["message"]
    assert secured.get(DEFS + "?name=astute", headers=member).json == listed


def test_deleting_the_version_that_marks_a_secret_does_not_show_it_to_readers(secured):
    """A leaf is secret while any live version marks it: a member (no ``nailgun:change_secrets``) must not
    make a stored secret readable by deleting the marking version."""
    admin, member, reader = auth("admin"), auth("member"), auth("reader")
    listed = secured.get(DEFS + "?name=astute", headers=admin).json
    unmarked = {"schema": {"type": "object", "properties": {"port": {"type": "integer"}}}}
    v3 = secured.post_json(DEFS, {"name": "astute", "component_id": listed[0]["component_id"],
                                  "content": unmarked}, headers=admin, status=201).json
    move(secured, 1, "astute", {"version": 3, "force": True}, headers=admin)
    url = "{0}/environments/1/nodes/1/resources/{1}/values".format(API, v3["id"])
    assert secured.get(url, headers=reader).json == {"port": 80, "pin": MASK}
    for version in listed:  # v1 and v2 both mark pin; nobody is pinned to them
        resp = secured.delete(def_url(version["id"]), headers=member, expect_errors=True)
        assert resp.status_int in (204, 403), resp.text
    shown = json.dumps(secured.get(url, headers=reader).json)
    assert SECRET not in shown, shown
    assert SECRET not in secured.get(url + "/history", headers=reader).text


# --- a move racing a write (PostgreSQL) --------------------------------------------------------------

ROUNDS = 15


def test_a_move_racing_a_write_never_leaves_a_rejected_value_behind_a_pin(db_url, migrated_db, request):
    """A move to v2 and a write valid for v1 only, at once: either the write lands first and the move is
    refused (409), or the move lands first and the write is refused (400); never both accepted."""
    if not db_url.startswith("postgresql"):
        pytest.skip("needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    import requests
    from tests.races import together

    base = request.getfixturevalue("live_server").url + "/api/v1/config"
    component = requests.post(base + "/components", json={"name": "fuel", "resource_definitions": [
        {"name": "astute", "content": V1}]})
    assert component.status_code == 201, component.text
    rid = component.json()["resource_definitions"][0]["id"]
    assert requests.post(base + "/environments", json={"components": ["fuel"], "hierarchy_levels": ["nodes"]}).ok
    assert requests.post(base + "/resource_definitions", json={"name": "astute", "component_id": component.json()[
        "id"], "content": V2}).status_code == 201
    pin = base + "/environments/1/pins/astute"
    for number in range(ROUNDS):
        assert requests.put(pin, json={"version": 1}).status_code == 200
        url = "{0}/environments/1/nodes/{1}/resources/{2}/values".format(base, number + 1, rid)
        moved, written = together(lambda client: client.put(pin, json={"version": 2}),
                                  lambda client: client.put(url, json=V1_ONLY))
        outcome = (moved.status_code, written.status_code)
        assert outcome in {(200, 400), (409, 204)}, (outcome, moved.text, written.text)
        if written.status_code == 204:  # undo it for the next round
            assert requests.put(url, json=VALID_FOR_BOTH).status_code == 204
        rejected = requests.put(pin, json={"version": 2, "dry_run": True}).json()["rejected"]
        pinned = requests.get(pin).json()["version"]
        assert pinned == 1 or rejected == [], (pinned, rejected)


# --- migration cdb004 --------------------------------------------------------------------------------

JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")


def _tables():
    components = sa.table("configdb_components", sa.column("id"), sa.column("name"))
    definitions = sa.table("configdb_resource_definitions", sa.column("id"), sa.column("name"),
                           sa.column("component_id"), sa.column("content", JSON))
    environments = sa.table("configdb_environments", sa.column("id"), sa.column("hierarchy_levels", JSON),
                            sa.column("revision"), sa.column("created_at"), sa.column("linked"))
    links = sa.table("configdb_environment_components", sa.column("environment_id"), sa.column("component_id"),
                     sa.column("position"))
    documents = sa.table("configdb_documents", sa.column("id"), sa.column("environment_id"),
                         sa.column("resource_definition_id"), sa.column("level_path"), sa.column("kind"),
                         sa.column("version"), sa.column("revision"), sa.column("data", JSON))
    versions = sa.table("configdb_document_versions", sa.column("document_id"), sa.column("version"),
                        sa.column("revision"), sa.column("data", JSON), sa.column("author"),
                        sa.column("changed_keys", JSON), sa.column("created_at"))
    return components, definitions, environments, links, documents, versions


def _fill_cdb003(connection):
    """A cdb003 database: components fuel (astute, globals), plugins (plugin_a), spare (unused); env 1
    uses fuel and plugins, env 2 plugins, env 3 nothing; documents of astute (env, node 1) and plugin_a.
    ``{name: definition id}``."""
    components, definitions, environments, links, documents, versions = _tables()
    now = datetime.datetime(2024, 1, 2, 3, 4, 5)
    ids = {}
    for name in ("fuel", "plugins", "spare"):
        ids[name] = connection.execute(components.insert().values(name=name).returning(components.c.id)).scalar()
    schema = {"schema": {"type": "object", "properties": {"port": {"type": "integer"}}}}
    for name, component, content in (("astute", "fuel", schema), ("globals", "fuel", {}),
                                     ("plugin_a", "plugins", {"p": 1}), ("unused", "spare", {})):
        ids[name] = connection.execute(definitions.insert().values(
            name=name, component_id=ids[component], content=content).returning(definitions.c.id)).scalar()
    for env_id, revision_, used in ((1, 3, ["fuel", "plugins"]), (2, 1, ["plugins"]), (3, 0, [])):
        connection.execute(environments.insert().values(id=env_id, hierarchy_levels=["nodes"], revision=revision_,
                                                        created_at=now, linked=False))
        for position, name in enumerate(used):
            connection.execute(links.insert().values(environment_id=env_id, component_id=ids[name],
                                                     position=position))
    for env_id, name, level_path, kind, revision_, data in (
            (1, "astute", "", "values", 1, {"port": 1}), (1, "astute", "nodes/1", "values", 2, {"port": 2}),
            (1, "astute", "nodes/1", "overrides", 3, {"port": 3}), (2, "plugin_a", "", "values", 1, {"x": 1})):
        document_id = connection.execute(documents.insert().values(
            environment_id=env_id, resource_definition_id=ids[name], level_path=level_path, kind=kind, version=1,
            revision=revision_, data=data).returning(documents.c.id)).scalar()
        connection.execute(versions.insert().values(document_id=document_id, version=1, revision=revision_,
                                                    data=data, author="octane", changed_keys=[], created_at=now))
    return ids


def test_cdb004_pins_every_environment_of_a_cdb003_database_and_keeps_its_documents(migrated_db, db_url, app):
    engine = migrated_db[0]
    extension = ConfigDBExtension()
    config = migration.config_for_extension(extension, db_url)
    host_db.remove()
    try:
        migration.downgrade_extension(extension, db_url, "cdb003")
        with engine.begin() as connection:
            ids = _fill_cdb003(connection)
        command.upgrade(config, "cdb004")
        with engine.connect() as connection:
            pins = set(connection.execute(sa.text(
                "SELECT environment_id, lineage_id, definition_id FROM configdb_environment_pins")).all())
            rows = connection.execute(sa.text(
                "SELECT id, lineage_id, version, deleted_at FROM configdb_resource_definitions")).all()
        assert {(row.id, row.lineage_id, row.version, row.deleted_at) for row in rows} == {
            (ids[name], ids[name], 1, None) for name in ("astute", "globals", "plugin_a", "unused")}
        assert pins == {(1, ids["astute"], ids["astute"]), (1, ids["globals"], ids["globals"]),
                        (1, ids["plugin_a"], ids["plugin_a"]), (2, ids["plugin_a"], ids["plugin_a"])}
    finally:
        command.upgrade(config, "head")
        host_db.remove()
    expected_pin = {"resource": "astute", "id": ids["astute"], "version": 1, "latest_version": 1}
    assert app.get(env_url(1, "/pins/astute")).json == expected_pin
    assert pins_of(app, 1) == {"astute": 1, "globals": 1, "plugin_a": 1}
    assert pins_of(app, 2) == {"plugin_a": 1}
    assert pins_of(app, 3) == {}
    assert app.get(env_url(1)).json["revision"] == 3
    # documents intact, read by name and by id
    cdb_url = "{0}/environments/{1}/{2}resources/{3}/{4}".format
    assert app.get(cdb_url(API, 1, "", "astute", "values")).json == {"port": 1}
    assert app.get(cdb_url(API, 1, "nodes/1/", "astute", "values")).json == {"port": 2}
    assert app.get(cdb_url(API, 1, "nodes/1/", ids["astute"], "overrides")).json == {"port": 3}
    assert app.get(cdb_url(API, 1, "nodes/1/", "astute", "values") + "?effective").json == {"port": 3}
    assert app.get(cdb_url(API, 2, "", "plugin_a", "values")).json == {"x": 1}
    history = app.get(cdb_url(API, 1, "nodes/1/", ids["astute"], "values") + "/history").json
    assert [(h["version"], h["author"]) for h in history] == [(1, "octane")]
    # the definitions are version 1 of their data sources, and numbering goes on from there
    listed = app.get(DEFS + "?name=astute").json
    assert [(d["id"], d["version"], d["latest"]) for d in listed] == [(ids["astute"], 1, True)]
    assert app.get(DEFS + "?name=astute&version=1").json == listed
    assert len(app.get(DEFS + "?only_latest=true").json) == 4
    fuel = app.get(API + "/components/{0}".format(ids["fuel"])).json
    assert [(d["name"], d["version"]) for d in fuel["resource_definitions"]] == [("astute", 1), ("globals", 1)]
    # values validate against the pinned version
    app.put_json(cdb_url(API, 1, "", ids["astute"], "values"), {"port": "x"}, status=400)
    app.put_json(cdb_url(API, 1, "", ids["astute"], "values"), {"port": 4}, status=204)
    v2 = app.post_json(DEFS, {"name": "astute", "component_id": ids["fuel"], "content": {"n": 2}}, status=201).json
    assert v2["version"] == 2 and v2["id"] not in ids.values()
    assert pins_of(app, 1)["astute"] == 1
    assert move(app, 1, "astute", {"version": 2})["moved"] is True
    assert app.post_json(DEFS, {"name": "fresh", "component_id": ids["fuel"]}, status=201).json["version"] == 1
    assert pins_of(app, 1) == {"astute": 2, "globals": 1, "plugin_a": 1, "fresh": 1}
    # a name is still unique in its component
    app.put_json(def_url(ids["globals"]), {"name": "astute"}, status=409)


# --- moving a data source to another component ----------------------------------------------------------

def test_a_data_source_moved_to_another_component_follows_the_components_environments(cdb, astute):
    other = cdb.component("other", ["facts"])
    second = cdb.environment(["other"])
    # moved by its older version's id: environment 2 starts using it at its latest, environment 1 stops
    cdb.app.put_json(def_url(astute["v1"]["id"]), {"component_id": other["id"]})
    assert pins_of(cdb.app, second["id"]) == {"astute": 2, "facts": 1}
    assert pins_of(cdb.app, 1) == {"globals": 1}
    # nothing pins version 1 any more: it can go
    cdb.app.delete(def_url(astute["v1"]["id"]), status=204)


def test_any_live_version_id_writes_without_a_redirect_and_a_name_redirects_to_the_pinned_one(cdb, astute):
    resp = cdb.app.put_json(cdb.url(1, astute["v2"]["id"]), {"deployment_id": "any"}, status=204)
    assert "Location" not in resp.headers
    redirect = cdb.app.put_json(cdb.url(1, "astute"), {"deployment_id": "any"}, status=308)
    assert redirect.headers["Location"].endswith("/resources/{0}/values".format(astute["v1"]["id"]))
    cdb.app.get(def_url(astute["v1"]["id"]), status=200)  # the pinned version: live
