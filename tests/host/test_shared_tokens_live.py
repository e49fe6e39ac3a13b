"""Two hosts behind a balancer, as the Production page (docs/operator/production.md) runs them: a fuel2 login on one, its
requests on the other, then ``nailgun-users delete`` on one host and the token refused by both.

Two waitress processes (the Production page's command) share the test database (SQLite file, or PostgreSQL with
``NAILGUN_TEST_DB_URL``) and the key repository; each has its own copy of the users file. The balancer in
front sends the login (``/keystone``) to the first and everything else to the second: the round robin
that broke tokens, made certain.
"""
import http.client
import http.server
import os
import shutil
import socketserver
import subprocess
import sys
import threading
import time

import pytest
import requests
import yaml

from nailgun_host.auth import token_keys
from tests.auth import LOCAL_USERS, write_users_file
from tests.commands import run_command
from tests.conftest import free_port
from tests.host.test_production import recipe_command

FUEL2_BIN = os.environ.get("FUEL2_BIN")


class Balancer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    """A reverse proxy on loopback: ``/keystone/...`` to the first host, the rest to the second."""

    daemon_threads = True

    def __init__(self, login_port, api_port):
        super().__init__(("127.0.0.1", 0), _Forward)
        self.login_port, self.api_port = login_port, api_port
        self.port = self.server_address[1]
        threading.Thread(target=self.serve_forever, daemon=True).start()


class _Forward(http.server.BaseHTTPRequestHandler):
    def _forward(self):
        port = self.server.login_port if self.path.startswith("/keystone") else self.server.api_port
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        upstream = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        try:
            upstream.request(self.command, self.path, body or None,
                             {k: v for k, v in self.headers.items() if k.lower() != "connection"})
            answer = upstream.getresponse()
            data = answer.read()
        finally:
            upstream.close()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("connection", "transfer-encoding", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    def log_message(self, *args):
        pass


def start_host(db_url, config_file):
    """The Production page's waitress command on a free loopback port, with ``config_file``; (process, port)."""
    port = free_port()
    process = subprocess.Popen(recipe_command(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=dict(os.environ, NAILGUN_DB_URL=db_url, NAILGUN_CONFIG=config_file))
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, "the waitress host exited with {0}".format(process.returncode)
        try:
            if requests.get("http://127.0.0.1:{0}/api/v1/version".format(port), timeout=1).ok:
                return process, port
        except requests.ConnectionError:
            pass
        assert time.monotonic() < deadline, "the waitress host did not start"
        time.sleep(0.1)


@pytest.fixture
def two_hosts(migrated_db, db_url, tmp_path):
    """Two waitress hosts of the test database: [(port, settings file), ...]."""
    hosts, processes = [], []
    for name in ("a", "b"):
        users_file = tmp_path / "users-{0}.yaml".format(name)
        if not hosts:
            write_users_file(str(users_file))
        else:
            shutil.copy(tmp_path / "users-a.yaml", users_file)
        config_file = tmp_path / "settings-{0}.yaml".format(name)
        config_file.write_text(yaml.safe_dump({"AUTH": {"method": "local", "users_file": str(users_file)}}))
        process, port = start_host(db_url, str(config_file))
        processes.append(process)
        hosts.append((port, str(config_file)))
    yield hosts
    for process in processes:
        process.terminate()
        process.wait(10)


def login(port, user):
    answer = requests.post("http://127.0.0.1:{0}/keystone/v2.0/tokens".format(port), json={"auth": {
        "passwordCredentials": {"username": user, "password": LOCAL_USERS[user]}, "tenantName": "admin"}})
    assert answer.status_code == 200, answer.text
    return answer.json()["access"]["token"]["id"]


def status(port, token):
    return requests.get("http://127.0.0.1:{0}/api/v1/clusters/".format(port),
                        headers={"X-Auth-Token": token}).status_code


@pytest.mark.skipif(not FUEL2_BIN, reason="FUEL2_BIN is not set (tests/tools/make_fuel2_venv.sh builds fuel2)")
def test_fuel2_logs_in_on_one_host_and_is_served_by_the_other(two_hosts, tmp_path):
    (first, _), (second, _) = two_hosts
    balancer = Balancer(first, second)
    try:
        (tmp_path / "fuel").mkdir()
        (tmp_path / "fuel" / "fuel_client.yaml").write_text(yaml.safe_dump(
            {"SERVER_ADDRESS": "127.0.0.1", "SERVER_PORT": str(balancer.port)}))
        environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_") and k not in (
            "FUELCLIENT_CUSTOM_SETTINGS", "SERVER_ADDRESS", "SERVER_PORT")}
        environ.update(OS_USERNAME="admin", OS_PASSWORD=LOCAL_USERS["admin"], XDG_CONFIG_HOME=str(tmp_path),
                       HOME=str(tmp_path))
        result = run_command(FUEL2_BIN, ["env", "list", "-f", "json"], environ)
        assert result.returncode == 0, result
        assert result.stdout.strip() == "[]"
    finally:
        balancer.shutdown()
        balancer.server_close()


def test_nailgun_users_delete_on_one_host_refuses_the_token_on_both(two_hosts, db_url):
    (first, first_config), (second, _) = two_hosts
    token = login(first, "member")
    assert (status(first, token), status(second, token)) == (200, 200)
    deleted = subprocess.run([os.path.join(os.path.dirname(sys.executable), "nailgun-users"), "--config",
                              first_config, "delete", "member"], env=dict(os.environ, NAILGUN_DB_URL=db_url),
                             capture_output=True, text=True)
    assert deleted.returncode == 0, deleted.stderr
    time.sleep(token_keys.REFRESH)  # the bound the docs give: every host's copy is reloaded by then
    assert (status(first, token), status(second, token)) == (401, 401)
