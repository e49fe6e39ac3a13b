"""The environment model in configuration sessions (issue 12, seed 000): PATCH /clusters/<id>/model with
``X-Configuration-Session`` stages, GET with it shows the staged model, deploy applies it with every check."""
import concurrent.futures
import json

import pytest
import requests
import sqlalchemy as sa

from nailgun_host.db.models import Cluster
from nailgun_host.settings import settings
from nailgun_platform.secrets.masking import MASK
from tests.host.secret_clusters import database_text
from tests.upgrade.conftest import MODEL, error
from tests.upgrade.test_secrets_upgrade import apps, clone, upgrade  # noqa: F401 (fixtures)

API = "/api/v1"
HEADER = "X-Configuration-Session"
PATCH = {"Content-Type": "application/env-model-json-patch"}


class Model:
    """A client of one cluster's model and sessions."""

    def __init__(self, app, cluster_id):
        self.app, self.cluster_id = app, cluster_id
        self.prefix = "{0}/clusters/{1}".format(API, cluster_id)

    def open(self):
        return self.app.post(self.prefix + "/configure").json["id"]

    def patch(self, operations, session=None, status=200):
        headers = dict(PATCH, **({HEADER: session} if session else {}))
        return self.app.patch(MODEL.format(self.cluster_id), json.dumps(operations), headers=headers, status=status)

    def get(self, path="", session=None, status=200):
        return self.app.get(MODEL.format(self.cluster_id) + path, headers={HEADER: session} if session else {},
                            status=status)

    def deploy(self, session, status=200):
        return self.app.post("{0}/sessions/{1}/deploy".format(self.prefix, session), status=status)

    def show(self, session, status=200):
        return self.app.get("{0}/sessions/{1}".format(self.prefix, session), status=status)

    def diff(self, session):
        return self.app.get("{0}/sessions/{1}/diff".format(self.prefix, session))


def replace(path, value):
    return {"op": "replace", "path": path, "value": value}


@pytest.fixture
def seed(upgrade_env):
    return Model(upgrade_env.app, upgrade_env.clone()["id"])


def revision(session, cluster_id):
    session.expire_all()
    return session.get(Cluster, cluster_id).revision


def test_a_staged_patch_is_invisible_without_the_header_and_visible_with_it(seed, db_dump, session):
    session_id = seed.open()
    before = db_dump()
    staged = seed.patch([replace("/name", "seed-reviewed"), replace("/attributes/editable/common/debug", True),
                         replace("/node_groups/default/networks/management/cidr", "10.9.0.0/24"),
                         replace("/node_groups/default/networks/management/ip_ranges", [["10.9.0.2", "10.9.0.9"]])],
                        session=session_id).json
    assert (staged["name"], staged["attributes"]["editable"]["common"]["debug"]) == ("seed-reviewed", True)
    after = db_dump()
    assert {table for table in after if after[table] != before[table]} == {
        "config_sessions", "config_session_changes"}
    plain = seed.get().json
    assert (plain["name"], plain["attributes"]["editable"]["common"]["debug"]) == ("seed", False)
    assert seed.get("name").json == "seed"
    assert seed.app.get("{0}/clusters/{1}/".format(API, seed.cluster_id)).json["name"] == "seed"
    assert seed.get(session=session_id).json == staged
    assert seed.get("name", session=session_id).json == "seed-reviewed"
    assert seed.get("node_groups/default/networks/management/cidr", session=session_id).json == "10.9.0.0/24"
    assert seed.get("attributes/editable/common", session=session_id).json["debug"] is True
    # the parts no patch may change are the current ones
    assert {key: staged[key] for key in ("id", "status", "release", "nodes")} == {
        key: plain[key] for key in ("id", "status", "release", "nodes")}
    assert seed.show(session_id).json["documents"] == [
        {"document": {"type": "model"},
         "changed_keys": ["/attributes/editable/common", "/name", "/node_groups"]}]
    assert revision(session, seed.cluster_id) == 0


