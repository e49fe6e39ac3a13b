"""``config session ...``, ``config patch``, ``config deployments`` and ``config changes`` (and ``env session``
on a linked environment) through fuel-ext and the real fuel2, against a real ``nailgun-api``.

Seed 001's sequence as an operator types it: two sessions stage overlapping changes, the first
deploy wins, the second is refused with the documents named and changes nothing.
"""
import json
import os
import selectors
import socket
import signal
import subprocess
import sys
import time

import pytest

from nailgun_platform.client.base import APIClient
from tests.auth import LOCAL_USERS
from tests.commands import FUEL_EXT, IN_PROCESS, ctrl_c_reaches_it
from tests.configdb_clients.conftest import FUEL2, FUEL_EXT_SCRIPT, HIERA_TREE
from tests.conftest import free_port

NOVA = ("--env", "1", "--resource", "nova")
#: the definition of ``keystone``: its admin token may only be replaced by a patch, the rest anything
KEYSTONE_POLICY = {"schema": {"type": "object", "properties": {"workers": {"type": "integer"}}},
                   "x-patch-policy": {"/admin_token": ["replace"]}}


def config_env(fuel):
    """An unlinked ConfigDB environment 1 (no cluster of that id): sessions of scope ``config``."""
    comp = json.loads(fuel("config", "comp", "create", "--name", "lcm", "--resources", "nova", "-f", "json").stdout)
    fuel("config", "def", "create", "--name", "keystone", "--component-id", comp["id"],
         "--content", json.dumps(KEYSTONE_POLICY))
    assert json.loads(fuel("config", "env", "create", "-i", comp["id"], "-l", "nodes", "-f", "json").stdout)["id"] == 1
    fuel("config", "set", *NOVA, "--format", "json", stdin='{"debug": false, "workers": 2}')


def get(fuel, *args):
    return json.loads(fuel("config", "get", *args).stdout)


def open_session(fuel, scope="config", env="1"):
    session_id = fuel(scope, "session", "open", "--env", env, "-f", "value", "-c", "id").stdout.strip()
    assert len(session_id) == 32
    return session_id


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_seed_001_sequence_first_deploy_wins(fuel):
    config_env(fuel)
    first, second = open_session(fuel), open_session(fuel)
    listed = json.loads(fuel("config", "session", "list", "--env", "1", "-f", "json").stdout)
    assert sorted(s["id"] for s in listed) == sorted([first, second])
    assert {s["state"] for s in listed} == {"open"}

    fuel("config", "set", *NOVA, "--key", "workers", "--value", "5", "--session", first)
    fuel.environ["FUEL_SESSION"] = second  # the variable stands for --session
    fuel("config", "set", *NOVA, "--key", "workers", "--value", "6")
    assert get(fuel, *NOVA) == {"debug": False, "workers": 6}  # FUEL_SESSION: the staged view
    del fuel.environ["FUEL_SESSION"]
    assert get(fuel, *NOVA) == {"debug": False, "workers": 2}  # staged changes are invisible without it
    assert get(fuel, *NOVA, "--session", first) == {"debug": False, "workers": 5}

    diff = json.loads(fuel("config", "session", "diff", "--env", "1", first, "-f", "json").stdout)
    assert [(row["document"]["resource_name"], row["op"], row["path"], row["value"]) for row in diff] == [
        ("nova", "replace", "/workers", 5)]
    table = fuel("config", "session", "diff", "--env", "1", first).stdout
    assert "| values of nova at / | replace | /workers |" in table
    shown = json.loads(fuel("config", "session", "show", "--env", "1", first, "-f", "json").stdout)
    assert shown["state"] == "open" and shown["environment_type"] == "config"
    assert [d["changed_keys"] for d in shown["documents"]] == [["/workers"]]

    deployed = json.loads(fuel("config", "session", "deploy", "--env", "1", first, "-f", "json").stdout)
    assert deployed["state"] == "deployed" and deployed["revision"] is not None
    refused = fuel("config", "session", "deploy", "--env", "1", second, ok=False)
    assert refused.returncode == 1 and refused.stdout == ""
    assert "cannot deploy" in refused.stderr and "(409)" in refused.stderr
    assert "  values of nova at /: changed in revision {0}".format(deployed["revision"]) in refused.stderr
    assert get(fuel, *NOVA) == {"debug": False, "workers": 5}  # the second session changed nothing
    invalid = fuel("config", "session", "show", "--env", "1", second, ok=False)
    assert invalid.returncode == 1 and "(403)" in invalid.stderr and "values of nova at /: changed" in invalid.stderr
    again = fuel("config", "session", "deploy", "--env", "1", first, ok=False)
    assert again.returncode == 1 and "(403)" in again.stderr


