"""GET/PATCH /clusters/<id>/model: the environment model and its JSON-patch policy."""
import json

import pytest

from nailgun_host.db.models import Cluster
from nailgun_platform.secrets.masking import MASK
from tests.upgrade.conftest import CLONE, MODEL, error

PATCH_TYPE = "application/env-model-json-patch"


def patch(app, cluster_id, operations, status=200, content_type=PATCH_TYPE):
    return app.patch(MODEL.format(cluster_id), json.dumps(operations),
                     headers={"Content-Type": content_type}, status=status).json


@pytest.fixture
def seed(upgrade_env):
    return upgrade_env.clone()


def test_model_shows_the_environment_with_secrets_masked(upgrade_env, seed, session):
    response = upgrade_env.app.get(MODEL.format(seed["id"]))
    model = response.json
    assert set(model) == {"id", "name", "status", "mode", "net_provider", "release", "attributes",
                          "networking_parameters", "node_groups", "nodes"}
    assert (model["name"], model["release"]["id"]) == ("seed", upgrade_env.new_release["id"])
    assert model["attributes"]["editable"]["common"]["debug"] is False
    assert model["attributes"]["generated"]["mysql"]["root_password"] == MASK
    secret = session.get(Cluster, seed["id"]).generated_attributes["mysql"]["root_password"]
    assert secret not in response.text
    assert set(model["node_groups"]["default"]["networks"]) == {"public", "management", "storage", "private"}
    assert model["nodes"] == []


def test_model_lists_nodes(upgrade_env):
    nodes = upgrade_env.app.get(MODEL.format(upgrade_env.orig["id"])).json["nodes"]
    assert [(n["id"], n["roles"], n["node_group"]) for n in nodes] == [
        (upgrade_env.controllers[0]["id"], ["controller"], "default"),
        (upgrade_env.controllers[1]["id"], ["controller"], "default"),
        (upgrade_env.compute["id"], ["compute"], "default")]


@pytest.mark.parametrize("path, expected", [
    ("name", "seed"),
    ("attributes/editable/access/user", "admin"),
    ("node_groups/default/networks/public/gateway", "172.16.0.1"),
    ("networking_parameters/vlan_range/0", 1000),
])
def test_model_section_by_path(upgrade_env, seed, path, expected):
    response = upgrade_env.app.get(MODEL.format(seed["id"]) + path)
    assert response.content_type == "application/json"
    assert response.json == expected


def test_model_section_that_does_not_exist_is_404(upgrade_env, seed):
    response = upgrade_env.app.get(MODEL.format(seed["id"]) + "attributes/nope", status=404)
    assert error(response.json) == "The model of environment {0} has no section '/attributes/nope'".format(seed["id"])


def test_model_of_missing_cluster_is_404(upgrade_env):
    assert error(upgrade_env.app.get(MODEL.format(999), status=404).json) == "Cluster not found"


def test_patch_changes_name_attributes_and_networks(upgrade_env, seed):
    app = upgrade_env.app
    result = patch(app, seed["id"], [
        {"op": "replace", "path": "/name", "value": "seed-reviewed"},
        {"op": "replace", "path": "/attributes/editable/common/debug", "value": True},
        {"op": "add", "path": "/attributes/editable/external_dns/dns_list/-", "value": "1.1.1.1"},
        {"op": "replace", "path": "/networking_parameters/vlan_range", "value": [2000, 2100]},
        {"op": "replace", "path": "/node_groups/default/networks/management/cidr", "value": "10.9.0.0/24"},
        {"op": "replace", "path": "/node_groups/default/networks/management/ip_ranges",
         "value": [["10.9.0.10", "10.9.0.20"], ["10.9.0.30", "10.9.0.40"]]},
        {"op": "test", "path": "/status", "value": "new"},
    ])
    assert result["name"] == "seed-reviewed"
    assert app.get("/api/v1/clusters/{0}/".format(seed["id"])).json["name"] == "seed-reviewed"
    editable = app.get("/api/v1/clusters/{0}/attributes/".format(seed["id"])).json["editable"]
    assert editable["common"]["debug"]["value"] is True
    assert editable["common"]["debug"]["type"] == "checkbox"
    assert editable["external_dns"]["dns_list"]["value"] == ["8.8.8.8", "8.8.4.4", "1.1.1.1"]
    config = upgrade_env.env.network_configuration(seed["id"])
    management = next(n for n in config["networks"] if n["name"] == "management")
    assert (management["cidr"], management["ip_ranges"]) == (
        "10.9.0.0/24", [["10.9.0.10", "10.9.0.20"], ["10.9.0.30", "10.9.0.40"]])
    assert config["networking_parameters"]["vlan_range"] == [2000, 2100]


