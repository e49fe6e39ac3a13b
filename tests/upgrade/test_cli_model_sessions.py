"""Seed 000's ``environment-model-show|edit`` as ``fuel2 env model show|edit --session``, with ``env session
...`` and ``env deployments``, through fuel-ext and the real fuel2 against a real ``nailgun-api``."""
import json
import os

import pytest

from tests.commands import IN_PROCESS, run_command

FUEL2 = pytest.param(os.environ.get("FUEL2_BIN"), id="fuel2", marks=pytest.mark.skipif(
    not os.environ.get("FUEL2_BIN"), reason="FUEL2_BIN does not name a python-fuelclient fuel2"))


class CLI:
    """Command lines against the live server, found through ``SERVER_ADDRESS``/``SERVER_PORT``."""

    def __init__(self, binary, server):
        self.binary = binary
        self.environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_") and k != "FUEL_SESSION"}
        self.environ.update(SERVER_ADDRESS="127.0.0.1", SERVER_PORT=str(server.port))

    def __call__(self, *args, stdin=None, ok=True):
        result = run_command(self.binary, args, self.environ, stdin=stdin, timeout=60)
        if ok:
            assert result.returncode == 0, (args, result.stderr)
        return result

    def json(self, *args):
        return json.loads(self(*args, "-f", "json").stdout)


def rename(name):
    return json.dumps([{"op": "replace", "path": "/name", "value": name}])


@pytest.mark.parametrize("binary", [pytest.param(IN_PROCESS, id="in-process"), FUEL2])
def test_a_model_edit_staged_in_a_session_shows_only_through_it_until_deployed(binary, live_server, env, tmp_path):
    cluster_id = env.create()["id"]
    name = env.app.get("/api/v1/clusters/{0}/model/name".format(cluster_id)).json
    cli, cluster = CLI(binary, live_server), str(cluster_id)
    session_id = cli("env", "session", "open", "--env", cluster, "-f", "value", "-c", "id").stdout.strip()
    patch = tmp_path / "rename.json"
    patch.write_text(rename("reviewed"))
    assert cli.json("env", "model", "edit", cluster, patch, "--session", session_id)["name"] == "reviewed"

    def shown(*args):
        return cli("env", "model", "show", cluster, "--path", "/name", "-f", "value", *args).stdout.strip()
    assert shown() == name
    assert shown("--session", session_id) == "reviewed"
    cli.environ["FUEL_SESSION"] = session_id
    assert shown() == "reviewed"
    cli("env", "model", "edit", cluster, "-", stdin=rename("reviewed-2"))  # from stdin, staged through FUEL_SESSION
    del cli.environ["FUEL_SESSION"]
    assert shown() == name

    diff = cli.json("env", "session", "diff", "--env", cluster, session_id)
    assert [(row["document"], row["op"], row["path"], row["value"]) for row in diff] == [
        ({"type": "model"}, "replace", "/name", "reviewed-2")]
    table = cli("env", "session", "show", "--env", cluster, session_id).stdout
    assert "| documents        | the environment model: /name" in table
    deployed = cli.json("env", "session", "deploy", "--env", cluster, session_id)
    assert deployed["state"] == "deployed"
    assert shown() == "reviewed-2"
    after = cli("env", "model", "show", cluster, "--path", "/name", "-f", "value", "--session", session_id)
    assert after.stdout.strip() == "reviewed-2"
    assert "Session {0} is deployed: this is the current state".format(session_id) in after.stderr
    closed = cli("env", "model", "edit", cluster, patch, "--session", session_id, ok=False)
    assert closed.returncode == 1 and "(403)" in closed.stderr and "deployed" in closed.stderr
    deployments = cli.json("env", "deployments", cluster, "--diff")
    assert [d["id"] for d in deployments] == [session_id]
    assert [doc["document"] for doc in deployments[0]["documents"]] == [{"type": "model"}]
    assert deployments[0]["diff"][0]["patch"] == [{"op": "replace", "path": "/name", "value": "reviewed-2"}]


def test_the_second_session_on_the_model_gets_409_naming_it(live_server, env):
    cluster = str(env.create()["id"])
    cli = CLI(IN_PROCESS, live_server)
    first, second = (cli("env", "session", "open", "--env", cluster, "-f", "value", "-c", "id").stdout.strip()
                     for _ in range(2))
    cli("env", "model", "edit", cluster, "-", "--session", first, stdin=rename("first"))
    cli("env", "model", "edit", cluster, "-", "--session", second, stdin=rename("second"))
    listed = cli.json("env", "session", "list", "--env", cluster)
    assert sorted(s["id"] for s in listed) == sorted([first, second])
    revision = cli.json("env", "session", "deploy", "--env", cluster, first)["revision"]
    refused = cli("env", "session", "deploy", "--env", cluster, second, ok=False)
    assert refused.returncode == 1 and "(409)" in refused.stderr
    assert "  the environment model: changed in revision {0}".format(revision) in refused.stderr
    assert cli("env", "model", "show", cluster, "--path", "/name", "-f", "value").stdout.strip() == "first"
    third = cli("env", "session", "open", "--env", cluster, "-f", "value", "-c", "id").stdout.strip()
    assert cli("env", "session", "abandon", "--env", cluster, third, "-f", "value", "-c", "state").stdout == \
        "abandoned\n"
    forbidden = cli("env", "model", "edit", cluster, "-", stdin=json.dumps(
        [{"op": "replace", "path": "/release/id", "value": 1}]), ok=False)
    assert forbidden.returncode == 1 and "(403)" in forbidden.stderr
