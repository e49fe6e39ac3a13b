"""The packaged nginx snippet (packaging/nginx/fuel-nailgun-extensions.conf) in a Fuel master's nginx.

A real nginx (Debian's) runs a ``services.conf`` modelled on fuel-library's template (``location /api`` to
Nailgun's uwsgi, ``location ~ ^/keystone/(.*)`` to Fuel's Keystone) with the snippet included the way
docs/operator/fuel-master.md says. Behind it: a real ``nailgun-api`` and ``nailgun-feed``, a stand-in for
Nailgun's uwsgi (it speaks the uwsgi protocol and marks its answers) and one for Fuel's Keystone. Every route of
the URL map, core and extensions', is sent through nginx: those Nailgun has reach the stand-in, all others this
service, so a new route family without a ``location`` fails here.
"""
import contextlib
import http.client
import json
import os
import re
import shlex
import shutil
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from nailgun_host.app import PREFIXES, collect_routes
from nailgun_host.extensions import get_all_extensions
from tests.auth import LOCAL_USERS, basic, write_users_file
from tests.commands import run_command
from tests.conftest import LiveServer, free_port, stop_process

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = ROOT / "packaging" / "nginx" / "fuel-nailgun-extensions.conf"
UNITS = ROOT / "packaging"
PAGE = ROOT / "docs" / "operator" / "fuel-master.md"
#: where the page's commands expect Fuel's file and the packaged snippet
SERVICES_CONF = "/etc/nginx/conf.d/services.conf"
INSTALLED_SNIPPET = "/etc/nginx/fuel-nailgun-extensions.conf"
BIN = os.path.dirname(sys.executable)
FUEL2_BIN = os.environ.get("FUEL2_BIN")

#: the core routes Nailgun itself has (fuel-web's nailgun/api/v1/urls.py): they stay Nailgun's on a Fuel master.
#: Every other route of the URL map is this package's and must reach it.
NAILGUN_ROUTES = {
    "/", "/version", "/extensions", "/releases", "/releases/<release_id>", "/releases/<release_id>/deployment_tasks",
    "/clusters", "/clusters/<cluster_id>", "/clusters/<cluster_id>/attributes",
    "/clusters/<cluster_id>/attributes/defaults", "/clusters/<cluster_id>/generated",
    "/clusters/<cluster_id>/extensions", "/clusters/<cluster_id>/assignment", "/clusters/<cluster_id>/unassignment",
    "/clusters/<cluster_id>/provision", "/clusters/<cluster_id>/deploy", "/clusters/<cluster_id>/changes",
    "/clusters/<cluster_id>/orchestrator/deployment/defaults",
    "/clusters/<cluster_id>/network_configuration/<provider>",
    "/clusters/<cluster_id>/network_configuration/ips/vips", "/nodegroups", "/nodegroups/<nodegroup_id>", "/nodes",
    "/nodes/<node_id>", "/nodes/<node_id>/interfaces", "/nodes/<node_id>/disks", "/tasks", "/tasks/<task_id>",
    "/transactions", "/transactions/<task_id>",
}
#: Nailgun's routes the host does not re-create, those nearest this package's families among them (fuel-web's
#: urls.py): they must reach Nailgun too
NAILGUN_ONLY_PATHS = (
    "/api/v1/clusters/1/deployment_tasks", "/api/v1/clusters/1/deployment_graphs/default",
    "/api/v1/clusters/1/changes/redeploy", "/api/v1/clusters/1/roles/controller", "/api/v1/clusters/1/reset",
    "/api/v1/clusters/1/plugin_links", "/api/v1/nodes/agent", "/api/v1/graphs/execute", "/api/v1/sequences/1",
    "/api/v1/transactions/1/deployment_history", "/api/v1/transactions/1/settings", "/api/v1/plugins",
    "/api/v1/notifications", "/api/v1/capacity", "/api/v1/logs", "/api/v1/settings",
)
#: a value for each placeholder of the URL map's templates (checked against the route's own regex)
SAMPLES = {"levels": "nodes/1/", "resource": "nova", "kind": "values", "operation": "set", "provider": "neutron",
           "path": "name", "session": "1"}
