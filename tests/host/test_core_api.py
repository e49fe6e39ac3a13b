"""The core objects through the REST API: releases, clusters, nodes, networks, tasks."""
import ipaddress

import pytest
from hypothesis import HealthCheck, given, settings as settings_profile, strategies as st

from nailgun_host import errors, orchestrator, validation
from nailgun_host.db.models import Cluster, IPAddr, Task
from nailgun_host.objects import release as release_obj
from nailgun_host.objects import task as task_obj


def test_releases_are_ordered_by_real_versions(app, env):
    for version in ("liberty-8.0", "newton-10.0", "mitaka-9.0", "kilo-7.0"):
        env.create_release(name="R " + version, version=version)
    listed = [r["version"] for r in app.get("/api/v1/releases/").json]
    assert listed == ["newton-10.0", "mitaka-9.0", "liberty-8.0", "kilo-7.0"]


def test_version_parsing_compares_numbers_not_strings():
    assert release_obj.parse_version("10.0") > release_obj.parse_version("9.0")
    assert release_obj.parse_version("9.0") == release_obj.parse_version("9")
    assert release_obj.parse_version("6.1") > release_obj.parse_version("6.0.1")


def test_release_gets_default_metadata_and_name_version_are_unique(app, env):
    release = env.create_release()
    assert "controller" in release["roles_metadata"]
    assert release["environment_version"] == "9.0" and release["is_deployable"] is True
    response = app.post_json("/api/v1/releases/", {"name": release["name"], "version": release["version"],
                                                   "operating_system": "Ubuntu"}, status=409)
    assert "already exists" in response.json["message"]


def test_cluster_generated_credentials_are_created_once_and_never_served(app, env, session):
    cluster = env.create_cluster()
    stored = session.get(Cluster, cluster["id"]).generated_attributes
    password = stored["mysql"]["root_password"]
    assert isinstance(password, str) and len(password) == 24
    assert "{" not in stored["provision"]["image_data"]["/"]["uri"]
    app.patch_json("/api/v1/clusters/{0}/attributes/".format(cluster["id"]),
                   {"editable": {"common": {"debug": {"value": True}}}})
    session.expire_all()
    assert session.get(Cluster, cluster["id"]).generated_attributes["mysql"]["root_password"] == password
    for url in ("/api/v1/clusters/{0}/", "/api/v1/clusters/{0}/attributes/"):
        assert password not in app.get(url.format(cluster["id"])).text
    assert app.get("/api/v1/clusters/{0}/attributes/".format(cluster["id"])).json[
        "editable"]["common"]["debug"]["value"] is True


def test_cluster_names_are_unique(app, env):
    cluster = env.create_cluster(name="env")
    response = app.post_json("/api/v1/clusters/", {"name": "env", "release_id": cluster["release_id"]}, status=409)
    assert response.json["message"] == "Environment with this name 'env' already exists."


def test_cluster_on_a_missing_release_is_404(app):
    response = app.post_json("/api/v1/clusters/", {"name": "env", "release_id": 7}, status=404)
    assert response.json["message"] == "Release with id 7 not found"


def _addresses(node, network):
    return [d["ip"].split("/")[0] for d in node["network_data"] if d["name"] == network]


def test_assigned_nodes_get_addresses_in_the_cluster_networks(app, env):
    cluster = env.create_cluster()
    config = env.network_configuration(cluster["id"])
    cidrs = {n["name"]: ipaddress.ip_network(n["cidr"]) for n in config["networks"] if n["cidr"]}
    controller = env.create_node(cluster_id=cluster["id"], roles=["controller"])
    compute = env.create_node()
    app.post_json("/api/v1/clusters/{0}/assignment/".format(cluster["id"]),
                  [{"id": compute["id"], "roles": ["compute"]}])
    controller, compute = env.get_node(controller["id"]), env.get_node(compute["id"])
    for name in ("management", "storage", "public"):
        (address,) = _addresses(controller, name)
        assert ipaddress.ip_address(address) in cidrs[name]
    assert _addresses(compute, "public") == []
    assert _addresses(compute, "management") != _addresses(controller, "management")


