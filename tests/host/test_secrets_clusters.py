"""Cluster secrets through HTTP with identities (issue 11): sealed at rest, masked for whoever may not
read secrets, kept when the mask is written back, and /clusters/<id>/generated for the allowed only."""
import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from nailgun_host import extensions, policy
from nailgun_host.api.base import MASKED_HEADER
from nailgun_host.db.models import Cluster, Release, Task
from nailgun_host.extensions import BaseExtension
from nailgun_platform.secrets.masking import MASK
from tests.host.secret_clusters import (DEFAULT_PASSWORD, DEFAULT_SECRET_KEY, database_text, generated_secrets,
                                        identity_apps, release_body)

#: every test with the keys in a key repository and in Barbican (issue 28)
pytestmark = pytest.mark.usefixtures("each_key_manager")

API = "/api/v1"
CLEAR = ("admin", "hiera")
MASKED = ("member", "reader")


@pytest.fixture
def apps(migrated_db, tmp_path):
    return identity_apps(tmp_path)


@pytest.fixture
def cluster(apps):
    release = apps["admin"].post_json(API + "/releases/", release_body("R", "mitaka-9.0"), status=201).json
    return apps["admin"].post_json(API + "/clusters/", {"name": "c", "release_id": release["id"]}, status=201).json


def attributes_url(cluster):
    return "{0}/clusters/{1}/attributes/".format(API, cluster["id"])


def service(answer):
    return {key: field["value"] for key, field in answer["editable"]["service"].items() if key != "metadata"}


# -- at rest ---------------------------------------------------------------------------------------

def test_no_credential_of_a_cluster_its_release_or_its_deployment_is_stored_in_clear(apps, cluster, session,
                                                                                     migrated_db):
    admin = apps["admin"]
    admin.patch_json(attributes_url(cluster), {"editable": {"access": {"password": {"value": "Access-Pw-93ab71"}}}})
    node = admin.post_json(API + "/nodes/", {"mac": "52:54:00:aa:00:01"}, status=201).json
    admin.put_json("{0}/nodes/{1}/".format(API, node["id"]), {"cluster_id": cluster["id"], "pending_roles": ["controller"]})
    admin.put("{0}/clusters/{1}/provision/".format(API, cluster["id"]), status=202)
    stored = session.get(Cluster, cluster["id"])
    generated = generated_secrets(stored.generated_attributes)
    assert len(generated) >= 8  # the release's passwords, token and uuid
    secrets = generated + ["Access-Pw-93ab71", DEFAULT_PASSWORD, DEFAULT_SECRET_KEY]
    assert stored.editable_attributes["access"]["password"]["value"] == "Access-Pw-93ab71"  # clear through the ORM
    task = session.query(Task).one()
    assert task.cache["args"]["provisioning_info"]["image_data"] == stored.generated_attributes["provision"][
        "image_data"]
    session.remove()
    dump = database_text(migrated_db[0])
    assert "$fernet" in dump
    assert [secret for secret in secrets if secret in dump] == []


def test_the_deployment_message_is_sealed_whole_and_reads_clear_through_the_orm(apps, cluster, session, migrated_db):
    admin = apps["admin"]
    node = admin.post_json(API + "/nodes/", {"mac": "52:54:00:aa:00:02"}, status=201).json
    admin.put_json("{0}/nodes/{1}/".format(API, node["id"]), {"cluster_id": cluster["id"], "pending_roles": ["compute"],
                                                              "status": "provisioned"})
    admin.put("{0}/clusters/{1}/deploy/".format(API, cluster["id"]), status=202)
    message = session.query(Task).one().cache
    assert message["args"]["deployment_info"]["common"]["editable"]["service"]["admin_pw"] == DEFAULT_PASSWORD
    session.remove()
    with migrated_db[0].connect() as connection:
        raw = str(connection.exec_driver_sql("SELECT cache FROM tasks").scalar())
    assert "$fernet" in raw and "deployment_info" not in raw and DEFAULT_PASSWORD not in raw


# -- reads ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("user", CLEAR + MASKED)
def test_attributes_and_their_defaults_are_clear_only_for_identities_that_may_read_secrets(apps, cluster, user):
    for url in (attributes_url(cluster), attributes_url(cluster) + "defaults/"):
        answer = apps[user].get(url)
        if user in CLEAR:
            assert service(answer.json) == {"admin_pw": DEFAULT_PASSWORD, "ceph_secret_key": DEFAULT_SECRET_KEY,
                                            "user": "svc"}
            assert MASKED_HEADER not in answer.headers
        else:
            assert service(answer.json) == {"admin_pw": MASK, "ceph_secret_key": MASK, "user": "svc"}
            assert answer.json["editable"]["service"]["admin_pw"]["type"] == "password"  # the form stays drawable
            assert answer.headers[MASKED_HEADER] == "true"
            assert DEFAULT_PASSWORD not in answer.text and DEFAULT_SECRET_KEY not in answer.text