def test_sessions_on_disjoint_documents_both_deploy_and_abandon_drops_a_stage(fuel):
    config_env(fuel)
    nova, keystone, dropped = open_session(fuel), open_session(fuel), open_session(fuel)
    fuel("config", "override", *NOVA, "--key", "debug", "--value", "true", "--session", nova)
    fuel("config", "set", "--env", "1", "--resource", "keystone", "--format", "json", "--session", keystone,
         stdin='{"admin_token": "t0", "workers": 1}')
    fuel("config", "delete", *NOVA, "--key", "workers", "--session", dropped)
    assert get(fuel, *NOVA, "--raw", "--session", dropped) == {"debug": False}
    for session_id in (nova, keystone):
        assert fuel("config", "session", "deploy", "--env", "1", session_id, "-f", "value", "-c", "state").stdout \
            == "deployed\n"
    abandoned = fuel("config", "session", "abandon", "--env", "1", dropped, "-f", "value", "-c", "state")
    assert abandoned.stdout == "abandoned\n"
    assert get(fuel, *NOVA) == {"debug": True, "workers": 2}
    assert get(fuel, "--env", "1", "--resource", "keystone") == {"admin_token": "t0", "workers": 1}
    assert json.loads(fuel("config", "session", "list", "--env", "1", "-f", "json").stdout) == []
    # the deployments, newest first, each with its author, documents and (with --diff) its diff
    deployments = json.loads(fuel("config", "deployments", "--env", "1", "--diff", "-f", "json").stdout)
    assert [d["id"] for d in deployments] == [keystone, nova]
    assert deployments[0]["revision"] > deployments[1]["revision"]
    assert [d["state"] for d in deployments] == ["success", "success"]
    assert [[doc["document"]["resource_name"] for doc in d["documents"]] for d in deployments] == [
        ["keystone"], ["nova"]]
    assert deployments[1]["diff"][0]["patch"] == [{"op": "add", "path": "/debug", "value": True}]
    latest = json.loads(fuel("config", "deployments", "--env", "1", "--limit", "1", "-f", "json").stdout)
    assert [d["id"] for d in latest] == [keystone] and "diff" not in latest[0]
    older = fuel("config", "deployments", "--env", "1", "--before", deployments[0]["revision"], "-f", "value",
                 "-c", "id")
    assert older.stdout == nova + "\n"
    table = fuel("config", "deployments", "--env", "1", "--diff").stdout
    assert "overrides of nova at /: /debug" in table and "  add /debug true" in table


def test_session_errors_print_the_servers_message(fuel):
    config_env(fuel)
    unknown = fuel("config", "session", "show", "--env", "1", "0" * 32, ok=False)
    assert unknown.returncode == 1 and "(404)" in unknown.stderr
    missing = fuel("config", "session", "deploy", "--env", "1", ok=False)
    assert missing.returncode == 1 and "Give the session id (or set FUEL_SESSION)" in missing.stderr
    no_env = fuel("config", "session", "open", "--env", "9", ok=False)
    assert no_env.returncode == 1 and "(404)" in no_env.stderr
    bad_ttl = fuel("config", "session", "open", "--env", "1", "--ttl", "1", ok=False)
    assert bad_ttl.returncode == 1 and "(400)" in bad_ttl.stderr
    session_id = open_session(fuel)
    fuel("config", "session", "abandon", "--env", "1", session_id)
    closed = fuel("config", "set", *NOVA, "--key", "debug", "--value", "true", "--session", session_id, ok=False)
    assert closed.returncode == 1 and "(403)" in closed.stderr and "abandoned" in closed.stderr
    assert get(fuel, *NOVA) == {"debug": False, "workers": 2}