def test_interfaces_get_default_network_assignments(app, env):
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["compute"])
    interfaces = app.get("/api/v1/nodes/{0}/interfaces/".format(node["id"])).json
    assigned = {i["name"]: {n["name"] for n in i["assigned_networks"]} for i in interfaces}
    assert assigned["eth0"] == {"fuelweb_admin"}
    assert {"management", "storage", "public", "private"} <= assigned["eth1"]


def test_interfaces_can_be_bonded_and_validated(app, env):
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["compute"], nics=3)
    url = "/api/v1/nodes/{0}/interfaces/".format(node["id"])
    interfaces = app.get(url).json
    networks = interfaces[1]["assigned_networks"]
    body = [{"name": "eth0", "assigned_networks": interfaces[0]["assigned_networks"]},
            {"name": "eth1", "assigned_networks": []}, {"name": "eth2", "assigned_networks": []},
            {"name": "bond0", "type": "bond", "mode": "balance-rr",
             "slaves": [{"name": "eth1"}, {"name": "eth2"}], "assigned_networks": networks}]
    result = {i["name"]: i for i in app.put_json(url, body).json}
    assert result["bond0"]["slaves"] == [{"name": "eth1"}, {"name": "eth2"}]
    assert result["bond0"]["assigned_networks"] == networks
    twice = [dict(body[0]), dict(body[1], assigned_networks=body[0]["assigned_networks"])]
    response = app.put_json(url, twice, status=400)
    assert "more than one interface" in response.json["message"]
    assert {i["name"] for i in app.get(url).json} == {"eth0", "eth1", "eth2", "bond0"}


UNKNOWN_NETWORK = 99999
#: what may make an interfaces body wrong, one at a time (or nothing)
INTERFACE_FAULTS = ([], [], [{"name": "eth0", "assigned_networks": [{"id": UNKNOWN_NETWORK}]}],
                    [{"name": "eth9"}], [{"name": "bond1"}], [{"name": "bond1", "type": "bond"}]) + tuple(
    [{"name": "bond1", "type": "bond", "slaves": [{"name": name} for name in slaves]}]
    for slaves in (["eth1"], ["eth1", "eth9"], ["eth1", "bond0"]))


def _interfaces_refused(body, existing, allowed):
    """Whether PUT /nodes/<id>/interfaces must refuse ``body``, said as its rules: each network the node's
    (its group's or admin) and named once; a bond of two or more of the node's NICs; another name one it has."""
    seen = set()
    for spec in body:
        for ref in spec.get("assigned_networks", []):
            if ref["id"] not in allowed or ref["id"] in seen:
                return True
            seen.add(ref["id"])
        if spec.get("type", "ether") == "bond":
            slaves = [s["name"] for s in spec.get("slaves", [])]
            if len(slaves) < 2 or any(existing.get(s) != "ether" for s in slaves):
                return True
        elif spec["name"] not in existing:
            return True
    return False


def _unordered(interfaces):
    """The interfaces with their networks in id order (a PUT answers in the order given, a GET in the stored one)."""
    return {name: dict(interface, assigned_networks=sorted(interface["assigned_networks"], key=lambda n: n["id"]))
            for name, interface in interfaces.items()}