#: fuel-library's templates/nginx/services.conf.erb, plain HTTP, on a free loopback port
FUEL_SERVICES = """
server {{
    listen 127.0.0.1:{port};
    server_name localhost;
    access_log {dir}/access_services.log;
    error_log {dir}/error_services.log;
    charset utf-8;
    client_max_body_size 10M;
    gzip on;
    gzip_types text/plain application/json;
    autoindex off;

    location /static {{
        alias {dir}/static;
    }}

    location ~ ^/keystone/(.*) {{
        set $proxy_path $1;
        if ( $request_method !~ ^(GET|POST|PUT|PATCH|DELETE)$ ) {{
            return 444;
        }}
        proxy_pass http://127.0.0.1:{keystone}/$proxy_path;
        proxy_buffering off;
    }}

    location / {{
        expires -1;
        root {dir}/static;
    }}

    location /api {{
        if ( $request_method !~ ^(GET|POST|PUT|PATCH|DELETE)$ ) {{
            return 444;
        }}
        include /etc/nginx/uwsgi_params;
        uwsgi_pass 127.0.0.1:{nailgun};
        client_max_body_size 100m;
    }}
}}
"""
NGINX_CONF = """
{user}
worker_processes 1;
error_log {dir}/error.log;
pid {dir}/nginx.pid;
events {{ worker_connections 256; }}
http {{
    include /etc/nginx/mime.types;
    access_log {dir}/access.log;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    uwsgi_temp_path {dir}/uwsgi;
    fastcgi_temp_path {dir}/fastcgi;
    scgi_temp_path {dir}/scgi;
    include {dir}/conf.d/*.conf;
}}
"""


def nginx_binary():
    found = shutil.which("nginx", path=os.environ.get("PATH", "") + os.pathsep + "/usr/sbin")
    if found is None:
        reason = "nginx is not installed (run_tests.sh installs Debian's nginx-light)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


class _UwsgiStandIn(socketserver.StreamRequestHandler):
    """Nailgun's uwsgi: reads one uwsgi packet (and the body) and answers, marked as Nailgun's, with its path."""

    def handle(self):
        _modifier1, size, _modifier2 = struct.unpack("<BHB", self.rfile.read(4))
        block, variables = self.rfile.read(size), {}
        while block:
            (length,) = struct.unpack("<H", block[:2])
            key, block = block[2:2 + length].decode(), block[2 + length:]
            (length,) = struct.unpack("<H", block[:2])
            variables[key], block = block[2:2 + length].decode(), block[2 + length:]
        self.rfile.read(int(variables.get("CONTENT_LENGTH") or 0))
        answer = {"upstream": "nailgun", "uri": variables["REQUEST_URI"]}
        if variables["PATH_INFO"].rstrip("/") == "/api/v1/version":
            answer["auth_required"] = True  # as Nailgun with Fuel's Keystone: fuel2 logs in before its commands
        body = json.dumps(answer).encode()
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Upstream: nailgun\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


