"""POST /clusters/<seed>/upgrade/assign: nodes move keeping ids and addresses; every error."""
import pytest

from nailgun_host.db.models import Task
from tests.upgrade.conftest import ASSIGN, error


@pytest.fixture
def seed(upgrade_env):
    return upgrade_env.clone()


def _interfaces(app, node_id):
    return {i["name"]: sorted(n["name"] for n in i["assigned_networks"])
            for i in app.get("/api/v1/nodes/{0}/interfaces/".format(node_id)).json}


def _network_ids(app, node_id):
    return {n["name"]: n["network_id"] for n in app.get("/api/v1/nodes/{0}/".format(node_id)).json["network_data"]}


def test_assign_with_reprovision_starts_one_provisioning_task(upgrade_env, seed, session):
    ids = [c["id"] for c in upgrade_env.controllers]
    before = {node_id: upgrade_env.addresses(node_id) for node_id in ids}
    task = upgrade_env.assign(seed["id"], {"nodes_ids": ids})
    assert task["name"] == "provision" and task["cluster"] == seed["id"] and task["status"] == "pending"
    tasks = session.query(Task).all()
    assert len(tasks) == 1
    assert sorted(int(n["uid"]) for n in tasks[0].cache["args"]["provisioning_info"]["nodes"]) == sorted(ids)
    for node_id in ids:
        node = upgrade_env.env.get_node(node_id)
        assert (node["cluster"], node["roles"], node["pending_roles"]) == (seed["id"], [], ["controller"])
        assert node["status"] == "provisioning"
        assert upgrade_env.addresses(node_id) == before[node_id]


def test_moved_node_keeps_id_addresses_and_interface_layout_in_seed_networks(upgrade_env, seed):
    app, node_id = upgrade_env.app, upgrade_env.controllers[0]["id"]
    before_ips, before_nics = upgrade_env.addresses(node_id), _interfaces(app, node_id)
    seed_networks = {n["name"]: n["id"] for n in upgrade_env.env.network_configuration(seed["id"])["networks"]}
    upgrade_env.assign(seed["id"], {"nodes_ids": [node_id], "reprovision": False}, status=200)
    assert upgrade_env.addresses(node_id) == before_ips
    assert _interfaces(app, node_id) == before_nics
    assert _network_ids(app, node_id) == {name: seed_networks[name] for name in _network_ids(app, node_id)}


def test_moved_node_keeps_bond_assignments(upgrade_env, seed):
    app, node_id = upgrade_env.app, upgrade_env.env.create_node(
        cluster_id=upgrade_env.orig["id"], roles=["controller"], status="ready", nics=3)["id"]
    nics = app.get("/api/v1/nodes/{0}/interfaces/".format(node_id)).json
    admin = next(n for n in nics[0]["assigned_networks"])
    others = nics[1]["assigned_networks"]
    app.put_json("/api/v1/nodes/{0}/interfaces/".format(node_id), [
        {"name": "eth0", "assigned_networks": [admin]},
        {"name": "eth1", "assigned_networks": []}, {"name": "eth2", "assigned_networks": []},
        {"name": "bond0", "type": "bond", "mode": "802.3ad", "slaves": [{"name": "eth1"}, {"name": "eth2"}],
         "assigned_networks": others}])
    before = _interfaces(app, node_id)
    upgrade_env.assign(seed["id"], {"nodes_ids": [node_id], "reprovision": False}, status=200)
    assert _interfaces(app, node_id) == before
    assert before["bond0"] == sorted(n["name"] for n in others)


def test_assign_without_reprovision_answers_200_with_the_moved_nodes(upgrade_env, seed, session):
    node_id = upgrade_env.compute["id"]
    body = upgrade_env.assign(seed["id"], {"nodes_ids": [node_id], "reprovision": False}, status=200)
    assert [(n["id"], n["cluster"], n["roles"], n["pending_roles"], n["status"]) for n in body] == [
        (node_id, seed["id"], ["compute"], [], "ready")]
    assert session.query(Task).count() == 0


def test_assign_with_roles_replaces_them(upgrade_env, seed):
    node_id = upgrade_env.compute["id"]
    upgrade_env.assign(seed["id"], {"nodes_ids": [node_id], "reprovision": False, "roles": ["cinder"]},
                       status=200)
    assert upgrade_env.env.get_node(node_id)["roles"] == ["cinder"]