@settings_profile(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_interfaces_are_set_exactly_as_asked_or_refused_with_nothing_changed(app, env, data):
    """A valid body (each network once, bonds of the node's NICs) with at most one fault added: refused whole, or
    every interface named gets what it asks for, bonds left out go, and the others keep their networks."""
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["compute"], nics=3)
    url = "/api/v1/nodes/{0}/interfaces/".format(node["id"])
    app.put_json(url, [{"name": "bond0", "type": "bond", "slaves": [{"name": "eth1"}, {"name": "eth2"}]}])
    before = {i["name"]: i for i in app.get(url).json}
    configuration = env.network_configuration(cluster["id"])
    allowed = {n["id"] for n in configuration["networks"] if n["group_id"] == node["group_id"]}
    allowed |= {n["id"] for i in before.values() for n in i["assigned_networks"]}  # the admin network too
    ether = st.fixed_dictionaries({"name": st.sampled_from(["eth0", "eth1", "eth2"])},
                                  optional={"type": st.just("ether")})
    bond = st.fixed_dictionaries({
        "name": st.sampled_from(["bond0", "bond1", "eth1"]), "type": st.just("bond"),
        "slaves": st.sampled_from([["eth1", "eth2"], ["eth0", "eth1", "eth2"]]).map(
            lambda names: [{"name": name} for name in names])},
        optional={"mode": st.sampled_from(["balance-rr", "lacp"])})
    body = data.draw(st.lists(st.one_of(ether, bond), max_size=3), label="body")
    pool = data.draw(st.permutations(sorted(allowed)), label="networks to hand out")
    for spec in body:  # each network once, as a valid body has them
        count = data.draw(st.integers(0, 2))
        spec["assigned_networks"], pool = [{"id": network_id} for network_id in pool[:count]], pool[count:]
    twice = [{"name": "eth2", "assigned_networks": [{"id": min(allowed)}] * 2}]
    body.extend(data.draw(st.sampled_from(INTERFACE_FAULTS + (twice,)), label="fault"))
    existing = {name: interface["type"] for name, interface in before.items()}
    if _interfaces_refused(body, existing, allowed):
        app.put_json(url, body, status=400)
        assert {i["name"]: i for i in app.get(url).json} == before
        return
    after = {i["name"]: i for i in app.put_json(url, body).json}
    assert _unordered(after) == _unordered({i["name"]: i for i in app.get(url).json})
    wanted = {spec["name"]: spec for spec in body}
    assert set(after) == {name for name, kind in existing.items() if kind == "ether" or name in wanted} | set(wanted)
    for name, interface in after.items():
        asked = wanted.get(name)
        networks = asked.get("assigned_networks", []) if asked else before[name]["assigned_networks"]
        assert sorted(n["id"] for n in interface["assigned_networks"]) == sorted(n["id"] for n in networks)
        if asked and interface["type"] == "bond":
            assert interface["slaves"] == asked.get("slaves", [])
            assert interface["mode"] == asked.get("mode", (before.get(name) or {}).get("mode") or "active-backup")


def test_unassigned_nodes_release_their_addresses(app, env, session):
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["compute"])
    app.post_json("/api/v1/clusters/{0}/unassignment/".format(cluster["id"]), [{"id": node["id"]}])
    node = env.get_node(node["id"])
    assert node["cluster"] is None and node["roles"] == [] and node["status"] == "discover"
    assert [d["name"] for d in node["network_data"]] == ["fuelweb_admin"]


def test_roles_are_checked_on_assignment(app, env):
    cluster = env.create_cluster()
    node = env.create_node()
    url = "/api/v1/clusters/{0}/assignment/".format(cluster["id"])
    response = app.post_json(url, [{"id": node["id"], "roles": ["controller", "compute"]}], status=400)
    assert response.json["message"] == "Role 'controller' in conflict with role 'compute'."
    response = app.post_json(url, [{"id": node["id"], "roles": ["wizard"]}], status=400)
    assert response.json["message"] == "['wizard'] are not valid roles for node in environment {0}".format(
        cluster["id"])
    response = app.post_json(url, [{"id": node["id"], "roles": ["mongo"]}], status=400)
    assert response.json["message"].startswith("Role 'mongo' restrictions mismatch")
    assert env.get_node(node["id"])["cluster"] is None


def test_vips_are_allocated_once_a_controller_joins(app, env):
    cluster = env.create_cluster()
    url = "/api/v1/clusters/{0}/network_configuration/ips/vips/".format(cluster["id"])
    assert app.get(url).json == []
    env.create_node(cluster_id=cluster["id"], roles=["controller"])
    vips = {v["vip_name"]: v for v in app.get(url).json}
    assert set(vips) == {"public", "vrouter_pub", "management", "vrouter"}
    config = env.network_configuration(cluster["id"])
    assert config["management_vip"] == vips["management"]["ip_addr"]
    node_ips = {d["ip"].split("/")[0] for n in app.get("/api/v1/nodes/").json for d in n["network_data"]}
    assert not node_ips & {v["ip_addr"] for v in vips.values()}