@pytest.mark.parametrize("fuel, auth_mode", [(IN_PROCESS, "local")], indirect=True)
def test_another_users_session_is_403_not_401(fuel, auth_mode):
    config_env(fuel)
    session_id = open_session(fuel)
    assert json.loads(fuel("config", "session", "show", "--env", "1", session_id, "-f", "json").stdout)[
        "user_id"] == "admin"
    fuel.environ.update(OS_USERNAME="member", OS_PASSWORD=LOCAL_USERS["member"])
    for command in ("show", "deploy"):
        refused = fuel("config", "session", command, "--env", "1", session_id, ok=False)
        assert refused.returncode == 1 and "(403)" in refused.stderr, refused.stderr


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_config_patch_applies_all_or_nothing(fuel, tmp_path):
    config_env(fuel)
    patch = tmp_path / "patch.yaml"
    patch.write_text("- {op: add, path: /nova, value: {cpu_allocation_ratio: 8}}\n"
                     "- {op: copy, from: /workers, path: /api_workers}\n"
                     "- {op: move, from: /debug, path: /verbose}\n")
    fuel("config", "patch", *NOVA, patch)
    assert get(fuel, *NOVA, "--raw") == {"workers": 2, "api_workers": 2, "verbose": False,
                                         "nova": {"cpu_allocation_ratio": 8}}
    fuel("config", "patch", *NOVA, "-", stdin='[{"op": "test", "path": "/workers", "value": 2},'
                                              ' {"op": "replace", "path": "/workers", "value": 4},'
                                              ' {"op": "remove", "path": "/api_workers"}]')
    history = json.loads(fuel("config", "history", *NOVA, "-f", "json").stdout)
    assert len(history) == 3  # one version per patch
    failed = fuel("config", "patch", *NOVA, "-", stdin='[{"op": "replace", "path": "/workers", "value": 9},'
                                                       ' {"op": "test", "path": "/workers", "value": 2}]', ok=False)
    assert failed.returncode == 1 and "(409)" in failed.stderr
    missing = fuel("config", "patch", *NOVA, "-", stdin='[{"op": "add", "path": "/a/b", "value": 1}]', ok=False)
    assert missing.returncode == 1 and "(404)" in missing.stderr
    assert get(fuel, *NOVA, "--raw") == {"workers": 4, "verbose": False, "nova": {"cpu_allocation_ratio": 8}}
    assert len(json.loads(fuel("config", "history", *NOVA, "-f", "json").stdout)) == 3
    unreadable = fuel("config", "patch", *NOVA, tmp_path / "none.json", ok=False)
    assert unreadable.returncode == 1 and "Cannot read the patch file {0}".format(tmp_path / "none.json") \
        in unreadable.stderr


@pytest.mark.parametrize("fuel, auth_mode", [(IN_PROCESS, "local")], indirect=True)
def test_config_patch_policy_schema_and_session(fuel, auth_mode):
    """The policy binds a member (admins, who may change it, are not bound); the admin reads the token."""
    admin, member = ({"OS_USERNAME": user, "OS_PASSWORD": LOCAL_USERS[user]} for user in ("admin", "member"))
    config_env(fuel)
    keystone = ("--env", "1", "--resource", "keystone")
    fuel("config", "set", *keystone, "--format", "json", stdin='{"admin_token": "t0", "workers": 1}')
    fuel.environ.update(member)
    forbidden = fuel("config", "patch", *keystone, "-", stdin='[{"op": "remove", "path": "/admin_token"}]', ok=False)
    assert forbidden.returncode == 1 and "(403)" in forbidden.stderr
    assert "Operation 'remove' is not allowed on '/admin_token'; allowed operations: replace, test (403)\n" \
        == forbidden.stderr
    overwritten = fuel("config", "set", *keystone, "--format", "json", stdin='{"workers": 1}', ok=False)
    assert overwritten.returncode == 1 and "x-patch-policy" in overwritten.stderr and "(403)" in overwritten.stderr
    invalid = fuel("config", "patch", *keystone, "-", stdin='[{"op": "replace", "path": "/workers", "value": "x"}]',
                   ok=False)
    assert invalid.returncode == 1 and "(400)" in invalid.stderr
    session_id = open_session(fuel)
    fuel("config", "patch", *keystone, "--session", session_id, "-",
         stdin='[{"op": "replace", "path": "/admin_token", "value": "t1"}]')
    fuel.environ.update(admin)
    assert get(fuel, *keystone) == {"admin_token": "t0", "workers": 1}
    assert get(fuel, *keystone, "--session", session_id) == {"admin_token": "t1", "workers": 1}
    fuel.environ.update(member)
    fuel("config", "session", "deploy", "--env", "1", session_id)
    fuel.environ.update(admin)
    assert get(fuel, *keystone) == {"admin_token": "t1", "workers": 1}
    after = fuel("config", "get", *keystone, "--session", session_id)
    assert json.loads(after.stdout) == {"admin_token": "t1", "workers": 1}
    assert "Session {0} is deployed: this is the current state".format(session_id) in after.stderr