def test_assign_with_roles_and_reprovision_makes_them_pending(upgrade_env, seed):
    node_id = upgrade_env.compute["id"]
    upgrade_env.assign(seed["id"], {"nodes_ids": [node_id], "roles": ["compute", "cinder"]})
    node = upgrade_env.env.get_node(node_id)
    assert (node["roles"], node["pending_roles"]) == ([], ["compute", "cinder"])


def test_assign_accepts_the_spec_single_node_id(upgrade_env, seed):
    node_id = upgrade_env.controllers[0]["id"]
    upgrade_env.assign(seed["id"], {"node_id": node_id})
    assert upgrade_env.env.get_node(node_id)["cluster"] == seed["id"]


def test_assign_node_in_error_after_deploy(upgrade_env, seed):
    node_id = upgrade_env.env.create_node(cluster_id=upgrade_env.orig["id"], roles=["compute"],
                                          status="error", error_type="deploy")["id"]
    upgrade_env.assign(seed["id"], {"nodes_ids": [node_id], "reprovision": False}, status=200)
    assert upgrade_env.env.get_node(node_id)["cluster"] == seed["id"]


def test_assign_of_node_with_address_in_network_the_seed_lacks_is_400(upgrade_env, seed, session):
    from nailgun_host.db.models import NetworkGroup, NodeGroup

    storage = (session.query(NetworkGroup).join(NodeGroup)
               .filter(NodeGroup.cluster_id == seed["id"], NetworkGroup.name == "storage").one())
    session.delete(storage)
    session.commit()
    node_id = upgrade_env.compute["id"]
    storage_ip = dict(upgrade_env.addresses(node_id))["storage"].split("/")[0]
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [node_id]}, status=400)
    assert error(response) == "Some addresses of the nodes are in networks the seed cluster {0} does not have".format(
        seed["id"])
    assert len(response["errors"]) == 1 and response["errors"][0].startswith(
        "{0} of node {1} (network id".format(storage_ip, node_id))


# -- errors ------------------------------------------------------------------------------------

def test_assign_to_missing_cluster_is_404(upgrade_env):
    response = upgrade_env.assign(999, {"nodes_ids": [1]}, status=404)
    assert error(response) == "Cluster not found"


def test_assign_of_missing_node_is_404(upgrade_env, seed):
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [upgrade_env.compute["id"], 4242]}, status=404)
    assert error(response) == "Node with id 4242 was not found."


@pytest.mark.parametrize("status", ["discover", "provisioning", "deploying", "removing", "stopped"])
def test_assign_of_node_in_wrong_status_is_400(upgrade_env, seed, status):
    node = upgrade_env.env.create_node(cluster_id=upgrade_env.orig["id"], roles=["compute"], status=status)
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [node["id"]]}, status=400)
    assert error(response) == (
        "Node should be in one of statuses: (ready, provisioned, error). Currently node has {0} status.".format(
            status))


def test_assign_of_node_with_provision_error_is_400(upgrade_env, seed):
    node = upgrade_env.env.create_node(cluster_id=upgrade_env.orig["id"], roles=["compute"], status="error",
                                       error_type="provision")
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [node["id"]]}, status=400)
    assert error(response) == (
        "Node should be in error state only with deploy error type. Currently error type of node is provision")


def test_assign_of_node_already_in_seed_is_400(upgrade_env, seed):
    node_id = upgrade_env.compute["id"]
    upgrade_env.assign(seed["id"], {"nodes_ids": [node_id], "reprovision": False}, status=200)
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [node_id]}, status=400)
    assert error(response) == "Node {0} is already assigned to cluster {1}".format(node_id, seed["id"])


def test_assign_of_node_from_another_cluster_is_405(upgrade_env, seed, env):
    other = env.create_cluster(release_id=upgrade_env.orig_release["id"], name="other")
    node = env.create_node(cluster_id=other["id"], roles=["compute"], status="ready")
    response = upgrade_env.app.post_json(ASSIGN.format(seed["id"]), {"nodes_ids": [node["id"]]}, status=405)
    assert error(response.json) == (
        "Node {0} is not in cluster {1}, the original cluster of seed cluster {2}; only its nodes can be "
        "assigned".format(node["id"], upgrade_env.orig["id"], seed["id"]))
    assert response.headers["Allow"] == "POST"