def test_network_configuration_can_be_changed_and_is_validated(app, env):
    cluster = env.create_cluster()
    url = "/api/v1/clusters/{0}/network_configuration/neutron/".format(cluster["id"])
    config = app.get(url).json
    management = next(n for n in config["networks"] if n["name"] == "management")
    change = {"id": management["id"], "cidr": "10.100.0.0/24", "vlan_start": 200,
              "ip_ranges": [["10.100.0.10", "10.100.0.20"], ["10.100.0.30", "10.100.0.40"]]}
    updated = app.put_json(url, {"networks": [change], "networking_parameters": {"vlan_range": [2000, 2010]}}).json
    management = next(n for n in updated["networks"] if n["name"] == "management")
    assert management["cidr"] == "10.100.0.0/24" and management["vlan_start"] == 200
    assert management["ip_ranges"] == change["ip_ranges"]
    assert updated["networking_parameters"]["vlan_range"] == [2000, 2010]
    for bad, message in ((dict(change, cidr="10.100.0.0/33"), "Invalid CIDR"),
                         (dict(change, ip_ranges=[["10.200.0.1", "10.200.0.5"]]), "outside the CIDR"),
                         (dict(change, ip_ranges=[["10.100.0.9", "10.100.0.1"]]), "reversed"),
                         (dict(change, id=9999), "does not belong")):
        response = app.put_json(url, {"networks": [bad]}, status=400)
        assert message in response.json["message"]
    assert app.get(url).json == updated


@pytest.mark.parametrize("cidr", ["10.100.0.7/32", "10.100.0.6/31"])
def test_a_cidr_with_no_room_for_the_nodes_range_is_400(app, env, cidr):
    """Management takes its nodes' range from its CIDR, less network and broadcast: /32 and /31 leave none."""
    cluster = env.create_cluster()
    url = "/api/v1/clusters/{0}/network_configuration/neutron/".format(cluster["id"])
    before = app.get(url).json
    management = next(n for n in before["networks"] if n["name"] == "management")
    response = app.put_json(url, {"networks": [{"id": management["id"], "cidr": cidr}]}, status=400)
    assert "leaves no addresses" in response.json["message"]
    assert app.get(url).json == before


@settings_profile(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(address=st.integers(1, 2 ** 128 - 1).map(ipaddress.IPv6Address), prefix=st.integers(64, 126),
       field=st.sampled_from(["cidr", "gateway", "ip_ranges"]))
def test_network_configuration_refuses_ipv6_as_the_upgrade_model_does(app, env, address, prefix, field):
    """The host's networks are IPv4 (a release's, the upgrade's model): an IPv6 CIDR, gateway or range given
    through network_configuration is a 400, and nothing changes."""
    from nailgun_ext_upgrade.schemas import MODEL_NETWORK

    cluster = env.create_cluster()
    url = "/api/v1/clusters/{0}/network_configuration/neutron/".format(cluster["id"])
    before = app.get(url).json
    management = next(n for n in before["networks"] if n["name"] == "management")
    value = {"cidr": str(ipaddress.IPv6Network((address, prefix), strict=False)), "gateway": str(address),
             "ip_ranges": [[str(address), str(address)]]}[field]
    refused = app.put_json(url, {"networks": [{"id": management["id"], field: value}]}, status=400).json
    assert "(at 'networks/0/{0}".format(field) in refused["message"], refused
    assert app.get(url).json == before
    model = {key: management[key] for key in MODEL_NETWORK["required"]}  # the network as the upgrade's model has it
    validation.validate_schema(model, MODEL_NETWORK)
    with pytest.raises(errors.InvalidData):
        validation.validate_schema(dict(model, **{field: value}), MODEL_NETWORK)


@pytest.mark.parametrize("slave", [{"name": {"a": 1}}, {"name": ["eth1"]}, {"name": ""}])
def test_a_bond_slave_name_is_a_string(app, env, slave):
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["compute"], nics=3)
    url = "/api/v1/nodes/{0}/interfaces/".format(node["id"])
    before = app.get(url).json
    body = [{"name": "eth0"}, {"name": "bond0", "type": "bond", "mode": "balance-rr",
                               "slaves": [slave, {"name": "eth2"}]}]
    app.put_json(url, body, status=400)
    assert app.get(url).json == before