class _KeystoneStandIn(BaseHTTPRequestHandler):
    """Fuel's Keystone: answers every request, marked as Keystone's."""

    def _answer(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.paths.append(self.path)
        body = json.dumps({"upstream": "keystone", "uri": self.path}).encode()
        self.send_response(200)
        self.send_header("X-Upstream", "keystone")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


class _ThreadingUwsgi(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve_in_thread(server):
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def listen_address(unit):
    """``host:port`` the unit's command listens on."""
    command = next(line for line in (UNITS / unit).read_text().splitlines() if line.startswith("ExecStart="))
    found = re.search(r"--listen=(\S+)", command) or re.search(r"--host (\S+) --port (\d+)", command)
    return found.group(1) if found.lastindex == 1 else "{0}:{1}".format(*found.groups())


def page_commands():
    """The lines of the page's ```sh block that installs the snippet, before ``nginx -t`` (and the reload)."""
    block = re.search(r"```sh\n(.*?)```", PAGE.read_text(), re.S)
    assert block and "sed -i" in block.group(1), "{0} has no ```sh block with the include command".format(PAGE)
    lines = block.group(1).splitlines()
    return lines[:next(i for i, line in enumerate(lines) if line.startswith("nginx -t"))]


class FuelNginx:
    """nginx with a Fuel-like services.conf that includes a copy of the snippet whose upstreams are ``api``/``feed``."""

    def __init__(self, directory, api, feed, nailgun_port, keystone_port):
        self.binary = nginx_binary()
        self.dir = directory
        self.port = free_port()
        self.url = "http://127.0.0.1:{0}".format(self.port)
        for sub in ("conf.d", "static", "client_body", "proxy", "uwsgi", "fastcgi", "scgi"):
            (directory / sub).mkdir()
        (directory / "static" / "index.html").write_text("Fuel UI\n")
        (directory / "nginx.conf").write_text(NGINX_CONF.format(
            dir=directory, user="user root;" if os.geteuid() == 0 else ""))
        services = directory / "conf.d" / "services.conf"
        services.write_text(FUEL_SERVICES.format(port=self.port, dir=directory, nailgun=nailgun_port,
                                                 keystone=keystone_port))
        snippet = SNIPPET.read_text()
        for packaged, used in ((listen_address("nailgun-api.service"), api),
                               (listen_address("nailgun-feed.service"), feed)):
            assert "http://{0};".format(packaged) in snippet, "the snippet does not proxy to {0}".format(packaged)
            snippet = snippet.replace("http://{0};".format(packaged), "http://{0};".format(used))
        self.snippet = directory / "fuel-nailgun-extensions.conf"
        self.snippet.write_text(snippet)
        self.services = services
        self.process = None

    def install_snippet(self):
        """The page's commands, on this services.conf and snippet."""
        script = "\n".join(page_commands())
        script = script.replace(SERVICES_CONF, str(self.services)).replace(INSTALLED_SNIPPET, str(self.snippet))
        subprocess.run(["bash", "-euc", script], check=True)

    def command(self, *args):
        return [self.binary, "-p", str(self.dir), "-c", str(self.dir / "nginx.conf"), "-e",
                str(self.dir / "error.log")] + list(args)

    def check(self):
        return subprocess.run(self.command("-t"), capture_output=True, text=True)

    def start(self):
        with open(self.dir / "stderr.log", "w") as stderr:
            self.process = subprocess.Popen(self.command("-g", "daemon off;"), stderr=stderr)
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, (self.dir / "stderr.log").read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
                return
            assert time.monotonic() < deadline, "nginx did not start listening"
            time.sleep(0.1)

    def stop(self):
        if self.process is not None:
            stop_process(self.process)


class FeedServer:
    """A real ``nailgun-feed`` on a free loopback port."""

    def __init__(self, db_url, env):
        self.port = free_port()
        self.process = subprocess.Popen(
            [os.path.join(BIN, "nailgun-feed"), "--db-url", db_url, "--port", str(self.port), "--threads", "2"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(os.environ, **env))
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, "nailgun-feed exited with {0}".format(self.process.returncode)
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
                return
            assert time.monotonic() < deadline, "nailgun-feed did not start listening"
            time.sleep(0.1)


@pytest.fixture(scope="module")
def fuel(migrated_db, db_url, tmp_path_factory):
    """nginx as on a Fuel master, in front of nailgun-api, nailgun-feed and the stand-ins for Nailgun and Keystone.

    nailgun-api holds no feed waiter (``FEED.thread_waiters: 0``: it answers a wait at once, ``X-Feed-Waited:
    0``) so that a wait that waits shows nailgun-feed answered it.
    """
    nginx_binary()
    directory = tmp_path_factory.mktemp("fuel-nginx")
    settings = directory / "settings.yaml"
    settings.write_text("FEED:\n  thread_waiters: 0\n")
    env = {"NAILGUN_CONFIG": str(settings)}
    nailgun = serve_in_thread(_ThreadingUwsgi(("127.0.0.1", 0), _UwsgiStandIn))
    keystone = serve_in_thread(ThreadingHTTPServer(("127.0.0.1", 0), _KeystoneStandIn))
    keystone.paths = []
    api = LiveServer(db_url, env=env)
    feed = FeedServer(db_url, env)
    server = FuelNginx(directory, "127.0.0.1:{0}".format(api.port), "127.0.0.1:{0}".format(feed.port),
                       nailgun.server_address[1], keystone.server_address[1])
    server.api, server.keystone = api, keystone
    try:
        server.install_snippet()
        server.start()
        yield server
    finally:
        server.stop()
        stop_process(feed.process)
        api.stop()
        nailgun.shutdown()
        keystone.shutdown()


def upstream(answer):
    """Which upstream answered through nginx: ``nailgun``, ``keystone`` (the stand-ins) or ``ours``."""
    return answer.headers.get("X-Upstream", "ours")


def sample_path(entry):
    """A concrete path of a URL map entry, which its own regex matches."""
    def value(match):
        name = match.group(1)
        return "1" if name == "id" or name.endswith("_id") else SAMPLES[name]

    path = re.sub(r"<(\w+)>", value, entry["template"])
    assert re.fullmatch(entry["uri"], path), "{0} is no path of {1}".format(path, entry["template"])
    return path


def test_the_include_command_once_then_nginx_t_passes(fuel):
    text = fuel.services.read_text()
    assert text.count("include {0};".format(fuel.snippet)) == 1
    assert text.index("include {0};".format(fuel.snippet)) < text.index("location /api {")
    fuel.install_snippet()  # again, as after an upgrade of this package: still once
    assert fuel.services.read_text() == text
    checked = fuel.check()
    assert checked.returncode == 0, checked.stderr
    assert "test is successful" in checked.stderr


def test_a_snippet_in_conf_d_fails_nginx_t(fuel):
    """Why the page says not conf.d/: its locations outside a server are refused (the check can fail)."""
    stray = fuel.dir / "conf.d" / "stray.conf"
    stray.write_text(SNIPPET.read_text())
    try:
        checked = fuel.check()
    finally:
        stray.unlink()
    assert checked.returncode != 0
    assert '"location" directive is not allowed here' in checked.stderr


def test_every_route_of_ours_reaches_the_service_and_nailguns_the_stand_in(fuel):
    routes, _ = collect_routes(get_all_extensions())
    templates = {entry["template"] for entry in routes}
    assert NAILGUN_ROUTES <= templates, "not a route any more: {0}".format(sorted(NAILGUN_ROUTES - templates))
    wrong = []
    for entry in routes:
        expected = "nailgun" if entry["template"] in NAILGUN_ROUTES else "ours"
        for prefix in PREFIXES:
            path = prefix + sample_path(entry)
            got = upstream(requests.get(fuel.url + path, timeout=30))
            if got != expected:
                wrong.append("{0} went to {1}, not {2}".format(path, got, expected))
    assert not wrong, "\n".join(wrong)


def test_configdb_upgrade_and_session_routes_answer_through_nginx(fuel):
    release = requests.post(fuel.api.url + "/api/v1/releases/", json={
        "name": "Mitaka", "version": "mitaka-9.0", "operating_system": "Ubuntu"}, timeout=30).json()
    cluster = requests.post(fuel.api.url + "/api/v1/clusters/", json={
        "name": "env-1", "release_id": release["id"]}, timeout=30).json()
    environment = requests.post(fuel.url + "/api/v1/config/environments", json={
        "components": [], "hierarchy_levels": ["nodes"]}, timeout=30)
    assert environment.status_code == 201, environment.text
    assert upstream(environment) == "ours"
    listed = requests.get(fuel.url + "/api/config/environments", timeout=30)
    assert [e["id"] for e in listed.json()] == [environment.json()["id"]]

    model = requests.get(fuel.url + "/api/v1/clusters/{0}/model/name".format(cluster["id"]), timeout=30)
    assert (model.status_code, upstream(model)) == (200, "ours")
    assert model.json() == "env-1"
    clone = requests.post(fuel.url + "/api/v1/clusters/{0}/upgrade/clone".format(cluster["id"]), json={
        "name": "env-2", "release_id": 999999}, timeout=30)
    assert upstream(clone) == "ours"
    assert clone.status_code in (400, 404) and "message" in clone.json()

    session = requests.post(fuel.url + "/api/v1/clusters/{0}/configure".format(cluster["id"]), timeout=30)
    assert (session.status_code, upstream(session)) == (200, "ours")
    sessions = requests.get(fuel.url + "/api/v1/clusters/{0}/sessions".format(cluster["id"]), timeout=30).json()
    assert [s["id"] for s in sessions["sessions"]] == [session.json()["id"]]
    deployments = requests.get(fuel.url + "/api/v1/clusters/{0}/deployments".format(cluster["id"]), timeout=30)
    assert deployments.json() == {"deployments": []}

    # the cluster itself is Nailgun's: through nginx the stand-in answers
    assert upstream(requests.get(fuel.url + "/api/v1/clusters/{0}".format(cluster["id"]), timeout=30)) == "nailgun"


def test_stats_and_metrics_are_the_services(fuel):
    stats = requests.get(fuel.url + "/api/v1/stats", timeout=30)
    assert (stats.status_code, upstream(stats)) == (200, "ours")
    assert isinstance(stats.json(), list)
    metrics = requests.get(fuel.url + "/metrics", timeout=30)
    assert (metrics.status_code, upstream(metrics)) == (200, "ours")
    assert "# TYPE" in metrics.text


def test_the_feed_goes_to_nailgun_feed(fuel):
    created = requests.post(fuel.url + "/api/v1/config/environments",
                            json={"components": [], "hierarchy_levels": []}, timeout=30).json()
    changes = "/api/v1/config/environments/{0}/changes?since=0&wait=1".format(created["id"])
    direct = requests.get(fuel.api.url + changes, timeout=30)
    assert direct.headers["X-Feed-Waited"] == "0"  # nailgun-api would not have waited
    through = requests.get(fuel.url + changes, timeout=30)
    assert through.status_code == 200, through.text
    assert "X-Feed-Waited" not in through.headers  # parked by nailgun-feed until its deadline


@pytest.mark.parametrize("path", NAILGUN_ONLY_PATHS)
def test_nailguns_other_routes_stay_nailguns(fuel, path):
    assert upstream(requests.get(fuel.url + path, timeout=30)) == "nailgun"


def test_nailguns_routes_and_fuels_keystone_stay_theirs(fuel):
    nodes = requests.get(fuel.url + "/api/v1/nodes/", timeout=30)
    assert (nodes.status_code, nodes.json()) == (200, {"upstream": "nailgun", "uri": "/api/v1/nodes/"})
    deploy = requests.put(fuel.url + "/api/v1/clusters/1/changes", timeout=30)
    assert upstream(deploy) == "nailgun"
    login = requests.post(fuel.url + "/keystone/v2.0/tokens", json={"auth": {}}, timeout=30)
    assert (login.json()["upstream"], login.json()["uri"]) == ("keystone", "/v2.0/tokens")
    assert requests.get(fuel.url + "/", timeout=30).text == "Fuel UI\n"


@pytest.mark.skipif(not FUEL2_BIN, reason="FUEL2_BIN is not set (tests/tools/make_fuel2_venv.sh builds fuel2)")
def test_fuel2_in_local_mode_logs_in_at_the_service_not_through_fuels_nginx(fuel, migrated_db, db_url, tmp_path):
    """The page's command: fuel2 pointed at the service itself logs in at its token route; pointed at Fuel's
    nginx, its login goes to Fuel's Keystone, which does not know the service's users."""
    settings = tmp_path / "settings.yaml"
    settings.write_text("AUTH:\n  method: local\n  users_file: {0}\n".format(
        write_users_file(str(tmp_path / "users.yaml"))))
    server = LiveServer(db_url, env={"NAILGUN_CONFIG": str(settings)})
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_") and k not in (
        "FUELCLIENT_CUSTOM_SETTINGS", "SERVER_ADDRESS", "SERVER_PORT")}
    environ.update(OS_USERNAME="admin", OS_PASSWORD=LOCAL_USERS["admin"], HOME=str(tmp_path),
                   XDG_CONFIG_HOME=str(tmp_path), SERVER_ADDRESS="127.0.0.1")
    try:
        direct = run_command(FUEL2_BIN, ["config", "env", "list", "-f", "json"],
                             dict(environ, SERVER_PORT=str(server.port)))
    finally:
        server.stop()
    assert direct.returncode == 0, direct
    assert direct.stdout.splitlines()[-1] == "[]"  # after fuel2's note that it saved its settings file
    through = run_command(FUEL2_BIN, ["config", "env", "list", "-f", "json"],
                          dict(environ, SERVER_PORT=str(fuel.port)))
    assert through.returncode != 0, through
    assert fuel.keystone.paths[-1].startswith("/v2.0/tokens")  # Fuel's Keystone was asked, not the service


def unit_command(unit, port):
    """The unit's ``ExecStart`` as argv, its command from this virtualenv and its port ``port``."""
    line = next(line for line in (UNITS / unit).read_text().splitlines() if line.startswith("ExecStart="))
    argv = shlex.split(line[len("ExecStart="):])
    argv[0] = os.path.join(BIN, os.path.basename(argv[0]))
    host, packaged = listen_address(unit).rsplit(":", 1)
    return [a.replace("{0}:{1}".format(host, packaged), "{0}:{1}".format(host, port)) if a.startswith("--listen=")
            else str(port) if a == packaged else a for a in argv]


def start_listening(argv, port, env):
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, "{0} exited with {1}".format(argv[0], process.returncode)
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return process
        assert time.monotonic() < deadline, "{0} did not start listening".format(argv[0])
        time.sleep(0.1)


@pytest.fixture(scope="module")
def fuel_units(migrated_db, db_url, tmp_path_factory):
    """Fuel's nginx in front of the units' own commands (their arguments, other ports) in local mode, whose
    address lockout comes after 3 wrong passwords."""
    nginx_binary()
    directory = tmp_path_factory.mktemp("fuel-units")
    settings = directory / "settings.yaml"
    settings.write_text(
        "DATABASE_URL: {0}\nAUTH:\n  method: local\n  users_file: {1}\n  lockout_failure_attempts: 0\n"
        "  lockout_address_failure_attempts: 3\n".format(db_url, write_users_file(str(directory / "users.yaml"))))
    env = dict(os.environ, NAILGUN_CONFIG=str(settings))
    env.pop("NAILGUN_DB_URL", None)
    ports = {unit: free_port() for unit in ("nailgun-api.service", "nailgun-feed.service")}
    processes = []
    nailgun = serve_in_thread(_ThreadingUwsgi(("127.0.0.1", 0), _UwsgiStandIn))
    keystone = serve_in_thread(ThreadingHTTPServer(("127.0.0.1", 0), _KeystoneStandIn))
    try:
        for unit, port in ports.items():
            processes.append(start_listening(unit_command(unit, port), port, env))
        server = FuelNginx(directory, *("127.0.0.1:{0}".format(port) for port in ports.values()),
                           nailgun.server_address[1], keystone.server_address[1])
        server.install_snippet()
        server.start()
        yield server
    finally:
        with contextlib.suppress(NameError):
            server.stop()
        for process in processes:
            stop_process(process)
        nailgun.shutdown()
        keystone.shutdown()


def get_from(source, port, path, headers):
    """GET ``path`` from nginx on ``port`` over a connection from the loopback address ``source``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
    try:
        connection.request("GET", path, headers=headers)
        answer = connection.getresponse()
        answer.read()
        return answer.status
    finally:
        connection.close()


@pytest.mark.parametrize("path", ["/api/v1/config/environments", "/api/v1/config/environments/1/changes?since=0"])
def test_one_clients_wrong_passwords_lock_out_that_client_not_every_client_of_nginx(fuel_units, path):
    """Behind nginx every connection comes from 127.0.0.1: unless the units take the client from the snippet's
    X-Forwarded-For, 3 wrong passwords from anywhere would lock out every password user (Hiera, fuel-ext)."""
    guessed = [get_from("127.0.0.2", fuel_units.port, path, dict(basic("admin", "wrong{0}".format(i)),
                                                                    **{"X-Forwarded-For": "127.0.0.9"}))
               for i in range(4)]
    assert guessed[:3] == [401] * 3 and guessed[3] == 429, guessed
    assert get_from("127.0.0.3", fuel_units.port, path, basic("admin")) != 429
    assert get_from("127.0.0.2", fuel_units.port, path, basic("admin")) == 429  # the guesser's address is locked
    # a client's own X-Forwarded-For is replaced by nginx: the guesser cannot pose as another client
    assert get_from("127.0.0.2", fuel_units.port, path, dict(basic("admin"), **{"X-Forwarded-For": "127.0.0.4"})) == 429


def test_the_console_is_the_services_whole_with_its_waiting_feed_at_nailgun_feed(fuel):
    shell = requests.get(fuel.url + "/ui/", timeout=30)
    assert (shell.status_code, upstream(shell)) == (200, "ours")
    assert "Content-Security-Policy" in shell.headers
    script = requests.get(fuel.url + "/ui/static/console.js", timeout=30)
    assert (script.status_code, upstream(script)) == (200, "ours")
    # a core route under the console is the service's: Nailgun's own never sees the console's cookie
    clusters = requests.get(fuel.url + "/ui/api/v1/clusters", timeout=30)
    assert upstream(clusters) == "ours", clusters.headers
    created = requests.post(fuel.url + "/api/v1/config/environments",
                            json={"components": [], "hierarchy_levels": []}, timeout=30).json()
    changes = "/ui/api/v1/config/environments/{0}/changes?since=0&wait=1".format(created["id"])
    through = requests.get(fuel.url + changes, timeout=30)
    assert through.status_code == 200, through.text
    assert "X-Feed-Waited" not in through.headers  # parked by nailgun-feed until its deadline
