"""``fuel2 task list|show`` (python-fuelclient's own commands, reading ``/transactions/``) follow the
provisioning task that ``fuel2 env move node`` starts, against a real nailgun-api; ``/transactions``
answers bad filters with JSON errors."""
import re

import pytest

from tests.upgrade import test_e2e_octane
from tests.upgrade.test_e2e_octane import CLI, FUEL2_CLIENT, orchestrator_reports_provisioned

deployed_orig = test_e2e_octane.deployed_orig  # the fixture: a deployed orig with two controllers and a compute


@pytest.mark.parametrize("binary", [FUEL2_CLIENT])
def test_fuel2_task_list_and_show_follow_the_provisioning_of_moved_nodes(binary, live_server, env, session,
                                                                           deployed_orig):
    cli = CLI(binary, live_server)
    orig, base, controllers, _compute = deployed_orig
    seed_id = cli.json("env", "clone", orig["id"], "seed", base["id"])["id"]
    assert cli.json("task", "list") == []

    moved = cli.run("env", "move", "node", seed_id, controllers[0], "-f", "json")
    found = re.search(r"Provisioning task (\d+) is pending: follow it with 'fuel2 task show (\d+)'", moved.stderr)
    assert found and found.group(1) == found.group(2), moved.stderr
    task_id = int(found.group(1))

    (listed,) = cli.json("task", "list")
    assert (listed["id"], listed["name"], listed["status"], listed["cluster"], listed["progress"]) == (
        task_id, "provision", "pending", seed_id, 0)
    assert [t["id"] for t in cli.json("task", "list", "--env", seed_id, "--statuses", "pending", "running",
                                      "--names", "provision")] == [task_id]
    assert cli.json("task", "list", "--env", orig["id"]) == []
    assert cli.json("task", "list", "--statuses", "ready") == []
    assert cli.json("task", "list", "--names", "deployment") == []
    shown = cli.json("task", "show", task_id)
    assert (shown["id"], shown["status"], shown["cluster"]) == (task_id, "pending", seed_id)
    assert set(shown) == {"id", "uuid", "status", "name", "graph_type", "cluster", "result", "dry_run",
                          "progress", "message"}

    orchestrator_reports_provisioned(session, seed_id)
    shown = cli.json("task", "show", task_id)
    assert (shown["status"], shown["progress"]) == ("ready", 100)
    assert [t["id"] for t in cli.json("task", "list", "--statuses", "ready")] == [task_id]

    missing = cli.run("task", "show", 999, expect_ok=False)
    assert missing.returncode != 0 and "404" in missing.stderr and "Traceback" not in missing.stderr
    no_env = cli.run("task", "list", "--env", 999, expect_ok=False)
    assert no_env.returncode != 0 and "404" in no_env.stderr


def test_transactions_filter_and_refuse_bad_filters_with_json(env):
    cluster = env.create(nodes_kwargs=[{"roles": ["controller"]}])
    env.app.put("/api/v1/clusters/{0}/provision/".format(cluster["id"]), status=202)
    (task,) = env.app.get("/api/v1/transactions/").json
    assert env.app.get("/api/v1/transactions/{0}/".format(task["id"])).json == task
    assert env.app.get("/api/v1/tasks/").json == [task]
    query = "/api/v1/transactions/?cluster_id={0}&statuses=pending,running&transaction_types=provision,deployment"
    assert env.app.get(query.format(cluster["id"])).json == [task]
    assert env.app.get("/api/v1/transactions/?statuses=error").json == []
    assert env.app.get("/api/v1/transactions/?transaction_types=deployment").json == []
    bad_status = env.app.get("/api/v1/transactions/?statuses=pending,done", status=400).json
    assert bad_status["message"] == ("Unknown task statuses done; the statuses are pending, running, ready, error")
    assert env.app.get("/api/v1/transactions/?cluster_id=x", status=400).json["message"].startswith(
        "The query parameter cluster_id must be a whole number")
    assert "errors" in env.app.get("/api/v1/transactions/?cluster_id=999", status=404).json
