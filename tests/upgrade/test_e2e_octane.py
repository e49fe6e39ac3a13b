"""Octane's upgrade sequence through the command line against a real ``nailgun-api`` process.

The command lines run through fuel-ext's ``main(argv)`` in this process. Octane's sequence also
runs end to end through the real ``fuel2`` when ``FUEL2_BIN`` names a python-fuelclient ``fuel2``
that has this package installed next to it, and the error reporting through the ``fuel-ext``
script (fuel2's is tested with the ConfigDB commands, which fail the same way: through cliff).
"""
import json
import os
import uuid

import pytest
import yaml

from nailgun_host.db.models import Cluster, Task
from nailgun_host.objects import task as task_obj
from nailgun_platform.secrets.masking import MASK
from nailgun_ext_upgrade.models import UpgradeRelation
from tests.auth_servers import (  # noqa: F401 (fixtures, for server_and_login)
    keystone_server, local_server, server_and_login)
from tests.commands import FUEL_EXT, IN_PROCESS, run_command

IN_PROCESS_CLIENT = pytest.param(IN_PROCESS, id="in-process")
FUEL_EXT_CLIENT = pytest.param(FUEL_EXT, id="fuel-ext")
FUEL2_CLIENT = pytest.param(os.environ.get("FUEL2_BIN"), id="fuel2", marks=pytest.mark.skipif(
    not os.environ.get("FUEL2_BIN"), reason="FUEL2_BIN does not name a python-fuelclient fuel2"))


class CLI:
    """Command lines against the live server, found through ``SERVER_ADDRESS``/``SERVER_PORT``."""

    def __init__(self, binary, server, login=None):
        self.binary = binary
        self.environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        self.environ.update(login or {}, SERVER_ADDRESS="127.0.0.1", SERVER_PORT=str(server.port))

    def run(self, *args, expect_ok=True):
        result = run_command(self.binary, args, self.environ, timeout=60)
        if expect_ok:
            assert result.returncode == 0, result.stderr
        return result

    def json(self, *args):
        return json.loads(self.run(*(args + ("-f", "json"))).stdout)


def orchestrator_reports_provisioned(session, seed_id):
    """Astute's provision_resp through the orchestrator seam: the task is done, its nodes provisioned."""
    session.expire_all()
    task = session.query(Task).filter_by(cluster_id=seed_id, name="provision", status="pending").one()
    task_obj.receive({"task_uuid": task.uuid, "status": "ready"})
    session.commit()


def addresses(env, node_id):
    return sorted((d["name"], d["ip"]) for d in env.get_node(node_id)["network_data"])


def vips(app, cluster_id):
    return sorted((v["vip_name"], v["ip_addr"]) for v in
                  app.get("/api/v1/clusters/{0}/network_configuration/ips/vips/".format(cluster_id)).json)


@pytest.fixture
def deployed_orig(env):
    """A deployed Liberty environment (VIPs allocated) with two controllers and a compute."""
    old = env.create_release(name="Liberty on Ubuntu 14.04", version="liberty-8.0")
    base = env.create_release(name="Mitaka on Ubuntu 14.04", version="mitaka-9.0")
    orig = env.create_cluster(release_id=old["id"], name="production")
    controllers = [env.create_node(cluster_id=orig["id"], roles=["controller"], status="ready")["id"]
                   for _ in range(2)]
    compute = env.create_node(cluster_id=orig["id"], roles=["compute"], status="ready")["id"]
    env.app.put_json("/api/v1/clusters/{0}/".format(orig["id"]), {"status": "operational"})
    vips(env.app, orig["id"])
    return orig, base, controllers, compute


