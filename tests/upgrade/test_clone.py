"""POST /clusters/<orig>/upgrade/clone: the seed, its settings, networks and relation; every error."""
import pytest

from nailgun_host.db.models import Cluster, NetworkGroup, NodeGroup
from nailgun_ext_upgrade.models import UpgradeRelation
from tests.upgrade.conftest import CLONE, error


def _cluster(session, cluster_id):
    session.expire_all()
    return session.get(Cluster, cluster_id)


def test_clone_creates_seed_on_new_release(upgrade_env, session):
    seed = upgrade_env.clone()
    assert seed["name"] == "seed"
    assert seed["release_id"] == upgrade_env.new_release["id"]
    assert seed["fuel_version"] == "9.0"
    assert seed["id"] != upgrade_env.orig["id"]
    assert "cluster_upgrade" in seed["extensions"]
    relation = session.query(UpgradeRelation).one()
    assert (relation.orig_cluster_id, relation.seed_cluster_id) == (upgrade_env.orig["id"], seed["id"])
    assert relation.created_at is not None


def test_clone_answers_on_both_api_prefixes(upgrade_env):
    response = upgrade_env.app.post_json("/api/clusters/{0}/upgrade/clone".format(upgrade_env.orig["id"]),
                                         {"name": "seed", "release_id": upgrade_env.new_release["id"]})
    assert response.status_int == 200 and response.json["name"] == "seed"


def test_clone_copies_generated_credentials_but_never_returns_them(upgrade_env, session):
    response = upgrade_env.app.post_json(CLONE.format(upgrade_env.orig["id"]),
                                         {"name": "seed", "release_id": upgrade_env.new_release["id"]})
    orig, seed = _cluster(session, upgrade_env.orig["id"]), _cluster(session, response.json["id"])
    for section, key in (("mysql", "root_password"), ("keystone", "admin_token"), ("rabbit", "password")):
        secret = orig.generated_attributes[section][key]
        assert seed.generated_attributes[section][key] == secret
        assert secret not in response.text
    assert seed.generated_attributes["fuel_uuid"] == orig.generated_attributes["fuel_uuid"]
    # 9.0 drops the orig's provision data: the seed keeps its own image
    assert seed.generated_attributes["provision"]["image_data"]["/"]["uri"].endswith(
        "env_{0}_ubuntu_1404_amd64.img.gz".format(seed.id))


def test_clone_copies_editable_values_onto_new_metadata(upgrade_env, session):
    app, orig_id = upgrade_env.app, upgrade_env.orig["id"]
    app.patch_json("/api/v1/clusters/{0}/attributes/".format(orig_id), {"editable": {
        "common": {"debug": {"value": True}}, "access": {"user": {"value": "operator"}},
        "repo_setup": {"repos": {"value": []}}}})
    seed = upgrade_env.clone()
    editable = _cluster(session, seed["id"]).editable_attributes
    assert editable["common"]["debug"]["value"] is True
    assert editable["access"]["user"]["value"] == "operator"
    assert editable["repo_setup"]["repos"]["value"] != []  # the master's repositories are the seed's own
    assert editable["common"]["debug"]["label"] == "Debug logging"


def test_clone_converts_text_dns_and_ntp_of_older_release(env, session):
    metadata = {"editable": {
        "external_dns": {"dns_list": {"value": "8.8.8.8, 1.1.1.1,\n9.9.9.9", "type": "text"}},
        "external_ntp": {"ntp_list": {"value": "pool.ntp.org", "type": "text"}}}}
    old = env.create_release(name="Kilo", version="2015.1.0-7.0", attributes_metadata=metadata)
    new = env.create_release(version="mitaka-9.0")
    orig = env.create_cluster(release_id=old["id"], name="orig")
    seed = env.app.post_json(CLONE.format(orig["id"]), {"name": "seed", "release_id": new["id"]}).json
    editable = _cluster(session, seed["id"]).editable_attributes
    assert editable["external_dns"]["dns_list"]["value"] == ["8.8.8.8", "1.1.1.1", "9.9.9.9"]
    assert editable["external_ntp"]["ntp_list"]["value"] == ["pool.ntp.org"]


