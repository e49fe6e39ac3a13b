"""fuel2's habits in the ``config`` commands, against a real nailgun-api, through fuel-ext in this process and the
real ``fuel2``: cliff's ``-f`` on ``get`` and ``diff``, a one-line confirmation of each write, ``HTTP_PROXY``
from the settings file, and one line (no traceback) for a server that does not answer in time."""
import http.server
import json
import os
import socket
import threading
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.commands import IN_PROCESS
from tests.configdb_clients.conftest import FUEL2, HIERA_TREE, Runner, tree_sources

NODE_1 = ("--env", "1", "--level", "node=node-1.domain.tld")
ASTUTE = NODE_1 + ("--resource", "astute")
FUEL2_BIN = os.environ.get("FUEL2_BIN")
#: the proxy variables of the test process's own shell, which would decide for the client
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def _upload_node_1(fuel):
    fuel("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", HIERA_TREE)


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_get_takes_cliffs_formats_and_keeps_json_as_its_default(fuel, linked_env):
    _upload_node_1(fuel)
    astute = tree_sources()["astute"]
    assert json.loads(fuel("config", "get", *ASTUTE).stdout) == astute
    assert json.loads(fuel("config", "get", *ASTUTE, "-f", "json").stdout) == astute
    assert yaml.safe_load(fuel("config", "get", *ASTUTE, "-f", "yaml").stdout) == astute
    table = fuel("config", "get", *ASTUTE, "-f", "table").stdout
    assert "| Field" in table and "| deployment_id " in table
    cells = {row.split("|")[1].strip(): row.split("|")[2].strip() for row in table.splitlines() if row.startswith("| ")}
    assert cells["uid"] == "1" and cells["deployment_id"] == "1"  # a string bare, the rest compact JSON
    assert json.loads(cells["mysql"]) == astute["mysql"]
    key = ASTUTE + ("--key", "nodes")
    assert json.loads(fuel("config", "get", *key, "-f", "value").stdout) == astute["nodes"]
    assert fuel("config", "get", *ASTUTE, "--key", "uid", "-f", "value").stdout == "1\n"
    assert fuel("config", "get", *ASTUTE, "--key", "uid", "-f", "plain").stdout == "1\n"  # the former name
    assert fuel("config", "get", *ASTUTE, "--key", "uid", "-f", "yaml").stdout == "uid: '1'\n"
    assert fuel("config", "get", *ASTUTE, "--key", "uid", "-f", "value", "-c", "uid").stdout == "1\n"
    refused = fuel("config", "get", *ASTUTE, "-f", "xml", ok=False)
    assert refused.returncode == 2 and "invalid choice: 'xml'" in refused.stderr


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_diff_is_a_table_or_a_patch_that_config_patch_takes_back(fuel, linked_env):
    _upload_node_1(fuel)
    fuel("config", "set", *ASTUTE, "--key", "deployment_id", "--value", "5")
    fuel("config", "delete", *ASTUTE, "--key", "uid")
    diff = ("config", "diff", *ASTUTE, "--from", "1", "--to", "3")
    patch = json.loads(fuel(*diff).stdout)
    assert sorted(patch, key=lambda op: op["path"]) == [
        {"op": "replace", "path": "/deployment_id", "value": 5},
        {"op": "remove", "path": "/uid", "value": None}]
    assert yaml.safe_load(fuel(*diff, "-f", "yaml").stdout) == patch
    assert sorted(fuel(*diff, "-f", "value").stdout.splitlines()) == ["remove /uid null", "replace /deployment_id 5"]
    table = fuel(*diff, "-f", "table").stdout
    assert "| op " in table and "| replace | /deployment_id | 5 " in table
    after = json.loads(fuel("config", "get", *ASTUTE, "--raw").stdout)
    fuel("config", "revert", *ASTUTE, "--to", "1")
    fuel("config", "patch", *ASTUTE, "-", stdin=json.dumps(patch))
    assert json.loads(fuel("config", "get", *ASTUTE, "--raw").stdout) == after


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_every_write_confirms_what_it_did_in_one_line(fuel, linked_env):
    _upload_node_1(fuel)
    where = "astute at node=node-1.domain.tld (environment 1)"
    assert fuel("config", "set", *ASTUTE, "--key", "nova.debug", "--value", "true").stdout == \
        "Set nova.debug in the values of {0}\n".format(where)
    assert fuel("config", "override", *ASTUTE, "--key", "deployment_id", "--value", "2").stdout == \
        "Set deployment_id in the overrides of {0}\n".format(where)
    assert fuel("config", "delete", *ASTUTE, "--key", "nova.debug").stdout == \
        "Deleted nova.debug in the values of {0}\n".format(where)
    whole = fuel("config", "set", "--env", "1", "--resource", "globals", stdin='{"debug": true}')
    assert whole.stdout == "Replaced the whole resource in the values of globals at the environment level " \
                           "(environment 1)\n"
    assert fuel("config", "patch", *ASTUTE, "-", stdin='[{"op": "add", "path": "/x", "value": 1}]').stdout == \
        "Applied 1 patch operation in the values of {0}\n".format(where)
    assert fuel("config", "revert", *ASTUTE, "--to", "1").stdout == \
        "Reverted to version 1 in the values of {0}\n".format(where)
    assert fuel("-q", "config", "set", *ASTUTE, "--key", "x", "--value", "2").stdout == ""
    session = fuel("config", "session", "open", "--env", "1", "-f", "value", "-c", "id").stdout.strip()
    staged = fuel("config", "set", *ASTUTE, "--key", "x", "--value", "3", "--session", session)
    assert staged.stdout == "Staged in session {0}: set x in the values of {1}\n".format(session, where)
    assert json.loads(fuel("config", "get", *ASTUTE, "--key", "x").stdout) == {"x": 2}
    refused = fuel("config", "set", *ASTUTE, "--key", "n", "--value", "x", "--type", "int", ok=False)
    assert refused.returncode == 1 and refused.stdout == ""