@pytest.mark.parametrize("user", CLEAR + MASKED)
def test_releases_and_deployment_info_are_masked_for_identities_that_may_not_read_secrets(apps, cluster, user):
    app = apps[user]
    release_id = cluster["release_id"]
    answers = [app.get("{0}/releases/{1}/".format(API, release_id)), app.get(API + "/releases/")]
    node = apps["admin"].post_json(API + "/nodes/", {"mac": "52:54:00:aa:00:03"}, status=201).json
    apps["admin"].put_json("{0}/nodes/{1}/".format(API, node["id"]), {"cluster_id": cluster["id"],
                                                                      "pending_roles": ["compute"]})
    info = app.get("{0}/clusters/{1}/orchestrator/deployment/defaults/".format(API, cluster["id"]))
    answers.append(info)
    editable = info.json[0]["editable"]["service"]
    for answer in answers:
        assert (DEFAULT_PASSWORD in answer.text) is (user in CLEAR)
        assert (DEFAULT_SECRET_KEY in answer.text) is (user in CLEAR)
        assert (answer.headers.get(MASKED_HEADER) == "true") is (user in MASKED)
    assert editable == {"admin_pw": DEFAULT_PASSWORD if user in CLEAR else MASK,
                        "ceph_secret_key": DEFAULT_SECRET_KEY if user in CLEAR else MASK, "user": "svc"}
    metadata = answers[0].json["attributes_metadata"]
    assert metadata["editable"]["service"]["admin_pw"]["value"] == (DEFAULT_PASSWORD if user in CLEAR else MASK)
    assert metadata["generated"]["mysql"]["root_password"] == {"generator": "password"}  # a template, no secret


@pytest.mark.parametrize("user", CLEAR + MASKED)
def test_generated_attributes_are_served_to_identities_that_may_read_secrets_only(apps, cluster, session, user):
    url = "{0}/clusters/{1}/generated/".format(API, cluster["id"])
    if user in CLEAR:
        answer = apps[user].get(url)
        assert answer.json == session.get(Cluster, cluster["id"]).generated_attributes
        assert len(answer.json["mysql"]["root_password"]) == 24
        apps[user].get("{0}/clusters/999/generated".format(API), status=404)
    else:
        refused = apps[user].get(url, status=403)
        assert refused.json["errors"] == [policy.READ_SECRETS]
        assert policy.READ_SECRETS in refused.json["message"]
        assert apps[user].head(url, status=403).body == b""


# -- writes -----------------------------------------------------------------------------------------

class Recorder(BaseExtension):
    """Notes every attribute change an extension is told about."""

    name = "secrets_recorder"
    version = "0.1.0"
    description = "records on_cluster_patch_attributes"
    calls = []

    @classmethod
    def on_cluster_patch_attributes(cls, cluster, data):
        cls.calls.append(cluster.id)


@pytest.fixture
def recorder():
    extensions.set_extensions(list(extensions.get_all_extensions()) + [Recorder])
    Recorder.calls = []
    return Recorder


@pytest.mark.parametrize("method", ["put_json", "patch_json"])
def test_writing_back_a_masked_read_changes_nothing(apps, cluster, session, recorder, method):
    session.get(Cluster, cluster["id"]).pending_changes = []
    session.commit()
    before = session.get(Cluster, cluster["id"]).editable_attributes
    session.remove()
    read = apps["member"].get(attributes_url(cluster)).json
    answer = getattr(apps["member"], method)(attributes_url(cluster), read)
    assert answer.json == read
    stored = session.get(Cluster, cluster["id"])
    assert stored.editable_attributes == before
    assert stored.pending_changes == [] and recorder.calls == []