def test_patch_accepts_the_rfc_media_type(upgrade_env, seed):
    result = patch(upgrade_env.app, seed["id"], [{"op": "replace", "path": "/name", "value": "x"}],
                   content_type="application/json-patch+json")
    assert result["name"] == "x"


@pytest.mark.parametrize("operation, allowed", [
    ({"op": "remove", "path": "/name"}, "replace"),
    ({"op": "replace", "path": "/release/id", "value": 1}, "none"),
    ({"op": "replace", "path": "/id", "value": 7}, "none"),
    ({"op": "replace", "path": "/attributes/generated/mysql/root_password", "value": "x"}, "none"),
    ({"op": "add", "path": "/attributes/editable/common/new_key", "value": 1}, "replace"),
    ({"op": "remove", "path": "/node_groups/default/networks/public"}, "none"),
    ({"op": "replace", "path": "/nodes/0/roles", "value": []}, "none"),
    ({"op": "move", "from": "/attributes/editable/access/user", "path": "/name"}, "replace"),
    ({"op": "copy", "from": "/name", "path": "/status"}, "none"),
])
def test_forbidden_operation_is_403_naming_the_allowed_ones(upgrade_env, seed, operation, allowed):
    response = patch(upgrade_env.app, seed["id"], [operation], status=403)
    assert error(response).endswith("; allowed operations: {0}".format(allowed))
    assert error(response).startswith("Operation '")


def test_network_changes_are_403_once_deployed(upgrade_env):
    orig_id = upgrade_env.orig["id"]
    upgrade_env.app.put_json("/api/v1/clusters/{0}/".format(orig_id), {"status": "operational"})
    for path, value in (("/networking_parameters/vlan_range", [1, 2]),
                        ("/node_groups/default/networks/public/cidr", "172.30.0.0/24")):
        response = patch(upgrade_env.app, orig_id, [{"op": "replace", "path": path, "value": value}], status=403)
        assert error(response) == (
            "Operation 'replace' is not allowed on '{0}'; allowed operations: none (environment {1} is "
            "deployed)".format(path, orig_id))
    assert patch(upgrade_env.app, orig_id, [{"op": "replace", "path": "/name", "value": "renamed"}])["name"] == "renamed"


def test_network_changes_are_403_once_a_node_moved_in_without_reinstallation(upgrade_env, seed):
    upgrade_env.assign(seed["id"], {"nodes_ids": [upgrade_env.compute["id"]], "reprovision": False}, status=200)
    assert upgrade_env.app.get(MODEL.format(seed["id"]) + "status").json == "new"
    response = patch(upgrade_env.app, seed["id"], [
        {"op": "replace", "path": "/node_groups/default/networks/management/cidr", "value": "10.9.0.0/24"}],
        status=403)
    assert error(response).endswith("allowed operations: none (environment {0} is deployed)".format(seed["id"]))


def test_failed_test_of_absent_member_names_the_path_and_quotes_nothing(upgrade_env, seed):
    response = patch(upgrade_env.app, seed["id"], [{"op": "test", "path": "/nope", "value": 1}], status=409)
    assert error(response) == "A test operation of the patch failed at '/nope' (operation 0)"