def test_networking_parameters_are_validated(app, env):
    cluster = env.create_cluster()
    url = "/api/v1/clusters/{0}/network_configuration/neutron/".format(cluster["id"])
    before = app.get(url).json
    for bad, message in (({"vlan_range": "x"}, "'x' is not of type 'array'"),
                         ({"vlan_range": [1000, 99999]}, "greater than the maximum of 4094"),
                         ({"floating_ranges": [["172.16.0.200"]]}, "is too short"),
                         ({"internal_cidr": "10.0.0.0/99"}, "Invalid internal CIDR '10.0.0.0/99'"),
                         ({"internal_cidr": "10.0.0.5/24"}, "Invalid internal CIDR '10.0.0.5/24'"),
                         ({"internal_gateway": "10.9.9.1"}, "Address '10.9.9.1' is outside the internal CIDR"),
                         ({"floating_ranges": [["172.16.0.200", "172.16.0.130"]]}, "reversed")):
        response = app.put_json(url, {"networking_parameters": bad}, status=400)
        assert message in response.json["message"], (bad, response.json)
    assert app.get(url).json == before


def test_node_groups_get_their_own_networks(app, env):
    cluster = env.create_cluster()
    group = app.post_json("/api/v1/nodegroups/", {"cluster_id": cluster["id"], "name": "rack-2"}, status=201).json
    networks = env.network_configuration(cluster["id"])["networks"]
    assert {n["name"] for n in networks if n["group_id"] == group["id"]} >= {"management", "public", "storage"}
    app.post_json("/api/v1/nodegroups/", {"cluster_id": cluster["id"], "name": "rack-2"}, status=409)
    app.delete("/api/v1/nodegroups/{0}/".format(group["id"]), status=204)
    assert not [n for n in env.network_configuration(cluster["id"])["networks"] if n["group_id"] == group["id"]]


def test_provisioning_records_the_orchestrator_message_and_blocks_a_second_run(app, env, session):
    cluster = env.create_cluster()
    nodes = [env.create_node(cluster_id=cluster["id"], roles=["controller"]) for _ in range(2)]
    response = app.put("/api/v1/clusters/{0}/provision/?nodes={1}".format(cluster["id"], nodes[0]["id"]),
                       status=202)
    task = response.json
    assert task["name"] == "provision" and task["status"] == "pending"
    message = session.get(Task, task["id"]).cache
    assert message["method"] == "native_provision"
    assert [n["uid"] for n in message["args"]["provisioning_info"]["nodes"]] == [str(nodes[0]["id"])]
    assert env.get_node(nodes[0]["id"])["status"] == "provisioning"
    again = app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"]), status=409)
    assert "already running" in again.json["message"]
    assert app.get("/api/v1/tasks/?cluster_id={0}".format(cluster["id"])).json == [task]


def test_deleting_a_cluster_returns_its_nodes_to_discovery(app, env, session):
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["controller"])
    app.delete("/api/v1/clusters/{0}/".format(cluster["id"]), status=204)
    assert env.get_node(node["id"])["cluster"] is None
    assert session.query(IPAddr).filter(IPAddr.vip_name.isnot(None)).count() == 0
    app.get("/api/v1/clusters/{0}/".format(cluster["id"]), status=404)


def test_node_macs_are_unique(app, env):
    node = env.create_node()
    response = app.post_json("/api/v1/nodes/", {"mac": node["mac"].upper()}, status=409)
    assert "already exists" in response.json["message"]


def _receive(session, response):
    """The orchestrator's answer, in a transaction of its own as Astute's would be."""
    try:
        return task_obj.to_dict(task_obj.receive(response))
    finally:
        session.commit()


def test_the_orchestrator_answer_finishes_provisioning(app, env, session):
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["controller"])
    task = app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"]), status=202).json
    running = _receive(session, {"task_uuid": task["uuid"], "status": "running", "progress": 40})
    assert (running["status"], running["progress"], running["time_end"]) == ("running", 40, None)
    app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"]), status=409)
    done = _receive(session, {"task_uuid": task["uuid"], "status": "ready"})
    assert (done["status"], done["progress"]) == ("ready", 100) and done["time_end"]
    assert env.get_node(node["id"])["status"] == "provisioned"
    assert app.get("/api/v1/clusters/{0}/".format(cluster["id"])).json["status"] == "partially_deployed"
    assert app.get("/api/v1/tasks/{0}/".format(task["id"])).json == done