def test_a_change_next_to_masked_secrets_keeps_them_and_is_a_change(apps, cluster, session, recorder):
    read = apps["member"].get(attributes_url(cluster)).json
    read["editable"]["service"]["user"]["value"] = "operator"
    apps["member"].put_json(attributes_url(cluster), read)
    stored = session.get(Cluster, cluster["id"])
    assert service({"editable": stored.editable_attributes}) == {
        "admin_pw": DEFAULT_PASSWORD, "ceph_secret_key": DEFAULT_SECRET_KEY, "user": "operator"}
    assert {"name": "attributes", "node_id": None} in stored.pending_changes and recorder.calls == [cluster["id"]]
    session.remove()
    apps["member"].patch_json(attributes_url(cluster), {"editable": {"service": {"admin_pw": {"value": "New-Pw-1"}}}})
    assert session.get(Cluster, cluster["id"]).editable_attributes["service"]["admin_pw"]["value"] == "New-Pw-1"


def test_the_mask_where_no_secret_is_stored_is_refused_and_nothing_changes(apps, cluster, session):
    before = session.get(Cluster, cluster["id"]).editable_attributes
    session.remove()
    refused = apps["admin"].patch_json(attributes_url(cluster), {"editable": {"service": {
        "new_pw": {"type": "password", "value": MASK}}}}, status=400)
    assert refused.json["errors"] == ["/service/new_pw/value"]
    assert session.get(Cluster, cluster["id"]).editable_attributes == before


def test_a_release_written_back_masked_keeps_its_password_defaults(apps, cluster, session):
    url = "{0}/releases/{1}/".format(API, cluster["release_id"])
    read = apps["member"].get(url).json
    apps["member"].put_json(url, {"attributes_metadata": read["attributes_metadata"], "description": "edited"})
    stored = session.get(Release, cluster["release_id"])
    assert stored.description == "edited"
    assert stored.attributes_metadata["editable"]["service"]["admin_pw"]["value"] == DEFAULT_PASSWORD
    session.remove()
    body = release_body("R2", "mitaka-9.0")
    body["attributes_metadata"]["editable"]["service"]["admin_pw"]["value"] = MASK
    apps["admin"].post_json(API + "/releases/", body, status=400)
    assert session.query(Release).count() == 1


# -- property: secrets anywhere in a release's editable defaults never reach a reader ------------------

SECRET_NAMES = st.sampled_from(["password", "db_password", "admin_token", "secret_key", "private_key",
                                "api_key", "rabbit_pass", "connection"])
PLAIN_NAMES = st.sampled_from(["user", "port", "host", "label_x", "mode"])
VALUES = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", min_size=12, max_size=20)


@st.composite
def editable_sections(draw):
    """Sections of fields: password-type ones under any name, text ones under secret names, plain ones."""
    sections, secrets, counter = {}, [], [0]
    for section in draw(st.lists(st.sampled_from(["s1", "s2", "s3"]), min_size=1, max_size=3, unique=True)):
        fields = {}
        for kind in draw(st.lists(st.sampled_from(["password", "named", "plain"]), min_size=1, max_size=4)):
            counter[0] += 1
            value = draw(VALUES) + str(counter[0])
            if kind == "password":
                fields[draw(PLAIN_NAMES) + str(counter[0])] = {"type": "password", "value": value}
                secrets.append(value)
            elif kind == "named":
                fields[draw(SECRET_NAMES)] = {"type": draw(st.sampled_from(["text", "hidden"])), "value": value}
                secrets.append(value)
            else:
                fields[draw(PLAIN_NAMES)] = {"type": "text", "value": "plain-" + str(counter[0])}
        sections[section] = fields
    secrets = [value for value in secrets if any(field["value"] == value for fields in sections.values()
                                                 for field in fields.values())]
    return sections, secrets


@hypothesis_settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(editable_sections())
def test_no_password_field_or_secret_named_default_reaches_a_reader(apps, editable):
    sections, secrets = editable
    admin, reader = apps["admin"], apps["reader"]
    count = len(admin.get(API + "/releases/").json)
    release = admin.post_json(API + "/releases/", release_body("P{0}".format(count), "mitaka-9.0", sections)).json
    cluster = admin.post_json(API + "/clusters/", {"name": "p{0}".format(count), "release_id": release["id"]}).json
    urls = ["{0}/releases/{1}/".format(API, release["id"]), API + "/releases/", attributes_url(cluster),
            attributes_url(cluster) + "defaults/",
            "{0}/clusters/{1}/orchestrator/deployment/defaults/".format(API, cluster["id"])]
    answers = [reader.get(url).text for url in urls]
    assert [(url, secret) for url, text in zip(urls, answers) for secret in secrets if secret in text] == []
    cleartext = admin.get(attributes_url(cluster)).text
    assert all(secret in cleartext for secret in secrets)