def test_assign_of_unassigned_node_is_405(upgrade_env, seed, env):
    node = env.create_node(status="ready")
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [node["id"]]}, status=405)
    assert "is not in cluster {0}".format(upgrade_env.orig["id"]) in error(response)


def test_assign_with_roles_to_nodes_with_different_roles_is_400(upgrade_env, seed):
    ids = [upgrade_env.controllers[0]["id"], upgrade_env.compute["id"]]
    response = upgrade_env.assign(seed["id"], {"nodes_ids": ids, "roles": ["cinder"]}, status=400)
    assert error(response) == "Only nodes with the same set of assigned roles are supported for the operation."


def test_assign_with_same_roles_in_other_order_is_fine(upgrade_env, seed, env):
    ids = [env.create_node(cluster_id=upgrade_env.orig["id"], roles=roles, status="ready")["id"]
           for roles in (["compute", "cinder"], ["cinder", "compute"])]
    upgrade_env.assign(seed["id"], {"nodes_ids": ids, "roles": ["compute"], "reprovision": False}, status=200)
    assert [env.get_node(i)["roles"] for i in ids] == [["compute"], ["compute"]]


def test_assign_with_unknown_role_is_400(upgrade_env, seed):
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [upgrade_env.compute["id"]], "roles": ["wizard"]},
                                  status=400)
    assert error(response) == "['wizard'] are not valid roles for node in environment {0}".format(seed["id"])


def test_assign_with_conflicting_roles_is_400(upgrade_env, seed):
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [upgrade_env.compute["id"]],
                                               "roles": ["controller", "compute"]}, status=400)
    assert error(response) == "Role 'controller' in conflict with role 'compute'."


def test_assign_of_role_unknown_to_seed_release_is_400(env):
    old = env.create_release(name="Old", version="liberty-8.0",
                             roles_metadata={"controller": {}, "legacy-role": {}})
    new = env.create_release(version="mitaka-9.0")
    orig = env.create_cluster(release_id=old["id"], name="orig")
    node = env.create_node(cluster_id=orig["id"], roles=["legacy-role"], status="ready")
    seed = env.app.post_json("/api/v1/clusters/{0}/upgrade/clone/".format(orig["id"]),
                             {"name": "seed", "release_id": new["id"]}).json
    response = env.app.post_json(ASSIGN.format(seed["id"]), {"nodes_ids": [node["id"]]}, status=400)
    assert error(response.json) == "['legacy-role'] are not valid roles for node in environment {0}".format(
        seed["id"])


def test_assign_to_cluster_without_relation_is_400(upgrade_env):
    response = upgrade_env.assign(upgrade_env.orig["id"], {"nodes_ids": [upgrade_env.compute["id"]]}, status=400)
    assert error(response) == "Relation for given cluster does not exist"


def test_assign_to_the_orig_is_400(upgrade_env, seed):
    response = upgrade_env.assign(upgrade_env.orig["id"], {"nodes_ids": [upgrade_env.compute["id"]]}, status=400)
    assert error(response) == "Given cluster is not seed cluster"


def test_assign_while_seed_has_a_running_task_is_409(upgrade_env, seed):
    upgrade_env.assign(seed["id"], {"nodes_ids": [upgrade_env.controllers[0]["id"]]})
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [upgrade_env.compute["id"]]}, status=409)
    assert "is already running for environment {0}".format(seed["id"]) in error(response)


def test_assign_to_an_address_a_seed_vip_holds_is_409(upgrade_env, seed, env):
    first, second = upgrade_env.controllers  # the orig gave first the lowest addresses
    upgrade_env.assign(seed["id"], {"nodes_ids": [second["id"]]})  # provisioning allocates the seed's VIPs
    response = upgrade_env.assign(seed["id"], {"nodes_ids": [first["id"]], "reprovision": False}, status=409)
    assert error(response) == (
        "Some addresses of the nodes are already used in seed cluster {0}; copy the VIPs of the original "
        "cluster first: POST /clusters/{0}/upgrade/vips".format(seed["id"]))
    assert any("of node {0} is held in seed network".format(first["id"]) in e and "VIP 'management'" in e
               for e in response["errors"])