class RecordingProxy(http.server.ThreadingHTTPServer):
    """A real forward HTTP proxy on loopback: it passes each request on and remembers its absolute URL."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), ProxyHandler)
        self.seen = []
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:{0}".format(self.server_address[1])

    def stop(self):
        self.shutdown()
        self.server_close()


class ProxyHandler(http.server.BaseHTTPRequestHandler):
    def _forward(self):
        self.server.seen.append((self.command, self.path))
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "proxy-connection")}
        upstream = urllib.request.Request(self.path, data=body, headers=headers, method=self.command)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # straight to the server
        try:
            answer = opener.open(upstream, timeout=30)
        except urllib.error.HTTPError as error:
            answer = error
        content = answer.read()
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            if name.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_PUT = do_PATCH = do_POST = do_DELETE = _forward

    def log_message(self, *args):
        pass


@pytest.fixture
def proxy():
    server = RecordingProxy()
    yield server
    server.stop()


def _settings_file(runner):
    return Path(runner.environ["XDG_CONFIG_HOME"]) / "fuel" / "fuel_client.yaml"


def _set(runner, **settings):
    """Add ``settings`` to the runner's fuel2 settings file, and let no proxy variable of this shell decide."""
    path = _settings_file(runner)
    path.write_text(yaml.safe_dump(dict(yaml.safe_load(path.read_text()), **settings)))
    for name in PROXY_VARIABLES:
        runner.environ.pop(name, None)
        runner.environ.pop(name.lower(), None)


@pytest.mark.parametrize("fuel", [IN_PROCESS, FUEL2], indirect=True)
def test_http_proxy_of_the_settings_file_carries_every_request(fuel, proxy, linked_env):
    _set(fuel, HTTP_PROXY=proxy.url)
    fuel("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", HIERA_TREE)
    assert fuel("config", "get", *ASTUTE, "--key", "uid", "-f", "value").stdout == "1\n"
    port = yaml.safe_load(_settings_file(fuel).read_text())["SERVER_PORT"]
    api = "http://127.0.0.1:{0}/api/v1/".format(port)
    assert ("GET", api + "config/environments/1/nodes/node-1.domain.tld/resources/astute/values?effective=1&key=uid") \
        in proxy.seen
    assert ("POST", api + "config/environments/1/documents") in proxy.seen  # the upload's batches
    gone = RecordingProxy()
    gone.stop()  # a proxy that is not there: the command fails, so it did not go around it
    _set(fuel, HTTP_PROXY=gone.url)
    failed = fuel("config", "get", *ASTUTE, "--key", "uid", ok=False)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr


@pytest.fixture
def silent_server():
    """A real socket that accepts connections and never answers (a hung API), and the port of a closed one."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    accepted = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    closed = socket.create_server(("127.0.0.1", 0))
    closed_port = closed.getsockname()[1]
    closed.close()
    yield listener.getsockname()[1], closed_port
    stop.set()
    thread.join()
    for connection in accepted:
        connection.close()
    listener.close()


class Port:
    def __init__(self, port):
        self.port = port


@pytest.mark.parametrize("command", [IN_PROCESS, pytest.param(FUEL2_BIN, id="fuel2", marks=pytest.mark.skipif(
    not FUEL2_BIN, reason="FUEL2_BIN is not set (tests/tools/make_fuel2_venv.sh builds fuel2)"))])
def test_no_answer_in_time_is_one_line_like_a_refused_connection(command, silent_server, tmp_path):
    hung, closed = silent_server
    runs = {}
    for name, port in (("hung", hung), ("closed", closed)):
        home = tmp_path / name
        home.mkdir()
        runner = Runner(command, Port(port), home)
        _set(runner, HTTP_TIMEOUT=1)
        runs[name] = runner("config", "get", *ASTUTE, ok=False)
    for name, result in runs.items():
        assert result.returncode == 1, (name, result.stderr)
        assert result.stdout == "" and "Traceback" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert runs["hung"].stderr == ("The Nailgun API at 127.0.0.1:{0} did not answer within 1 s: it is hung or "
                                   "overloaded (or raise HTTP_TIMEOUT)\n".format(hung))
    assert runs["closed"].stderr == ("Connection to the Nailgun API at 127.0.0.1:{0} refused: nothing listens there; "
                                     "check SERVER_ADDRESS and SERVER_PORT\n".format(closed))