@pytest.mark.parametrize("operation, message", [
    ({"op": "replace", "path": "/name", "value": ""}, "(at 'name')"),
    ({"op": "replace", "path": "/attributes/editable/common/debug", "value": "yes"}, "'yes' is not of type 'boolean'"),
    ({"op": "add", "path": "/attributes/editable/external_dns/dns_list/-", "value": 8}, "8 is not of type 'string'"),
    ({"op": "replace", "path": "/attributes/editable/common/libvirt_type", "value": "xen"},
     "'xen' is not one of ['kvm', 'qemu']"),
    ({"op": "replace", "path": "/networking_parameters/vlan_range", "value": [1, 5000]}, "5000 is greater than"),
    ({"op": "replace", "path": "/node_groups/default/networks/public/cidr", "value": "not-a-cidr"},
     "(at 'node_groups/default/networks/public/cidr')"),
    ({"op": "replace", "path": "/node_groups/default/networks/public/ip_ranges", "value": [["10.0.0.1"]]},
     "is too short"),
])
def test_patch_breaking_the_model_schema_is_400(upgrade_env, seed, operation, message):
    assert message in error(patch(upgrade_env.app, seed["id"], [operation], status=400))


def test_patch_with_a_number_too_large_for_a_float_is_400(upgrade_env, seed):
    body = '[{"op": "replace", "path": "/networking_parameters/gre_id_range", "value": [2, 1e400]}]'
    response = upgrade_env.app.patch(MODEL.format(seed["id"]), body, headers={"Content-Type": PATCH_TYPE}, status=400)
    assert error(response.json) == "Numbers must be finite; one in the request is too large"


def test_patch_with_range_outside_cidr_is_400(upgrade_env, seed):
    response = patch(upgrade_env.app, seed["id"], [{"op": "replace", "path": "/node_groups/default/networks/"
                     "management/ip_ranges", "value": [["10.0.0.1", "10.0.0.9"]]}], status=400)
    assert error(response) == "Address '10.0.0.1' is outside the CIDR 192.168.0.0/24 of network 'management'"


@pytest.mark.parametrize("operation, message", [
    ({"op": "replace", "path": "/networking_parameters/internal_cidr", "value": "10.0.0.0/99"},
     "Invalid internal CIDR '10.0.0.0/99'"),
    ({"op": "replace", "path": "/networking_parameters/internal_gateway", "value": "10.9.9.1"},
     "Address '10.9.9.1' is outside the internal CIDR 192.168.111.0/24"),
    ({"op": "replace", "path": "/networking_parameters/floating_ranges", "value": [["172.16.0.200", "172.16.0.130"]]},
     "Floating range 172.16.0.200-172.16.0.130 is reversed"),
    ({"op": "replace", "path": "/attributes/editable/repo_setup/repos", "value": "x"},
     "'x' is not of type 'array' (at 'attributes/editable/repo_setup/repos')"),
])
def test_patch_with_values_the_environment_cannot_use_is_400_and_changes_nothing(
        upgrade_env, seed, db_dump, operation, message):
    before = db_dump()
    assert message in error(patch(upgrade_env.app, seed["id"], [operation], status=400))
    assert db_dump() == before


@pytest.mark.parametrize("body, message", [
    ("", "Empty request received"),
    ("[{", "Invalid json received"),
    ('{"op": "replace"}', "is not of type 'array'"),
    ('[{"path": "/name", "value": "x"}]', "'op' is a required property"),
    ('[{"op": "jump", "path": "/name"}]', "'jump' is not one of"),
    ('[{"op": "replace", "path": "/name"}]', "Operation 'replace' on '/name' needs a 'value' member"),
    ('[{"op": "move", "path": "/name"}]', "Operation 'move' on '/name' needs a 'from' member"),
    ('[{"op": "replace", "path": "name", "value": "x"}]', "Invalid path 'name'"),
])
def test_malformed_patch_is_400(upgrade_env, seed, body, message):
    response = upgrade_env.app.patch(MODEL.format(seed["id"]), body, headers={"Content-Type": PATCH_TYPE},
                                     status=400)
    assert message in error(response.json)


def test_patch_of_absent_section_is_404(upgrade_env, seed):
    response = patch(upgrade_env.app, seed["id"], [
        {"op": "replace", "path": "/attributes/editable/nope/key", "value": 1}], status=404)
    assert error(response) == ("The patch cannot apply operation 0 ('replace' on '/attributes/editable/nope/key'): "
                               "'/attributes/editable/nope' does not exist")