def test_env_session_of_a_linked_environment_stages_its_documents(fuel, linked_env):
    """A ConfigDB environment linked to cluster 1 shares the cluster's sessions: ``env session`` and
    ``config session`` see the same ones, and ``env deployments`` lists what they deployed."""
    fuel("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", HIERA_TREE)
    node = ("--env", "1", "--level", "nodes=1", "--resource", "astute", "--key", "deployment_id")
    session_id = open_session(fuel, "env")
    shown = json.loads(fuel("config", "session", "show", "--env", "1", session_id, "-f", "json").stdout)
    assert shown["environment_type"] == "cluster"
    fuel("config", "override", *node, "--value", "7", "--session", session_id)
    assert get(fuel, *node) == {"deployment_id": 1}
    assert get(fuel, *node, "--session", session_id) == {"deployment_id": 7}
    assert [s["id"] for s in json.loads(fuel("env", "session", "list", "--env", "1", "-f", "json").stdout)] == [
        session_id]
    diff = json.loads(fuel("env", "session", "diff", "--env", "1", session_id, "-f", "json").stdout)
    assert [(d["document"]["level"], d["path"], d["value"]) for d in diff] == [("/nodes/1/", "/deployment_id", 7)]
    fuel("env", "session", "deploy", "--env", "1", session_id)
    assert get(fuel, *node) == {"deployment_id": 7}
    deployments = json.loads(fuel("env", "deployments", "1", "-f", "json").stdout)
    assert [d["id"] for d in deployments] == [session_id]
    other = open_session(fuel, "env")
    fuel("env", "session", "abandon", "--env", "1", other)
    wrong_env = fuel("config", "session", "show", "--env", "2", session_id, ok=False)
    assert wrong_env.returncode == 1 and "(4" in wrong_env.stderr


def test_changes_list_what_changed_after_a_revision(fuel):
    config_env(fuel)
    fuel("config", "set", *NOVA, "--key", "workers", "--value", "3")
    changes = json.loads(fuel("config", "changes", "--env", "1", "--since", "0", "-f", "json").stdout)
    assert [(c["resource_name"], c["kind"], c["change"], c["version"]) for c in changes][-2:] == [
        ("nova", "values", "write", 1), ("nova", "values", "write", 2)]
    revisions = [c["revision"] for c in changes]
    assert revisions == sorted(revisions)
    after = fuel("config", "changes", "--env", "1", "--since", changes[-1]["revision"], "-f", "json")
    assert json.loads(after.stdout) == []
    table = fuel("config", "changes", "--env", "1", "--since", "0").stdout
    assert "| nova" in table and "| write" in table
    bad = fuel("config", "changes", "--env", "1", "--since", "-1", ok=False)
    assert bad.returncode == 1 and "(400)" in bad.stderr


def _read_line(process, selector, deadline):
    """The next line of ``process``'s stdout, or fail at ``deadline`` (a guard, not a timing assertion)."""
    while time.monotonic() < deadline:
        if selector.select(0.2):
            line = process.stdout.readline()
            assert line, "the command ended: " + process.stderr.read()
            return line
    raise AssertionError("no line before the deadline")


@pytest.mark.parametrize("fuel", [FUEL_EXT_SCRIPT, FUEL2], indirect=True)
def test_changes_follow_prints_each_change_as_it_comes_and_stops_on_ctrl_c(fuel, live_server):
    config_env(fuel)
    since = json.loads(fuel("config", "changes", "--env", "1", "--since", "0", "-f", "json").stdout)[-1]["revision"]
    process = subprocess.Popen([fuel.command, "config", "changes", "--env", "1", "--since", str(since), "--follow",
                                "--wait", "5", "-f", "json"], env=fuel.environ, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=ctrl_c_reaches_it)
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        client = APIClient(root=live_server.url)
        seen = []
        for workers in (7, 8, 9):
            client.patch("config/environments/1/resources/nova/values/keys/set", [["workers", workers]])
            seen.append(json.loads(_read_line(process, selector, time.monotonic() + 30)))
        assert [(c["resource_name"], c["change"], c["version"]) for c in seen] == [
            ("nova", "write", 2), ("nova", "write", 3), ("nova", "write", 4)]
        assert [c["revision"] for c in seen] == sorted(c["revision"] for c in seen) and seen[0]["revision"] > since
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
        stderr = process.stderr.read()
        assert "Traceback" not in stderr and "KeyboardInterrupt" not in stderr, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


