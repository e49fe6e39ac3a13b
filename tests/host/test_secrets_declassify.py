"""Writes that would turn a secret into a plain value (issue 11): a password field's type changed or
removed in a cluster's attributes or a release's defaults needs ``nailgun:change_secrets``, so a member
who may not read a secret cannot make it readable either."""
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from nailgun_host import policy
from nailgun_host.db.models import Cluster, Release
from nailgun_platform.secrets import classify
from nailgun_platform.secrets.masking import MASK
from tests.host.secret_clusters import (DEFAULT_PASSWORD, DEFAULT_SECRET_KEY, EDITABLE, database_text, identity_apps,
                                        release_body)

#: every test with the keys in a key repository and in Barbican (issue 28)
pytestmark = pytest.mark.usefixtures("each_key_manager")

API = "/api/v1"
#: a value secret by its field's type alone (its key matches no name pattern): what a type change exposes
CREDENTIAL = "Credential-By-Type-4e1f"
TYPED_EDITABLE = {"service": dict(EDITABLE["service"], credential={"type": "password", "value": CREDENTIAL,
                                                                   "label": "Credential"})}


@pytest.fixture
def apps(migrated_db, tmp_path):
    return identity_apps(tmp_path)


@pytest.fixture
def cluster(apps):
    release = apps["admin"].post_json(API + "/releases/", release_body("R", "mitaka-9.0", TYPED_EDITABLE), status=201).json
    return apps["admin"].post_json(API + "/clusters/", {"name": "c", "release_id": release["id"]}, status=201).json


def attributes_url(cluster):
    return "{0}/clusters/{1}/attributes/".format(API, cluster["id"])


def field(editable, **changes):
    """The credential field of the ``service`` section with ``changes`` (None removes a key)."""
    result = dict(editable["service"]["credential"], **changes)
    return {key: value for key, value in result.items() if value is not None}


def declassifying_writes(read):
    """(method, body) pairs a member could send to make the stored credential a plain value."""
    editable = read["editable"]
    put_text = dict(editable, service=dict(editable["service"], credential=field(editable, type="text")))
    put_typeless = dict(editable, service=dict(editable["service"], credential=field(editable, type=None)))
    return [("patch_json", {"editable": {"service": {"credential": {"type": "text"}}}}),
            ("patch_json", {"editable": {"service": {"credential": {"type": "hidden", "value": MASK}}}}),
            ("put_json", {"editable": put_text}),
            ("put_json", {"editable": put_typeless})]


def test_a_member_cannot_declassify_a_cluster_password_an_admin_can(apps, cluster, session, migrated_db):
    before = session.get(Cluster, cluster["id"]).editable_attributes
    session.remove()
    for method, body in declassifying_writes(apps["member"].get(attributes_url(cluster)).json):
        refused = getattr(apps["member"], method)(attributes_url(cluster), body, status=403)
        assert refused.json["errors"] == [policy.CHANGE_SECRETS]
        assert policy.CHANGE_SECRETS in refused.json["message"] and "/service/credential/value" in refused.json["message"]
        assert CREDENTIAL not in refused.text
        assert session.get(Cluster, cluster["id"]).editable_attributes == before
        session.remove()
        assert apps["reader"].get(attributes_url(cluster)).json["editable"]["service"]["credential"]["value"] == MASK
    assert CREDENTIAL not in database_text(migrated_db[0])
    apps["admin"].patch_json(attributes_url(cluster), {"editable": {"service": {"credential": {"type": "text"}}}})
    assert apps["reader"].get(attributes_url(cluster)).json["editable"]["service"]["credential"]["value"] == \
        CREDENTIAL


def test_a_member_still_changes_values_and_adds_plain_fields(apps, cluster, session):
    apps["member"].patch_json(attributes_url(cluster), {"editable": {"service": {
        "credential": {"value": "Member-Cred-1"}, "note": {"type": "text", "value": "plain"}}}})
    stored = session.get(Cluster, cluster["id"]).editable_attributes["service"]
    assert (stored["credential"]["value"], stored["note"]["value"]) == ("Member-Cred-1", "plain")
    session.remove()
    # a password made from a plain field is no declassification (the other way round)
    apps["member"].patch_json(attributes_url(cluster), {"editable": {"service": {"user": {"type": "password"}}}})


def test_a_member_cannot_declassify_a_release_default(apps, cluster, session):
    url = "{0}/releases/{1}/".format(API, cluster["release_id"])
    read = apps["member"].get(url).json
    metadata = read["attributes_metadata"]
    metadata["editable"]["service"]["credential"]["type"] = "text"
    refused = apps["member"].put_json(url, {"attributes_metadata": metadata}, status=403)
    assert refused.json["errors"] == [policy.CHANGE_SECRETS]
    assert "/attributes_metadata/editable/service/credential/value" in refused.json["message"]
    stored = session.get(Release, cluster["release_id"]).attributes_metadata["editable"]["service"]["credential"]
    assert stored == {"type": "password", "value": CREDENTIAL, "label": "Credential"}
    session.remove()
    assert apps["reader"].get(url).json["attributes_metadata"]["editable"]["service"]["credential"]["value"] == MASK
    apps["admin"].put_json(url, {"attributes_metadata": metadata})
    assert apps["reader"].get(url).json["attributes_metadata"]["editable"]["service"]["credential"]["value"] == \
        CREDENTIAL


# -- the class ---------------------------------------------------------------------------------------

FIELD_TYPES = ("password", "text", "hidden", "checkbox", None)


@st.composite
def member_writes(draw):
    """A PATCH or PUT of the service section changing the types of its fields (None: no type at all)."""
    types = draw(st.fixed_dictionaries({key: st.sampled_from(FIELD_TYPES)
                                        for key in ("credential", "admin_pw", "ceph_secret_key", "user")}))
    return draw(st.sampled_from(["patch_json", "put_json"])), types


@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(member_writes())
def test_no_write_of_a_member_lets_a_reader_read_a_stored_secret(apps, cluster, write):
    """Whatever types a member gives the fields, either the write is refused or a reader still reads the mask."""
    method, types = write
    read = apps["member"].get(attributes_url(cluster)).json["editable"]
    service = {}
    for key, new_type in types.items():
        if method == "patch_json":
            service[key] = {"type": new_type} if new_type else {}
        else:
            service[key] = {name: value for name, value in read["service"][key].items() if name != "type"}
            if new_type:
                service[key]["type"] = new_type
    body = {"editable": {"service": service} if method == "patch_json" else dict(read, service=service)}
    answer = getattr(apps["member"], method)(attributes_url(cluster), body, expect_errors=True)
    assert answer.status_code in (200, 403), answer.text
    shown = apps["reader"].get(attributes_url(cluster)).text
    assert [secret for secret in (CREDENTIAL, DEFAULT_PASSWORD, DEFAULT_SECRET_KEY) if secret in shown] == []


def test_declassified_names_what_stays_but_stops_being_secret():
    def secret(doc):
        return classify.attribute_pointers(doc)
    before = {"s": {"a": {"type": "password", "value": "x"}, "b": {"type": "password", "value": ["y", "z"]},
                    "c": {"type": "password", "value": "w"}}}
    after = {"s": {"a": {"type": "text", "value": "x"}, "b": {"type": "password", "value": {"k": "y"}},
                   "c": {"value": "w"}, "d": {"type": "text", "value": "new"}}}
    assert classify.declassified(before, after, secret) == {"/s/a/value", "/s/c/value"}
    assert classify.declassified(after, before, secret) == set()
    assert classify.declassified(before, {"s": {}}, secret) == set()  # gone is not readable
