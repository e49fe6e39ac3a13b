"""The upgrade keeps secrets secret (issue 11): the seed's credentials sealed like the orig's, the
environment model masked (generated values always, editable secrets for whoever may not read them),
and a patch that writes the mask back changes nothing."""
import json

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from nailgun_host.api.base import MASKED_HEADER
from nailgun_host.db.models import Cluster
from nailgun_platform.secrets.masking import MASK
from tests.host.secret_clusters import (DEFAULT_PASSWORD, DEFAULT_SECRET_KEY, database_text, generated_secrets,
                                        identity_apps, release_body)
from tests.upgrade.conftest import CLONE, CLONE_RELEASE, MODEL

API = "/api/v1"
PATCH = {"Content-Type": "application/json-patch+json"}


@pytest.fixture
def apps(migrated_db, tmp_path):
    return identity_apps(tmp_path)


@pytest.fixture
def upgrade(apps):
    """orig on Liberty with its own access password, and a Mitaka release to clone it onto."""
    admin = apps["admin"]
    old = admin.post_json(API + "/releases/", release_body("Liberty", "liberty-8.0")).json
    new = admin.post_json(API + "/releases/", release_body("Mitaka", "mitaka-9.0")).json
    orig = admin.post_json(API + "/clusters/", {"name": "orig", "release_id": old["id"]}).json
    admin.patch_json("{0}/clusters/{1}/attributes/".format(API, orig["id"]),
                     {"editable": {"access": {"password": {"value": "Orig-Access-Pw-31c7"}}}})
    return {"orig": orig, "new_release": new}


def clone(apps, upgrade, user="member"):
    return apps[user].post_json(CLONE.format(upgrade["orig"]["id"]),
                                {"name": "seed", "release_id": upgrade["new_release"]["id"]})


def test_the_seed_holds_the_origs_credentials_sealed_and_its_clone_answer_none(apps, upgrade, session, migrated_db):
    answer = clone(apps, upgrade)
    orig, seed = session.get(Cluster, upgrade["orig"]["id"]), session.get(Cluster, answer.json["id"])
    for section in ("mysql", "keystone", "nova", "neutron", "rabbit"):
        assert seed.generated_attributes[section] == orig.generated_attributes[section]
    assert seed.generated_attributes["fuel_uuid"] == orig.generated_attributes["fuel_uuid"]
    assert seed.editable_attributes["access"]["password"]["value"] == "Orig-Access-Pw-31c7"
    secrets = generated_secrets(seed.generated_attributes) + ["Orig-Access-Pw-31c7", DEFAULT_PASSWORD,
                                                             DEFAULT_SECRET_KEY]
    assert len(secrets) >= 11
    session.remove()
    dump = database_text(migrated_db[0])
    assert [secret for secret in secrets if secret in dump or secret in answer.text] == []


@pytest.mark.parametrize("user", ["member", "admin"])
def test_a_cloned_release_answers_its_password_defaults_masked_unless_one_may_read_secrets(apps, upgrade, user):
    answer = apps[user].post(CLONE_RELEASE.format(upgrade["orig"]["id"], upgrade["new_release"]["id"]))
    value = answer.json["attributes_metadata"]["editable"]["service"]["admin_pw"]["value"]
    assert value == (DEFAULT_PASSWORD if user == "admin" else MASK)
    assert (DEFAULT_SECRET_KEY in answer.text) is (user == "admin")