@pytest.mark.parametrize("body, message", [
    ("", "Empty request received"),
    ("nope", "Invalid json received"),
    ("{}", "'nodes_ids' is a required property"),
    ('{"nodes_ids": []}', "[] should be non-empty (at 'nodes_ids')"),
    ('{"nodes_ids": [1, 1]}', "has non-unique elements"),
    ('{"nodes_ids": [1], "roles": ["a", "a"]}', "has non-unique elements"),
    ('{"nodes_ids": [1], "reprovision": "yes"}', "'yes' is not of type 'boolean'"),
    ('{"nodes_ids": ["x"]}', "'x' is not of type 'integer'"),
    ('{"nodes_ids": [99999999999]}', "is greater than the maximum of 2147483647"),
])
def test_assign_with_malformed_body_is_400(upgrade_env, seed, body, message):
    response = upgrade_env.app.post(ASSIGN.format(seed["id"]), body, headers={"Content-Type": "application/json"},
                                    status=400)
    assert message in error(response.json)


def test_failed_assigns_leave_the_database_unchanged(upgrade_env, seed, env, db_dump):
    first, second = upgrade_env.controllers
    upgrade_env.assign(seed["id"], {"nodes_ids": [second["id"]]})
    stranger = env.create_node(status="ready")
    before = db_dump()
    ok, compute = first["id"], upgrade_env.compute["id"]
    upgrade_env.assign(seed["id"], {"nodes_ids": [compute, 4242]}, status=404)
    upgrade_env.assign(seed["id"], {"nodes_ids": [compute, stranger["id"]]}, status=405)
    upgrade_env.assign(seed["id"], {"nodes_ids": [compute, second["id"]]}, status=400)
    upgrade_env.assign(seed["id"], {"nodes_ids": [compute, ok], "roles": ["compute"]}, status=400)
    upgrade_env.assign(seed["id"], {"nodes_ids": [compute, ok], "reprovision": False}, status=409)
    assert db_dump() == before


def test_every_other_failed_assign_leaves_the_database_unchanged(upgrade_env, seed, env, db_dump):
    first, second = upgrade_env.controllers
    compute = upgrade_env.compute["id"]
    env.app.put_json("/api/v1/nodes/{0}/".format(compute), {"status": "error", "error_type": "provision"})
    upgrade_env.assign(seed["id"], {"nodes_ids": [second["id"]]})
    before = db_dump()
    for body in ({"nodes_ids": [first["id"], compute], "reprovision": False},
                 {"nodes_ids": [first["id"]], "roles": ["no-such-role"], "reprovision": False},
                 {"nodes_ids": [first["id"]], "roles": ["controller", "compute"], "reprovision": False},
                 {"nodes_ids": []}, {"node_id": "1"}):
        upgrade_env.assign(seed["id"], body, status=400)
    upgrade_env.assign(upgrade_env.orig["id"], {"nodes_ids": [first["id"]]}, status=400)
    upgrade_env.assign(seed["id"], {"nodes_ids": [first["id"]]}, status=409)
    assert db_dump() == before


def test_assign_query_count_does_not_grow_per_node(env, query_counter):
    def moved(count):
        release_old = env.create_release(name="Old {0}".format(count), version="liberty-8.0")
        release_new = env.create_release(name="New {0}".format(count), version="mitaka-9.0")
        orig = env.create_cluster(release_id=release_old["id"], name="orig-{0}".format(count))
        ids = [env.create_node(cluster_id=orig["id"], roles=["compute"], status="ready")["id"]
               for _ in range(count)]
        seed = env.app.post_json("/api/v1/clusters/{0}/upgrade/clone/".format(orig["id"]),
                                 {"name": "seed-{0}".format(count), "release_id": release_new["id"]}).json
        with query_counter.counting():
            env.app.post_json(ASSIGN.format(seed["id"]), {"nodes_ids": ids}, status=202)
        return query_counter.count

    one, five = moved(1), moved(5)
    assert one > 0
    assert five == one, "moving 5 nodes took {0} queries, moving 1 took {1}".format(five, one)