def test_clone_copies_network_configuration_with_every_range(upgrade_env, session):
    app, orig_id = upgrade_env.app, upgrade_env.orig["id"]
    config = upgrade_env.env.network_configuration(orig_id)
    public = next(n for n in config["networks"] if n["name"] == "public")
    management = next(n for n in config["networks"] if n["name"] == "management")
    app.put_json("/api/v1/clusters/{0}/network_configuration/neutron/".format(orig_id), {
        "networks": [
            {"id": public["id"], "ip_ranges": [["172.16.0.2", "172.16.0.20"], ["172.16.0.40", "172.16.0.60"]]},
            {"id": management["id"], "vlan_start": 333}],
        "networking_parameters": {"vlan_range": [1500, 1600], "dns_nameservers": ["1.1.1.1"]}})
    seed = upgrade_env.clone()
    seed_config = upgrade_env.env.network_configuration(seed["id"])
    by_name = {n["name"]: n for n in seed_config["networks"]}
    assert by_name["public"]["ip_ranges"] == [["172.16.0.2", "172.16.0.20"], ["172.16.0.40", "172.16.0.60"]]
    assert by_name["public"]["cidr"] == public["cidr"] and by_name["public"]["gateway"] == public["gateway"]
    assert by_name["management"]["vlan_start"] == 333
    assert seed_config["networking_parameters"]["vlan_range"] == [1500, 1600]
    assert seed_config["networking_parameters"]["dns_nameservers"] == ["1.1.1.1"]


def test_clone_copies_non_default_node_groups_and_their_networks(upgrade_env, session):
    app, orig_id = upgrade_env.app, upgrade_env.orig["id"]
    group = app.post_json("/api/v1/nodegroups/", {"cluster_id": orig_id, "name": "rack-2"}).json
    rack_net = session.query(NetworkGroup).filter_by(group_id=group["id"], name="management").one()
    rack_net_id = rack_net.id
    app.put_json("/api/v1/clusters/{0}/network_configuration/neutron/".format(orig_id), {"networks": [
        {"id": rack_net_id, "cidr": "10.50.0.0/24", "ip_ranges": [["10.50.0.10", "10.50.0.20"]]}]})
    seed = upgrade_env.clone()
    session.expire_all()
    groups = session.query(NodeGroup).filter_by(cluster_id=seed["id"]).order_by(NodeGroup.id).all()
    assert [(g.name, g.is_default) for g in groups] == [("default", True), ("rack-2", False)]
    twin = session.query(NetworkGroup).filter_by(group_id=groups[1].id, name="management").one()
    assert twin.cidr == "10.50.0.0/24"
    assert [[r.first, r.last] for r in twin.ip_ranges] == [["10.50.0.10", "10.50.0.20"]]


def test_clone_to_release_ten_after_nine_uses_real_version_order(env):
    nine = env.create_release(version="mitaka-9.0")
    ten = env.create_release(name="Newton on Ubuntu 16.04", version="newton-10.0")
    orig = env.create_cluster(release_id=nine["id"], name="orig")
    seed = env.app.post_json(CLONE.format(orig["id"]), {"name": "seed", "release_id": ten["id"]}).json
    assert seed["fuel_version"] == "10.0"
    back = env.create_cluster(release_id=ten["id"], name="ten")
    response = env.app.post_json(CLONE.format(back["id"]), {"name": "nine", "release_id": nine["id"]}, status=400)
    assert "equal or lower than the release of the original cluster" in error(response.json)


# -- errors ------------------------------------------------------------------------------------

def test_clone_of_missing_cluster_is_404(upgrade_env):
    response = upgrade_env.app.post_json(CLONE.format(999), {"name": "x", "release_id": 1}, status=404)
    assert error(response.json) == "Cluster not found"


def test_clone_to_missing_release_is_404(upgrade_env):
    response = upgrade_env.clone(release_id=999, status=404)
    assert error(response) == "Object 'Release' with UID=999 is not found in DB"