@pytest.mark.parametrize("user", ["reader", "member", "hiera", "admin"])
def test_the_model_masks_generated_values_always_and_editable_secrets_for_whoever_may_not_read_them(
        apps, upgrade, session, user):
    seed = clone(apps, upgrade).json
    clear = user in ("hiera", "admin")
    app = apps[user]
    whole = app.get(MODEL.format(seed["id"]))
    generated = session.get(Cluster, seed["id"]).generated_attributes
    assert whole.json["attributes"]["generated"]["mysql"]["root_password"] == MASK
    assert [secret for secret in generated_secrets(generated) if secret in whole.text] == []
    assert whole.headers[MASKED_HEADER] == "true"
    editable = whole.json["attributes"]["editable"]
    assert editable["service"] == {"admin_pw": DEFAULT_PASSWORD if clear else MASK,
                                   "ceph_secret_key": DEFAULT_SECRET_KEY if clear else MASK, "user": "svc"}
    assert editable["access"]["password"] == ("Orig-Access-Pw-31c7" if clear else MASK)
    one = app.get(MODEL.format(seed["id"]) + "attributes/editable/access/password")
    assert one.json == ("Orig-Access-Pw-31c7" if clear else MASK)
    assert (MASKED_HEADER in one.headers) is not clear
    assert MASKED_HEADER not in app.get(MODEL.format(seed["id"]) + "name").headers
    assert app.get(MODEL.format(seed["id"]) + "attributes/generated/mysql/root_password").json == MASK


def _patch(app, seed, operations, status=200):
    return app.patch(MODEL.format(seed["id"]), json.dumps(operations), headers=PATCH, status=status)


def test_a_model_patch_that_writes_the_mask_back_changes_nothing(apps, upgrade, session):
    seed = clone(apps, upgrade).json
    session.get(Cluster, seed["id"]).pending_changes = []
    session.commit()
    before = session.get(Cluster, seed["id"]).editable_attributes
    session.remove()
    answer = _patch(apps["member"], seed, [
        {"op": "test", "path": "/attributes/editable/access/password", "value": MASK},
        {"op": "replace", "path": "/attributes/editable/access/password", "value": MASK},
        {"op": "replace", "path": "/attributes/editable/service/admin_pw", "value": MASK}])
    assert answer.json["attributes"]["editable"]["access"]["password"] == MASK
    assert "Orig-Access-Pw-31c7" not in answer.text
    stored = session.get(Cluster, seed["id"])
    assert stored.editable_attributes == before and stored.pending_changes == []


def test_a_model_patch_tests_a_reader_view_so_it_is_no_oracle_of_the_value(apps, upgrade, session):
    seed = clone(apps, upgrade).json
    refused = _patch(apps["member"], seed, [
        {"op": "test", "path": "/attributes/editable/access/password", "value": "Orig-Access-Pw-31c7"},
        {"op": "replace", "path": "/name", "value": "renamed"}], status=409)
    assert refused.json["message"] == (
        "A test operation of the patch failed at '/attributes/editable/access/password' (operation 0)")
    assert "Orig-Access-Pw-31c7" not in refused.text
    assert session.get(Cluster, seed["id"]).name == "seed"
    _patch(apps["admin"], seed, [
        {"op": "test", "path": "/attributes/editable/access/password", "value": "Orig-Access-Pw-31c7"},
        {"op": "replace", "path": "/name", "value": "renamed"}])


def test_a_model_patch_next_to_masked_secrets_changes_only_what_it_names(apps, upgrade, session):
    seed = clone(apps, upgrade).json
    answer = _patch(apps["member"], seed, [
        {"op": "replace", "path": "/attributes/editable/service/user", "value": "operator"},
        {"op": "replace", "path": "/attributes/editable/service/admin_pw", "value": "Seed-Pw-new"}])
    assert answer.json["attributes"]["editable"]["service"] == {"admin_pw": MASK, "ceph_secret_key": MASK,
                                                                "user": "operator"}
    values = {key: field["value"] for key, field in
              session.get(Cluster, seed["id"]).editable_attributes["service"].items() if key != "metadata"}
    assert values == {"admin_pw": "Seed-Pw-new", "ceph_secret_key": DEFAULT_SECRET_KEY, "user": "operator"}
    assert session.get(Cluster, seed["id"]).editable_attributes["access"]["password"]["value"] == \
        "Orig-Access-Pw-31c7"