def test_failed_test_operation_is_409(upgrade_env, seed):
    response = patch(upgrade_env.app, seed["id"], [{"op": "test", "path": "/name", "value": "other"},
                                                   {"op": "replace", "path": "/name", "value": "x"}], status=409)
    assert error(response).startswith("A test operation of the patch failed")


def test_patch_with_taken_name_is_409(upgrade_env, seed):
    response = patch(upgrade_env.app, seed["id"], [{"op": "replace", "path": "/name", "value": "orig"}], status=409)
    assert error(response) == "Environment with this name 'orig' already exists."


@pytest.mark.parametrize("content_type", ["application/json", "text/plain", ""])
def test_patch_with_wrong_media_type_is_415(upgrade_env, seed, content_type):
    response = patch(upgrade_env.app, seed["id"], [{"op": "replace", "path": "/name", "value": "x"}],
                     status=415, content_type=content_type)
    assert error(response).startswith("Content-Type '{0}' is not supported".format(content_type))


def test_patch_of_a_section_path_is_405(upgrade_env, seed):
    response = upgrade_env.app.patch(MODEL.format(seed["id"]) + "name", "[]",
                                     headers={"Content-Type": PATCH_TYPE}, status=405)
    assert error(response.json) == "A patch applies to the whole model: PATCH /clusters/{0}/model".format(seed["id"])


def test_patch_is_all_or_nothing(upgrade_env, seed, db_dump):
    before = db_dump()
    for operations, status in (
            ([{"op": "replace", "path": "/name", "value": "new"},
              {"op": "replace", "path": "/release/id", "value": 1}], 403),
            ([{"op": "replace", "path": "/name", "value": "new"},
              {"op": "replace", "path": "/attributes/editable/common/debug", "value": 3}], 400),
            ([{"op": "replace", "path": "/attributes/editable/common/debug", "value": True},
              {"op": "replace", "path": "/node_groups/default/networks/management/ip_ranges",
               "value": [["10.0.0.1", "10.0.0.9"]]}], 400),
            ([{"op": "replace", "path": "/attributes/editable/common/debug", "value": True},
              {"op": "replace", "path": "/name", "value": "orig"}], 409)):
        patch(upgrade_env.app, seed["id"], operations, status=status)
    assert db_dump() == before


def _leaves(tree):
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in _leaves(value)]
    if isinstance(tree, list):
        return [leaf for value in tree for leaf in _leaves(value)]
    return [tree]


def test_no_generated_value_is_ever_served_by_clone_or_model(upgrade_env, session):
    clone = upgrade_env.app.post_json(CLONE.format(upgrade_env.orig["id"]),
                                      {"name": "seed", "release_id": upgrade_env.new_release["id"]})
    bodies = [clone.text] + [upgrade_env.app.get(MODEL.format(cluster_id) + path).text
                             for cluster_id in (upgrade_env.orig["id"], clone.json["id"])
                             for path in ("", "attributes", "attributes/generated")]
    secrets = {str(value) for cluster_id in (upgrade_env.orig["id"], clone.json["id"])
               for value in _leaves(session.get(Cluster, cluster_id).generated_attributes)
               if isinstance(value, (str, int)) and len(str(value)) >= 6}
    assert len(secrets) >= 10
    assert [secret for secret in secrets if any(secret in body for body in bodies)] == []


def test_a_patch_longer_than_max_operations_is_400_naming_the_limit(upgrade_env, seed, monkeypatch):
    from nailgun_host.settings import settings

    monkeypatch.setitem(settings["PATCH"], "max_operations", 2)
    before = upgrade_env.app.get(MODEL.format(seed["id"])).json
    answer = patch(upgrade_env.app, seed["id"], [{"op": "replace", "path": "/name", "value": "x"}] * 3, status=400)
    assert answer["message"] == "A patch may hold at most 2 operations (PATCH.max_operations); this one holds 3"
    assert upgrade_env.app.get(MODEL.format(seed["id"])).json == before
    patch(upgrade_env.app, seed["id"], [{"op": "replace", "path": "/name", "value": "x"}] * 2)
