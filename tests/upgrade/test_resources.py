"""The other upgrade resources: VIP copy, upgrade release, the root; relation lifecycle and pipeline."""
import pytest

from nailgun_host.db.models import Release
from nailgun_ext_upgrade.models import UpgradeRelation
from tests.upgrade.conftest import CLONE_RELEASE, VIPS, error

VIP_LIST = "/api/v1/clusters/{0}/network_configuration/ips/vips/"


def _vips(app, cluster_id):
    return {(v["vip_name"], v["ip_addr"], v["vip_namespace"]) for v in app.get(VIP_LIST.format(cluster_id)).json}


@pytest.fixture
def seed(upgrade_env):
    return upgrade_env.clone()


# -- VIPs --------------------------------------------------------------------------------------

def test_copy_vips_gives_the_seed_the_orig_addresses(upgrade_env, seed):
    app = upgrade_env.app
    orig_vips = _vips(app, upgrade_env.orig["id"])
    assert {name for name, _, _ in orig_vips} == {"public", "vrouter_pub", "management", "vrouter"}
    # provisioning the second controller makes the seed allocate VIPs of its own, at the lowest free addresses
    upgrade_env.assign(seed["id"], {"nodes_ids": [upgrade_env.controllers[1]["id"]]})
    assert _vips(app, seed["id"]) != orig_vips
    copied = app.post(VIPS.format(seed["id"])).json
    assert {(v["vip_name"], v["ip_addr"], v["vip_namespace"]) for v in copied} == orig_vips
    assert _vips(app, seed["id"]) == orig_vips
    assert set(copied[0]) == {"id", "network", "node", "ip_addr", "vip_name", "vip_namespace", "is_user_defined"}
    seed_networks = {n["id"] for n in upgrade_env.env.network_configuration(seed["id"])["networks"]}
    assert {v["network"] for v in copied} <= seed_networks


def test_copy_vips_renames_vips_of_a_six_x_environment(env):
    old = env.create_release(name="Juno", version="2014.2.2-6.1", network_roles_metadata=[
        {"id": "public/vip", "default_mapping": "public", "properties": {"vip": [{"name": "haproxy"}]}},
        {"id": "mgmt/vip", "default_mapping": "management",
         "properties": {"vip": [{"name": "haproxy"}, {"name": "vrouter"}]}}])
    new = env.create_release(name="Juno upgrade", version="2014.2.2-7.0", network_roles_metadata=[
        {"id": "public/vip", "default_mapping": "public", "properties": {"vip": [{"name": "public"}]}},
        {"id": "mgmt/vip", "default_mapping": "management",
         "properties": {"vip": [{"name": "management"}, {"name": "vrouter"}]}}])
    orig = env.create_cluster(release_id=old["id"], name="orig")
    env.create_node(cluster_id=orig["id"], roles=["controller"], status="ready")
    orig_vips = {(v["network"], v["vip_name"]): v["ip_addr"] for v in env.app.get(VIP_LIST.format(orig["id"])).json}
    seed = env.app.post_json("/api/v1/clusters/{0}/upgrade/clone/".format(orig["id"]),
                             {"name": "seed", "release_id": new["id"]}).json
    copied = env.app.post(VIPS.format(seed["id"])).json
    names = {n["id"]: n["name"] for n in env.network_configuration(orig["id"])["networks"]}
    by_old = {(names[net], vip): ip for (net, vip), ip in orig_vips.items()}
    assert {(v["vip_name"], v["ip_addr"], v["vip_namespace"]) for v in copied} == {
        ("public", by_old[("public", "haproxy")], "haproxy"),
        ("management", by_old[("management", "haproxy")], "haproxy"),
        ("vrouter", by_old[("management", "vrouter")], "vrouter")}


def test_copy_vips_of_missing_cluster_is_404(upgrade_env):
    assert error(upgrade_env.app.post(VIPS.format(999), status=404).json) == "Cluster not found"


def test_copy_vips_without_relation_is_400(upgrade_env):
    response = upgrade_env.app.post(VIPS.format(upgrade_env.orig["id"]), status=400)
    assert error(response.json) == "Relation for given cluster does not exist"


def test_copy_vips_to_the_orig_is_400(upgrade_env, seed):
    response = upgrade_env.app.post(VIPS.format(upgrade_env.orig["id"]), status=400)
    assert error(response.json) == "Given cluster is not seed cluster"


def test_copy_vips_outside_the_seed_network_is_400_and_changes_nothing(upgrade_env, seed, db_dump):
    app = upgrade_env.app
    _vips(app, upgrade_env.orig["id"])
    public = next(n for n in upgrade_env.env.network_configuration(seed["id"])["networks"] if n["name"] == "public")
    app.put_json("/api/v1/clusters/{0}/network_configuration/neutron/".format(seed["id"]), {"networks": [
        {"id": public["id"], "cidr": "172.17.0.0/24", "gateway": "172.17.0.1",
         "ip_ranges": [["172.17.0.2", "172.17.0.100"]]}]})
    before = db_dump()
    response = app.post(VIPS.format(seed["id"]), status=400)
    assert "does not belong to the network 'public' (172.17.0.0/24)" in error(response.json)
    assert db_dump() == before


# -- upgrade release ---------------------------------------------------------------------------