def test_second_clone_of_orig_is_405(upgrade_env):
    upgrade_env.clone()
    response = upgrade_env.app.post_json(CLONE.format(upgrade_env.orig["id"]),
                                         {"name": "again", "release_id": upgrade_env.new_release["id"]},
                                         status=405)
    assert error(response.json) == (
        "Upgrade is not possible because of the original cluster ({0}) is already involved in the "
        "upgrade routine.".format(upgrade_env.orig["id"]))
    assert response.headers["Allow"] == "POST"


def test_clone_of_a_seed_is_405(upgrade_env, env):
    seed = upgrade_env.clone()
    newer = env.create_release(name="Newton", version="newton-10.0")
    response = env.app.post_json(CLONE.format(seed["id"]), {"name": "seed2", "release_id": newer["id"]},
                                 status=405)
    assert "({0}) is already involved in the upgrade routine".format(seed["id"]) in error(response.json)


def test_clone_with_taken_name_is_409(upgrade_env):
    response = upgrade_env.clone(name="orig", status=409)
    assert error(response) == "Environment with this name 'orig' already exists."


def test_clone_with_attributes_no_transformation_converts_is_409(env):
    old = env.create_release(name="Old", version="liberty-8.0", attributes_metadata={"editable": {
        "common": {"debug": {"value": "yes", "type": "text"}}}})
    new = env.create_release(version="mitaka-9.0")
    orig = env.create_cluster(release_id=old["id"], name="orig")
    response = env.app.post_json(CLONE.format(orig["id"]), {"name": "seed", "release_id": new["id"]}, status=409)
    assert error(response.json) == (
        "Environment {0} has attributes incompatible with the upgrade to release {1}".format(orig["id"], new["id"]))
    assert response.json["errors"] == ["common.debug: 'text' in the environment, 'checkbox' in the new release"]


def test_clone_of_attributes_a_transformation_cannot_read_is_409(env):
    old = env.create_release(name="Kilo", version="2015.1.0-7.0", attributes_metadata={"editable": {
        "external_dns": {"dns_list": {"value": "8.8.8.8", "type": "text"}}}})
    new = env.create_release(version="mitaka-9.0")
    orig = env.create_cluster(release_id=old["id"], name="orig")
    env.app.patch_json("/api/v1/clusters/{0}/attributes/".format(orig["id"]), {"editable": {
        "external_dns": {"dns_list": {"value": {"not": "text"}}}}})
    response = env.app.post_json(CLONE.format(orig["id"]), {"name": "seed", "release_id": new["id"]}, status=409)
    assert response.json["errors"] == [
        "external_dns.dns_list: 'text' in the environment, 'text_list' in the new release"]


@pytest.mark.parametrize("state", ["unavailable", "manageonly"])
def test_clone_to_undeployable_release_is_400(upgrade_env, env, state):
    release = env.create_release(name="Deprecated", version="mitaka-9.0", state=state)
    response = upgrade_env.clone(release_id=release["id"], status=400)
    assert error(response) == (
        "Upgrade to the given release ({0}) is not possible because this release is deprecated and "
        "cannot be installed.".format(release["id"]))


@pytest.mark.parametrize("version", ["liberty-8.0", "kilo-7.0"])
def test_clone_to_release_not_newer_is_400(upgrade_env, env, version):
    release = env.create_release(name="Not newer", version=version)
    response = upgrade_env.clone(release_id=release["id"], status=400)
    assert error(response) == (
        "Upgrade to the given release ({0}) is not possible because this release is equal or lower "
        "than the release of the original cluster.".format(release["id"]))


def test_clone_changing_operating_system_is_400(upgrade_env, env):
    release = env.create_release(name="Mitaka on CentOS", version="mitaka-9.0", operating_system="CentOS")
    response = upgrade_env.clone(release_id=release["id"], status=400)
    assert error(response) == "Changing of operating system is not possible during upgrade (from Ubuntu to CentOS)."