def test_the_orchestrator_answer_finishes_a_deployment_or_fails_it(app, env, session):
    cluster = env.create_cluster()
    deployed = env.create_node(cluster_id=cluster["id"], pending_roles=["controller"], status="provisioned")
    task = app.put("/api/v1/clusters/{0}/deploy/".format(cluster["id"]), status=202).json
    _receive(session, {"task_uuid": task["uuid"], "status": "ready"})
    node = env.get_node(deployed["id"])
    assert (node["status"], node["roles"], node["pending_roles"], node["pending_addition"]) == (
        "ready", ["controller"], [], False)
    assert app.get("/api/v1/clusters/{0}/".format(cluster["id"])).json["status"] == "operational"
    failing = env.create_node(cluster_id=cluster["id"], pending_roles=["compute"], status="provisioned")
    task = app.put("/api/v1/clusters/{0}/deploy/?nodes={1}".format(cluster["id"], failing["id"]), status=202).json
    _receive(session, {"task_uuid": task["uuid"], "status": "error", "message": "puppet failed"})
    node = env.get_node(failing["id"])
    assert (node["status"], node["error_type"]) == ("error", "deploy")
    assert env.get_node(deployed["id"])["status"] == "ready"
    assert app.get("/api/v1/clusters/{0}/".format(cluster["id"])).json["status"] == "error"
    assert app.get("/api/v1/tasks/{0}/".format(task["id"])).json["message"] == "puppet failed"


class PluggedOrchestrator:
    """An orchestrator of a deployment's own, plugged in as the seam says (``orchestrator.set_orchestrator``)."""

    def __init__(self):
        self.casts, self.reachable = [], True

    def cast(self, task, message):
        if not self.reachable:
            raise errors.ServiceUnavailable("The orchestrator cannot be reached")
        self.casts.append((task.uuid, message["method"], message["args"]["task_uuid"]))


@pytest.fixture
def plugged_orchestrator():
    plugged = PluggedOrchestrator()
    orchestrator.set_orchestrator(plugged)
    yield plugged
    orchestrator.set_orchestrator(None)


def test_a_plugged_in_orchestrator_gets_each_task_and_one_it_cannot_reach_leaves_nothing(
        app, env, session, plugged_orchestrator):
    cluster = env.create_cluster()
    node = env.create_node(cluster_id=cluster["id"], roles=["controller"])
    plugged_orchestrator.reachable = False
    response = app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"]), status=503)
    assert response.json["message"] == "The orchestrator cannot be reached"
    assert app.get("/api/v1/tasks/?cluster_id={0}".format(cluster["id"])).json == []
    assert env.get_node(node["id"])["status"] == node["status"] != "provisioning"
    assert app.get("/api/v1/clusters/{0}/".format(cluster["id"])).json["status"] == "new"
    plugged_orchestrator.reachable = True
    task = app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"]), status=202).json
    assert plugged_orchestrator.casts == [(task["uuid"], "native_provision", task["uuid"])]
    assert env.get_node(node["id"])["status"] == "provisioning"
    assert session.get(Task, task["id"]).cache == {}  # the default orchestrator, which records it, is out


@pytest.mark.parametrize("response, status", [
    ({"task_uuid": "no-such-task", "status": "ready"}, 404), ({"status": "finished"}, 400)])
def test_the_orchestrator_answer_names_a_known_task_and_status(app, env, session, response, status):
    cluster = env.create_cluster()
    env.create_node(cluster_id=cluster["id"], roles=["controller"])
    task = app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"]), status=202).json
    with pytest.raises(errors.NailgunError) as raised:
        _receive(session, dict({"task_uuid": task["uuid"]}, **response))
    assert raised.value.status == status
    session.rollback()
    assert app.get("/api/v1/tasks/{0}/".format(task["id"])).json["status"] == "pending"


@pytest.mark.parametrize("query, status", [("", 400), ("?force=0", 400), ("?force", 204), ("?force=true", 204),
                                           ("?force=maybe", 400)])
def test_a_running_task_is_deleted_only_when_forced(app, env, query, status):
    cluster = env.create_cluster()
    env.create_node(cluster_id=cluster["id"], roles=["controller"])
    task = app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"]), status=202).json
    app.delete("/api/v1/tasks/{0}/{1}".format(task["id"], query), status=status)
    app.get("/api/v1/tasks/{0}/".format(task["id"]), status=404 if status == 204 else 200)