@pytest.mark.parametrize("auth_mode", ["none", "keystone", "local"])
@pytest.mark.parametrize("binary", [IN_PROCESS_CLIENT, FUEL2_CLIENT])
def test_octane_upgrade_sequence(binary, auth_mode, request, env, session, deployed_orig):
    """Octane's command lines; with authentication, fuel2 logs in with OS_USERNAME/OS_PASSWORD as the admin
    user, and fuel-ext with a Keystone session (keystone mode) or Basic (local mode)."""
    cli = CLI(binary, *server_and_login(request, auth_mode, "fuel2" if binary != IN_PROCESS else "fuel-ext"))
    orig, base, controllers, compute = deployed_orig
    before = {node_id: addresses(env, node_id) for node_id in controllers + [compute]}
    orig_vips = vips(env.app, orig["id"])

    release_id = int(cli.run("release", "clone", "-f", "value", "-c", "id", orig["id"], base["id"]).stdout)
    release = env.app.get("/api/v1/releases/{0}/".format(release_id)).json
    assert release["name"] == "Mitaka on Ubuntu 14.04 Upgrade ({0})".format(orig["release_id"])

    seed = cli.json("env", "clone", orig["id"], uuid.uuid4().hex, release_id)
    assert (seed["release_id"], seed["fuel_version"], seed["status"]) == (release_id, "9.0", "new")
    seed_id = seed["id"]
    relation = session.query(UpgradeRelation).one()
    assert (relation.orig_cluster_id, relation.seed_cluster_id) == (orig["id"], seed_id)
    orig_row, seed_row = session.get(Cluster, orig["id"]), session.get(Cluster, seed_id)
    assert seed_row.generated_attributes["mysql"] == orig_row.generated_attributes["mysql"]
    session.rollback()  # SQLite: a test transaction left open would hold the write lock the server needs

    model = cli.json("env", "model", "show", seed_id)
    assert model["release"]["id"] == release_id and model["attributes"]["generated"]["mysql"]["root_password"] == MASK
    assert cli.run("env", "model", "show", seed_id, "--path", "/node_groups/default/networks/public/cidr",
                   "-f", "value").stdout.strip() == "172.16.0.0/24"

    for controller in controllers:  # octane upgrade-node: move, wait for provisioning, copy VIPs
        moved = cli.json("env", "move", "node", seed_id, controller)
        assert [(n["id"], n["status"], n["pending_roles"]) for n in moved] == [
            (controller, "provisioning", ["controller"])]
        orchestrator_reports_provisioned(session, seed_id)
        copied = cli.json("env", "copy", "vips", seed_id)
        assert sorted((v["vip_name"], v["ip_addr"]) for v in copied) == orig_vips

    moved = cli.json("env", "move", "node", "--no-provision", "--roles", "compute", seed_id, compute)
    assert [(n["id"], n["status"], n["roles"], n["cluster"]) for n in moved] == [(compute, "ready", ["compute"], seed_id)]

    nodes = env.app.get("/api/v1/nodes/?cluster_id={0}".format(seed_id)).json
    assert sorted(n["id"] for n in nodes) == sorted(controllers + [compute])
    for node_id, expected in before.items():
        assert addresses(env, node_id) == expected
    assert vips(env.app, seed_id) == orig_vips
    assert env.app.get("/api/v1/nodes/?cluster_id={0}".format(orig["id"])).json == []


@pytest.mark.parametrize("binary", [IN_PROCESS_CLIENT, FUEL_EXT_CLIENT])
def test_cli_errors_print_the_server_message(binary, live_server, env, deployed_orig):
    cli = CLI(binary, live_server)
    orig, base, controllers, _compute = deployed_orig
    seed = cli.json("env", "clone", orig["id"], "seed", base["id"])
    again = cli.run("env", "clone", orig["id"], "other", base["id"], expect_ok=False)
    assert again.returncode != 0
    assert "is already involved in the upgrade routine. (405)" in again.stderr
    wrong = cli.run("env", "move", "node", orig["id"], controllers[0], expect_ok=False)
    assert wrong.returncode != 0 and "Given cluster is not seed cluster (400)" in wrong.stderr
    assert cli.run("env", "copy", "vips", 999, expect_ok=False).stderr.strip().endswith("Cluster not found (404)")
    assert seed["name"] == "seed"


def test_model_edit_from_a_yaml_file(live_server, env, deployed_orig, tmp_path):
    cli = CLI(IN_PROCESS, live_server)
    orig, base, _controllers, _compute = deployed_orig
    seed = cli.json("env", "clone", orig["id"], "seed", base["id"])
    patch = tmp_path / "patch.yaml"
    patch.write_text(yaml.safe_dump([
        {"op": "replace", "path": "/name", "value": "seed-reviewed"},
        {"op": "replace", "path": "/attributes/editable/common/debug", "value": True}]))
    result = cli.json("env", "model", "edit", seed["id"], patch)
    assert result["name"] == "seed-reviewed" and result["attributes"]["editable"]["common"]["debug"] is True
    forbidden = tmp_path / "forbidden.json"
    forbidden.write_text(json.dumps([{"op": "replace", "path": "/release/id", "value": 1}]))
    refused = cli.run("env", "model", "edit", seed["id"], forbidden, expect_ok=False)
    assert refused.returncode != 0
    assert "Operation 'replace' is not allowed on '/release/id'; allowed operations: none (403)" in refused.stderr


@pytest.mark.parametrize("binary", [IN_PROCESS_CLIENT, FUEL_EXT_CLIENT])
def test_model_edit_names_a_patch_file_it_cannot_read(binary, live_server, tmp_path):
    cli = CLI(binary, live_server)
    broken = tmp_path / "broken.yaml"
    broken.write_text("- op: replace\n  path: [/name\n")
    for path in (broken, tmp_path / "missing.yaml"):
        result = cli.run("env", "model", "edit", 1, path, expect_ok=False)
        assert result.returncode == 1
        assert "Cannot read the patch file {0}: ".format(path) in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    assert 'in "{0}", line 2'.format(broken) in cli.run("env", "model", "edit", 1, broken, expect_ok=False).stderr