def test_clone_changing_network_role_mapping_is_400(upgrade_env, env):
    roles = [{"id": "management", "default_mapping": "storage", "properties": {}}]
    release = env.create_release(name="Remapped", version="mitaka-9.0", network_roles_metadata=roles)
    response = upgrade_env.clone(release_id=release["id"], status=400)
    assert error(response) == "Network changes during upgrade is not supported."
    assert "network role 'management' mapped to 'management'" in response["errors"]


@pytest.mark.parametrize("body, message", [
    ("", "Empty request received"),
    ("{not json", "Invalid json received"),
    ('{"release_id": 2}', "'name' is a required property"),
    ('{"name": "seed"}', "'release_id' is a required property"),
    ('{"name": "seed", "release_id": "two"}', "'two' is not of type 'integer' (at 'release_id')"),
    ('{"name": "", "release_id": 2}', "(at 'name')"),
    ('[1]', "[1] is not of type 'object'"),
    ('{"name": "seed", "release_id": 99999999999}', "99999999999 is greater than the maximum of 2147483647"),
])
def test_clone_with_malformed_body_is_400(upgrade_env, body, message):
    response = upgrade_env.app.post(CLONE.format(upgrade_env.orig["id"]), body,
                                    headers={"Content-Type": "application/json"}, status=400)
    assert message in error(response.json)


def test_failed_clones_leave_the_database_unchanged(upgrade_env, env, db_dump):
    remapped = env.create_release(name="Remapped", version="mitaka-9.0", network_roles_metadata=[
        {"id": "management", "default_mapping": "storage", "properties": {}}])
    centos = env.create_release(name="CentOS", version="mitaka-9.0", operating_system="CentOS")
    before = db_dump()
    upgrade_env.clone(release_id=remapped["id"], status=400)
    upgrade_env.clone(release_id=centos["id"], status=400)
    upgrade_env.clone(name="orig", status=409)
    upgrade_env.clone(release_id=12345, status=404)
    assert db_dump() == before


def test_every_other_failed_clone_leaves_the_database_unchanged(upgrade_env, env, db_dump):
    undeployable = env.create_release(name="Deprecated", version="mitaka-9.0", state="unavailable")
    older = env.create_release(name="Older", version="kilo-7.0")
    text_debug = env.create_release(name="Old", version="liberty-8.0", attributes_metadata={"editable": {
        "common": {"debug": {"value": "yes", "type": "text"}}}})
    incompatible = env.create_cluster(release_id=text_debug["id"], name="incompatible")
    upgrade_env.clone()
    before = db_dump()
    upgrade_env.clone(name="again", status=405)
    app = upgrade_env.app
    for release_id, status in ((undeployable["id"], 400), (older["id"], 400)):
        app.post_json(CLONE.format(incompatible["id"]), {"name": "x", "release_id": release_id}, status=status)
    app.post_json(CLONE.format(incompatible["id"]), {"name": "x", "release_id": upgrade_env.new_release["id"]},
                  status=409)
    app.post_json(CLONE.format(incompatible["id"]), {"name": "x", "release_id": "2"}, status=400)
    app.post(CLONE.format(incompatible["id"]), "{", content_type="application/json", status=400)
    assert db_dump() == before



def test_the_relations_name_each_orig_and_its_seed(upgrade_env):
    assert upgrade_env.app.get("/api/v1/upgrade/relations").json == []
    seed = upgrade_env.clone()
    pair = {"orig_cluster_id": upgrade_env.orig["id"], "seed_cluster_id": seed["id"]}
    assert upgrade_env.app.get("/api/v1/upgrade/relations").json == [pair]
    for side in (upgrade_env.orig["id"], seed["id"]):
        assert upgrade_env.app.get("/api/v1/upgrade/relations?cluster_id={0}".format(side)).json == [pair]
    assert upgrade_env.app.get("/api/v1/upgrade/relations?cluster_id=999").json == []
    assert upgrade_env.app.get("/api/v1/upgrade/relations?cluster_id=x", expect_errors=True).status_int == 400