def test_clone_release_keeps_orig_network_role_mappings(env, session):
    old = env.create_release(name="Liberty", version="liberty-8.0", network_roles_metadata=[
        {"id": "mgmt/vip", "default_mapping": "management", "properties": {}},
        {"id": "storage", "default_mapping": "management", "properties": {}}])
    base = env.create_release(name="Mitaka on Ubuntu 14.04", version="mitaka-9.0", network_roles_metadata=[
        {"id": "mgmt/vip", "default_mapping": "management", "properties": {"vip": []}},
        {"id": "storage", "default_mapping": "storage", "properties": {}},
        {"id": "only-new", "default_mapping": "storage", "properties": {}}],
        deployment_tasks=[{"id": "netconfig", "type": "puppet"}])
    orig = env.create_cluster(release_id=old["id"], name="orig")
    created = env.app.post(CLONE_RELEASE.format(orig["id"], base["id"])).json
    assert created["name"] == "Mitaka on Ubuntu 14.04 Upgrade ({0})".format(old["id"])
    assert (created["version"], created["operating_system"], created["state"]) == ("mitaka-9.0", "Ubuntu", "available")
    assert {r["id"]: r["default_mapping"] for r in created["network_roles_metadata"]} == {
        "mgmt/vip": "management", "storage": "management", "only-new": "storage"}
    assert session.get(Release, created["id"]).deployment_tasks == [{"id": "netconfig", "type": "puppet"}]
    clone = "/api/v1/clusters/{0}/upgrade/clone/".format(orig["id"])
    refused = env.app.post_json(clone, {"name": "seed", "release_id": base["id"]}, status=400).json
    assert error(refused) == "Network changes during upgrade is not supported."
    assert env.app.post_json(clone, {"name": "seed", "release_id": created["id"]}).json["release_id"] == created["id"]


def test_clone_release_missing_release_or_cluster_is_404(upgrade_env):
    app = upgrade_env.app
    assert error(app.post(CLONE_RELEASE.format(upgrade_env.orig["id"], 999), status=404).json) == "Release not found"
    assert error(app.post(CLONE_RELEASE.format(999, upgrade_env.new_release["id"]), status=404).json) == \
        "Cluster not found"


def test_clone_release_twice_is_409(upgrade_env):
    url = CLONE_RELEASE.format(upgrade_env.orig["id"], upgrade_env.new_release["id"])
    created = upgrade_env.app.post(url).json
    response = upgrade_env.app.post(url, status=409)
    assert error(response.json) == "Release with name '{0}' and version 'mitaka-9.0' already exists".format(
        created["name"])


# -- the root ------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["post", "get", "put", "delete"])
def test_upgrade_root_is_404_naming_the_sub_resources(upgrade_env, method):
    orig_id = upgrade_env.orig["id"]
    response = getattr(upgrade_env.app, method)("/api/v1/clusters/{0}/upgrade".format(orig_id), status=404)
    assert error(response.json) == (
        "No method is implemented for the upgrade of environment {0} as a whole; use its sub-resources: "
        "clone, assign, vips, clone_release/<release_id>".format(orig_id))
    assert "/clusters/{0}/upgrade/clone".format(orig_id) in response.json["errors"]


def test_upgrade_root_of_missing_cluster_is_404(upgrade_env):
    assert error(upgrade_env.app.post("/api/v1/clusters/999/upgrade/", status=404).json) == "Cluster not found"


def test_non_numeric_cluster_id_is_404(upgrade_env):
    response = upgrade_env.app.post_json("/api/v1/clusters/xa/upgrade/clone", {"name": "a"}, status=404)
    assert error(response.json) == "Resource not found: /api/v1/clusters/xa/upgrade/clone"


# -- relation lifecycle and the deployment pipeline ------------------------------------------

@pytest.mark.parametrize("side", ["orig", "seed"])
def test_deleting_either_cluster_removes_the_relation(upgrade_env, seed, session, side):
    cluster_id = upgrade_env.orig["id"] if side == "orig" else seed["id"]
    assert session.query(UpgradeRelation).count() == 1
    upgrade_env.app.delete("/api/v1/clusters/{0}/".format(cluster_id), status=204)
    session.expire_all()
    assert session.query(UpgradeRelation).count() == 0


def test_seed_deployment_info_carries_the_relation(upgrade_env, seed):
    upgrade_env.assign(seed["id"], {"nodes_ids": [upgrade_env.compute["id"]], "reprovision": False}, status=200)
    info = upgrade_env.app.get("/api/v1/clusters/{0}/orchestrator/deployment/defaults/".format(seed["id"])).json
    assert info[0]["upgrade"] == {"relation_info": {
        "orig_cluster_id": upgrade_env.orig["id"], "seed_cluster_id": seed["id"],
        "orig_cluster_version": "8.0", "seed_cluster_version": "9.0"}}
    orig_info = upgrade_env.app.get(
        "/api/v1/clusters/{0}/orchestrator/deployment/defaults/".format(upgrade_env.orig["id"])).json
    assert "upgrade" not in orig_info[0]  # the extension is enabled on the seed only


def test_seed_deployment_info_without_relation_after_orig_deleted(upgrade_env, seed):
    upgrade_env.assign(seed["id"], {"nodes_ids": [upgrade_env.compute["id"]], "reprovision": False}, status=200)
    upgrade_env.app.delete("/api/v1/clusters/{0}/".format(upgrade_env.orig["id"]), status=204)
    info = upgrade_env.app.get("/api/v1/clusters/{0}/orchestrator/deployment/defaults/".format(seed["id"])).json
    assert info[0]["uid"] == str(upgrade_env.compute["id"])
    assert "upgrade" not in info[0]