def test_a_model_patch_refused_for_a_stored_secret_that_no_longer_fits_does_not_quote_it(apps, session):
    """A secret-named value the release types as a number but which holds text: the schema's
    message would quote it to whoever sent the patch."""
    editable = {"service": {"api_key": {"type": "number", "value": "Stored-Api-Key-4e1f"},
                            "user": {"type": "text", "value": "svc"}}}
    admin = apps["admin"]
    release = admin.post_json(API + "/releases/", release_body("Odd", "mitaka-9.0", editable)).json
    cluster = admin.post_json(API + "/clusters/", {"name": "odd", "release_id": release["id"]}).json
    for user in ("member", "admin"):
        refused = _patch(apps[user], cluster, [
            {"op": "replace", "path": "/attributes/editable/service/user", "value": "x"}], status=400)
        assert "Stored-Api-Key-4e1f" not in refused.text
        assert "secret is stored" in refused.json["message"]
    assert session.get(Cluster, cluster["id"]).editable_attributes["service"]["user"]["value"] == "svc"


def test_a_clone_onto_a_release_that_would_hold_an_orig_secret_as_a_plain_value_needs_change_secrets(
        apps, session):
    """A member may create a release whose field has no type; the orig's password copied into it would be
    plain in the seed, readable by anyone: the clone needs nailgun:change_secrets."""
    admin = apps["admin"]
    typed = {"service": {"credential": {"type": "password", "value": "Cred-By-Type-9d2c", "label": "Credential"}}}
    old = admin.post_json(API + "/releases/", release_body("Liberty", "liberty-8.0", typed)).json
    orig = admin.post_json(API + "/clusters/", {"name": "orig", "release_id": old["id"]}).json
    typeless = {"service": {"credential": {"value": "plain default", "label": "Credential"}}}
    new = apps["member"].post_json(API + "/releases/", release_body("Open", "mitaka-9.0", typeless)).json
    body = {"name": "seed", "release_id": new["id"]}
    refused = apps["member"].post_json(CLONE.format(orig["id"]), body, status=403)
    assert refused.json["errors"] == ["nailgun:change_secrets"]
    assert "/editable/service/credential/value" in refused.json["message"]
    assert session.query(Cluster).count() == 1
    session.remove()
    seed = admin.post_json(CLONE.format(orig["id"]), body).json
    assert apps["reader"].get("{0}/clusters/{1}/attributes/".format(API, seed["id"])).json[
        "editable"]["service"]["credential"]["value"] == "Cred-By-Type-9d2c"


#: what a member may try to write at an editable value of the model
MODEL_VALUES = st.one_of(st.just(MASK), st.text(max_size=8), st.booleans(), st.integers(),
                         st.fixed_dictionaries({"type": st.sampled_from(["text", "password"]), "value": st.just(MASK)}),
                         st.lists(st.just(MASK), max_size=2))


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["replace", "add", "remove"]),
                          st.sampled_from(["/attributes/editable/service/admin_pw",
                                           "/attributes/editable/service/admin_pw/type",
                                           "/attributes/editable/access/password",
                                           "/attributes/editable/access/password/0",
                                           "/attributes/editable/service/user"]),
                          MODEL_VALUES), min_size=1, max_size=3))
def test_no_model_patch_of_a_member_lets_a_reader_read_a_stored_secret(apps, upgrade, operations):
    """The model shows values only, so its patches cannot change a field's type; whatever they try, the
    orig's secrets still read as the mask (a patch that would make one plain meets the same check)."""
    seed = upgrade.get("seed") or upgrade.setdefault("seed", clone(apps, upgrade).json)
    patch = [dict({"op": op, "path": path}, **({} if op == "remove" else {"value": value}))
             for op, path, value in operations]
    answer = _patch(apps["member"], seed, patch, status="*")
    assert answer.status_code in (200, 400, 403, 404, 409), answer.text
    shown = apps["reader"].get("{0}/clusters/{1}/attributes/".format(API, seed["id"])).text + \
        apps["reader"].get(MODEL.format(seed["id"])).text
    assert "Orig-Access-Pw-31c7" not in shown and DEFAULT_PASSWORD not in shown