def test_changes_follow_prints_one_readable_line_per_change(fuel, live_server):
    """The default --follow output: one line a change; here the command stops on the server's 4xx once the
    environment is deleted (a follower must not loop forever on an answer that will not change)."""
    config_env(fuel)
    process = subprocess.Popen([FUEL_EXT, "config", "changes", "--env", "1", "--since", "0", "--follow", "--wait", "2"],
                               env=fuel.environ, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        line = _read_line(process, selector, time.monotonic() + 30)
        assert line.split(" ", 1)[1] == "write values of nova at / version 1 by anonymous\n"
        APIClient(root=live_server.url).delete("config/environments/1")
        assert process.wait(30) == 1
        assert "(404)" in process.stderr.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()


#: fuel-ext's main, with the SIGINT of a Ctrl-C landing where it did in a rare CI hang: urllib3 taking a connection
#: from its pool has just acquired the pool queue's lock, before ``queue.get``'s ``with`` body (the state a
#: KeyboardInterrupt raised there leaves that lock in: held, and urllib3's clean-up waits for it)
CTRL_C_INSIDE_THE_POOL = """
import os, queue, signal, sys, threading
import urllib3.connectionpool
from nailgun_platform.client.fuel_ext import main

class Interrupting(threading.Condition):
    def __enter__(self):
        entered = self._lock.__enter__()
        self.__class__ = threading.Condition
        os.kill(os.getpid(), signal.SIGINT)
        return entered

class Queue(queue.LifoQueue):
    def __init__(self, maxsize):
        super().__init__(maxsize)
        self.not_empty.__class__ = Interrupting

urllib3.connectionpool.HTTPConnectionPool.QueueCls = Queue
sys.exit(main(sys.argv[1:]))
"""


def test_changes_follow_ends_on_ctrl_c_even_inside_urllib3s_pool(tmp_path):
    """The Ctrl-C that ends a --follow may come at any bytecode; here inside urllib3's pool lock. As a
    KeyboardInterrupt it left that lock held and the command waited for it for ever; it exits 0 at once."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    environ.update(SERVER_ADDRESS="127.0.0.1", SERVER_PORT=str(free_port()), HOME=str(tmp_path),
                   XDG_CONFIG_HOME=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", CTRL_C_INSIDE_THE_POOL, "config", "changes", "--env", "1",
                             "--since", "0", "--follow"], env=environ, capture_output=True, text=True, timeout=30,
                            preexec_fn=ctrl_c_reaches_it)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_changes_follow_retries_a_server_out_of_reach_and_a_silent_one_times_out(tmp_path):
    """No server on the port: --follow says so and tries again (an LCM watcher outlives a server restart);
    a server that accepts and never answers: a plain command ends with a message once HTTP_TIMEOUT passes."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    environ.update(SERVER_ADDRESS="127.0.0.1", SERVER_PORT=str(free_port()), HOME=str(tmp_path),
                   XDG_CONFIG_HOME=str(tmp_path), HTTP_TIMEOUT="1")
    process = subprocess.Popen([FUEL_EXT, "config", "changes", "--env", "1", "--since", "0", "--follow"],
                               env=environ, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               preexec_fn=ctrl_c_reaches_it)
    try:
        retries = []
        while len(retries) < 2:  # the retries come at 1 s, then 2 s: readline does not wait long
            line = process.stderr.readline()
            assert line, "the command ended: " + process.stdout.read()
            if "retrying in" in line:
                retries.append(line)
        refused = ("Connection to the Nailgun API at 127.0.0.1:{0} refused: nothing listens there; check SERVER_ADDRESS "
                   "and SERVER_PORT; retrying in {1} s\n")
        assert retries == [refused.format(environ["SERVER_PORT"], 1), refused.format(environ["SERVER_PORT"], 2)]
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(5)
        environ["SERVER_PORT"] = str(silent.getsockname()[1])
        result = subprocess.run([FUEL_EXT, "config", "get", "--env", "1", "--resource", "nova"], env=environ,
                                capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "did not answer within 1 s" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