def test_a_second_staging_patches_the_staged_model_and_undoing_it_unstages(seed):
    session_id = seed.open()
    seed.patch([replace("/name", "one")], session=session_id)
    staged = seed.patch([{"op": "test", "path": "/name", "value": "one"},
                         replace("/attributes/editable/common/debug", True)], session=session_id).json
    assert (staged["name"], staged["attributes"]["editable"]["common"]["debug"]) == ("one", True)
    seed.patch([replace("/name", "seed"), replace("/attributes/editable/common/debug", False)], session=session_id)
    assert seed.show(session_id).json["documents"] == []


def test_deploy_applies_the_staged_model_in_one_revision_and_keeps_it_in_the_history(seed, session):
    session_id = seed.open()
    seed.patch([replace("/name", "seed-reviewed"),
                {"op": "add", "path": "/attributes/editable/external_dns/dns_list/-", "value": "1.1.1.1"},
                replace("/networking_parameters/vlan_range", [2000, 2100])], session=session_id)
    assert seed.diff(session_id).json == {"documents": [{"document": {"type": "model"}, "patch": [
        replace("/name", "seed-reviewed"),
        replace("/attributes/editable/external_dns/dns_list", ["8.8.8.8", "8.8.4.4", "1.1.1.1"]),
        replace("/networking_parameters/vlan_range", [2000, 2100])]}]}
    deployed = seed.deploy(session_id).json
    assert (deployed["state"], deployed["revision"]) == ("deployed", 1)
    model = seed.get().json
    assert model["name"] == "seed-reviewed"
    assert model["attributes"]["editable"]["external_dns"]["dns_list"] == ["8.8.8.8", "8.8.4.4", "1.1.1.1"]
    assert model["networking_parameters"]["vlan_range"] == [2000, 2100]
    assert revision(session, seed.cluster_id) == 1
    history = seed.app.get(seed.prefix + "/deployments").json["deployments"]
    assert [(d["id"], d["revision"], d["sections"]) for d in history] == [
        (session_id, 1, ["/attributes/editable/external_dns", "/name", "/networking_parameters"])]
    assert history[0]["diff"][0]["patch"][0] == replace("/name", "seed-reviewed")
    # a read with a deployed session shows the current model and says why
    answer = seed.get(session=session_id)
    assert answer.headers["X-Configuration-Session-State"] == "deployed"
    assert answer.json == model


def test_a_direct_patch_bumps_the_revision_unless_it_changes_nothing(seed, session):
    seed.patch([replace("/name", "renamed")])
    assert revision(session, seed.cluster_id) == 1
    seed.patch([{"op": "test", "path": "/name", "value": "renamed"}, replace("/name", "renamed")])
    assert revision(session, seed.cluster_id) == 1
    assert seed.app.post(seed.prefix + "/configure").json["version"] == 1


def test_a_model_changed_under_the_session_makes_its_deploy_409_and_writes_nothing(seed, db_dump):
    session_id = seed.open()
    seed.patch([replace("/name", "staged-name")], session=session_id)
    seed.patch([replace("/attributes/editable/common/debug", True)])
    before = db_dump()
    refused = seed.deploy(session_id, status=409).json
    assert refused["errors"] == [{"document": {"type": "model"}, "revision": 1, "author": None}]
    after = db_dump()
    assert {table for table in after if after[table] != before[table]} == {"config_sessions"}
    assert seed.get("name").json == "seed"
    assert seed.show(session_id, status=403).json["message"].startswith("Session {0} is invalid".format(session_id))


def test_staging_onto_a_model_changed_since_the_first_staging_is_409(seed):
    session_id = seed.open()
    seed.patch([replace("/name", "staged-name")], session=session_id)
    seed.patch([replace("/networking_parameters/vlan_range", [1500, 1600])])
    refused = seed.patch([replace("/attributes/editable/common/debug", True)], session=session_id, status=409).json
    assert refused["errors"][0]["document"] == {"type": "model"}
    assert seed.patch([replace("/name", "x")], session=session_id, status=403).json["message"].startswith(
        "Session {0} is invalid".format(session_id))


def test_changes_made_before_the_first_staging_are_no_conflict(seed):
    session_id = seed.open()
    seed.patch([replace("/attributes/editable/common/debug", True)])
    seed.patch([replace("/name", "staged-name")], session=session_id)
    seed.deploy(session_id)
    model = seed.get().json
    assert (model["name"], model["attributes"]["editable"]["common"]["debug"]) == ("staged-name", True)


def test_a_staged_network_change_is_refused_at_deploy_once_the_cluster_is_deployed(seed, db_dump):
    session_id = seed.open()
    seed.patch([replace("/node_groups/default/networks/management/cidr", "10.9.0.0/24"),
                replace("/node_groups/default/networks/management/ip_ranges", [["10.9.0.2", "10.9.0.9"]]),
                replace("/name", "seed-reviewed")], session=session_id)
    seed.app.put_json("{0}/clusters/{1}/".format(API, seed.cluster_id), {"status": "operational"})
    before = db_dump()
    refused = seed.deploy(session_id, status=403).json
    assert error(refused).endswith("allowed operations: none (environment {0} is deployed)".format(seed.cluster_id))
    assert db_dump() == before
    assert seed.show(session_id).json["state"] == "open"
    assert seed.get("name").json == "seed"


@pytest.mark.parametrize("operations, status", [
    ([replace("/release/id", 1)], 403),
    ([replace("/attributes/editable/common/debug", "yes")], 400),
    ([replace("/node_groups/default/networks/management/ip_ranges", [["10.0.0.1", "10.0.0.9"]])], 400),
    ([replace("/name", "orig")], 409),
    ([{"op": "test", "path": "/name", "value": "other"}], 409),
    ([replace("/attributes/editable/nope/key", 1)], 404),
    ([{"op": "replace", "path": "/name"}], 400),
])
def test_staging_runs_every_check_of_a_direct_patch_and_stages_nothing_when_one_fails(
        seed, db_dump, operations, status):
    session_id = seed.open()
    before = db_dump()
    seed.patch(operations, session=session_id, status=status)
    assert db_dump() == before


def test_header_errors_on_the_model(upgrade_env, seed):
    other = Model(upgrade_env.app, upgrade_env.orig["id"])
    foreign = other.open()
    assert seed.patch([replace("/name", "x")], session="0" * 32, status=404)
    assert seed.patch([replace("/name", "x")], session="not-a-session", status=404)
    assert seed.patch([replace("/name", "x")], session=foreign, status=400)
    assert seed.get(session=foreign, status=400)
    mine = seed.open()
    seed.app.delete("{0}/sessions/{1}".format(seed.prefix, mine))
    assert "abandoned" in error(seed.patch([replace("/name", "x")], session=mine, status=403).json)
    assert seed.get("name").json == "seed"


def test_direct_model_patch_false_requires_the_header(seed, db_dump):
    settings["SESSIONS"]["direct_model_patch"] = False
    before = db_dump()
    refused = seed.patch([replace("/name", "x")], status=400).json
    assert error(refused) == "X-Configuration-Session header is required"
    assert db_dump() == before
    session_id = seed.open()
    seed.patch([replace("/name", "x")], session=session_id)
    seed.deploy(session_id)
    assert seed.get("name").json == "x"


# -- secrets -----------------------------------------------------------------------------------

PASSWORD = "/attributes/editable/access/password"


def test_staged_secrets_are_sealed_masked_for_readers_and_a_kept_mask_keeps_the_stored_one(
        apps, upgrade, session, migrated_db):  # noqa: F811
    seed_id = clone(apps, upgrade).json["id"]
    member, admin = Model(apps["member"], seed_id), Model(apps["admin"], seed_id)
    session_id = member.open()
    staged = member.patch([replace("/attributes/editable/service/admin_pw", "Staged-Pw-93d1"),
                           replace("/attributes/editable/access/user", "operator")], session=session_id)
    assert staged.json["attributes"]["editable"]["service"]["admin_pw"] == MASK
    assert staged.json["attributes"]["editable"]["access"]["password"] == MASK
    session.remove()
    dump = database_text(migrated_db[0])
    assert "Staged-Pw-93d1" not in dump and "Orig-Access-Pw-31c7" not in dump
    row = json.dumps(session.execute(sa.text("SELECT data FROM config_session_changes")).scalar_one())
    assert '"password": "{0}"'.format(MASK) in row.replace("\\", "") and "$fernet" in row
    assert member.get("attributes/editable/service/admin_pw", session=session_id).json == MASK
    diff = member.diff(session_id)
    assert diff.headers["X-Secrets-Masked"] == "true"
    assert diff.json["documents"][0]["patch"] == [
        replace("/attributes/editable/access/user", "operator"), replace("/attributes/editable/service/admin_pw", MASK)]
    member.deploy(session_id)
    stored = session.get(Cluster, seed_id).editable_attributes
    assert stored["service"]["admin_pw"]["value"] == "Staged-Pw-93d1"
    assert stored["access"]["password"]["value"] == "Orig-Access-Pw-31c7"
    assert stored["access"]["user"]["value"] == "operator"
    history = member.app.get(member.prefix + "/deployments").json["deployments"][0]
    assert "Staged-Pw-93d1" not in json.dumps(history)
    assert "Staged-Pw-93d1" in json.dumps(admin.app.get(admin.prefix + "/deployments").json)


def test_a_secret_changed_under_the_session_makes_its_deploy_409(apps, upgrade, session):  # noqa: F811
    seed_id = clone(apps, upgrade).json["id"]
    member, admin = Model(apps["member"], seed_id), Model(apps["admin"], seed_id)
    session_id = member.open()
    member.patch([replace(PASSWORD, "Member-Pw-1")], session=session_id)
    admin.patch([replace(PASSWORD, "Admin-Pw-2")])
    member.deploy(session_id, status=409)
    session.expire_all()
    assert session.get(Cluster, seed_id).editable_attributes["access"]["password"]["value"] == "Admin-Pw-2"


def test_the_mask_where_no_secret_is_stored_is_400_at_staging(apps, upgrade):  # noqa: F811
    seed_id = clone(apps, upgrade).json["id"]
    member = Model(apps["member"], seed_id)
    session_id = member.open()
    refused = member.patch([replace("/attributes/editable/access/user", MASK)], session=session_id, status=400)
    assert "is the mask of a secret" in error(refused.json)
    assert member.show(session_id).json["documents"] == []


# -- races (PostgreSQL) ------------------------------------------------------------------------

@pytest.fixture
def api(db_url, request):
    if not db_url.startswith("postgresql"):
        pytest.skip("a race between gunicorn workers needs PostgreSQL (set NAILGUN_TEST_DB_URL)")
    return request.getfixturevalue("gunicorn")


def test_a_model_patch_and_a_deploy_at_once_never_deadlock_nor_lose_a_write(upgrade_env, api):
    seed_id = upgrade_env.clone()["id"]
    model_url = "{0}clusters/{1}/model".format(api, seed_id)
    for round_ in range(30):
        session_id = requests.post("{0}clusters/{1}/configure".format(api, seed_id), timeout=60).json()["id"]
        staged = requests.patch(model_url, json.dumps([replace("/name", "staged-{0}".format(round_))]),
                                headers=dict(PATCH, **{HEADER: session_id}), timeout=60)
        assert staged.status_code == 200, staged.text
        direct = [replace("/attributes/editable/access/user", "user-{0}".format(round_))]

        def patch_directly():
            return requests.patch(model_url, json.dumps(direct), headers=PATCH, timeout=60)

        def deploy():
            return requests.post("{0}clusters/{1}/sessions/{2}/deploy".format(api, seed_id, session_id), timeout=60)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            patched, deployed = [future.result() for future in (pool.submit(patch_directly), pool.submit(deploy))]
        assert patched.status_code == 200, patched.text
        assert deployed.status_code in (200, 409), deployed.text
        model = requests.get(model_url, timeout=60).json()
        assert model["attributes"]["editable"]["access"]["user"] == "user-{0}".format(round_)
        if deployed.status_code == 200:
            assert model["name"] == "staged-{0}".format(round_)
        else:
            assert model["name"] != "staged-{0}".format(round_)
