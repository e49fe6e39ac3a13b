"""The production recipe of the docs, run as printed: slow clients, a database that is down or not migrated.

The server command is read from docs/operator/production.md, so the recipe that is
documented is the one that is tested. Waits are generous bounds on "is it served at all",
never measurements of speed.
"""
import base64
import contextlib
import glob
import http.client
import json
import os
import re
import shlex
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

import pytest
import requests

from nailgun_platform import strict_yaml
from tests.conftest import free_port
from tests.host.test_input_rules import all_routes, methods
from tests.processes import gone_within, state_readers
from tests.test_docs import PRODUCTION, fenced_blocks, page

#: how long a request that must be served may take before the test calls it stuck
#: (gunicorn's sync workers hold stalled clients for their 30 s timeout)
SERVED_WITHIN = 20
#: what a slow client promises and never sends in full
PROMISED = 1000
BIN = os.path.dirname(sys.executable)


#: the directories the Production recipe writes to; a test moves each under a directory of its own
RECIPE_DIRECTORIES = ("/etc/fuel-nailgun-extensions", "/var/log/fuel-nailgun-extensions",
                      "/var/lib/fuel-nailgun-extensions")


def recipe_block():
    """The Production page's bash block that starts the server."""
    blocks = [content for info, content in fenced_blocks(page(PRODUCTION))
              if info == "bash" and "\nwaitress-serve " in content]
    assert len(blocks) == 1, "the Production page shows one block with a waitress-serve command"
    return blocks[0]


def recipe_command(port, *extra):
    """The Production page's server command, listening on a loopback port instead of 0.0.0.0:8000."""
    lines = [line for line in recipe_block().splitlines() if line.startswith("waitress-serve ")]
    assert len(lines) == 1, "the Production page shows one waitress-serve command"
    args = [arg.replace("0.0.0.0:8000", "127.0.0.1:{0}".format(port)) for arg in shlex.split(lines[0], comments=True)]
    return [os.path.join(BIN, args[0])] + args[1:-1] + list(extra) + args[-1:]


@contextlib.contextmanager
def recipe_process(db_url, *extra, env=None, command=None):
    """The recipe's server (or ``command(port)``) on a free loopback port, in ``env`` (default: this process's)
    with ``NAILGUN_DB_URL=db_url`` (unless None); yields the port and the process."""
    port = free_port()
    environ = dict(os.environ if env is None else env)
    if db_url:
        environ["NAILGUN_DB_URL"] = db_url
    process = subprocess.Popen((command or recipe_command)(port, *extra), env=environ,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, "the recipe's server exited with {0}".format(process.returncode)
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert time.monotonic() < deadline, "the recipe's server did not start listening"
            time.sleep(0.1)
        yield port, process
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def recipe_server(db_url, *extra, env=None):
    """The recipe's server on a free loopback port with ``NAILGUN_DB_URL=db_url``; yields the port."""
    with recipe_process(db_url, *extra, env=env) as (port, _process):
        yield port


def request(port, method, path, body=None, timeout=SERVED_WITHIN, headers=None):
    """``(status, headers, JSON body)`` of one request; the answer must be JSON."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request(method, path, body=None if body is None else json.dumps(body),
                           headers=dict({"Content-Type": "application/json"}, **(headers or {})))
        response = connection.getresponse()
        data = response.read()
        assert response.getheader("Content-Type", "").startswith("application/json"), data[:200]
        return response.status, response.headers, json.loads(data)
    finally:
        connection.close()


def stall(port):
    """A client that sends its headers, promises PROMISED bytes of body, and sends none of them."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=SERVED_WITHIN * 3)
    sock.sendall("POST /api/v1/releases/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 "Content-Length: {0}\r\n\r\n".format(PROMISED).encode())
    return sock


def read_answer(sock):
    """Everything the server sends until it closes the connection or the answer is complete."""
    response = http.client.HTTPResponse(sock)
    try:
        response.begin()
    except (http.client.RemoteDisconnected, ConnectionResetError):
        return None, b""
    return response, response.read()


def recipe_script(root, db_url):
    """The Production block as bash runs it, up to the server (without ``pip install``): its directories under
    ``root`` and ``db_url`` for the settings file's DATABASE_URL, nothing else changed."""
    script = "\n".join(line for line in recipe_block().splitlines()
                       if not line.startswith(("pip install ", "waitress-serve ")))
    for directory in RECIPE_DIRECTORIES:
        script = script.replace(directory, str(root) + directory)
    placeholder = re.findall(r"^DATABASE_URL: (\S+)$", script, re.M)
    assert len(placeholder) == 1 and "PASSWORD" in placeholder[0], "the settings file names the database once"
    script = script.replace(placeholder[0], db_url)
    paths = re.findall(r"(?<![\w./:-])/[^\s'\"]*", script)
    assert paths and all(path.startswith(str(root) + "/") for path in paths), paths
    return script


def basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode("{0}:{1}".format(user, password).encode()).decode()}


def test_the_recipe_copied_literally_serves_only_its_user(empty_db_url, tmp_path):
    """The Production block as printed, on a new database: it writes the whole settings file, migrates, adds
    the admin (password on stdin) and starts the server, which answers 401 to anyone but that user."""
    environ = {key: value for key, value in os.environ.items() if not key.startswith("NAILGUN_")}
    environ.update(PATH=BIN + os.pathsep + environ.get("PATH", ""), HOME=str(tmp_path))
    script = recipe_script(tmp_path, empty_db_url)
    ran = subprocess.run(["bash", "-e", "-c", script], input="admin-secret\n", env=environ, cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    config = re.search(r"^export NAILGUN_CONFIG=(\S+)$", script, re.M).group(1)
    assert stat.S_IMODE(os.stat(config).st_mode) == 0o600
    written = strict_yaml.load(open(config))
    assert written["AUTH"]["method"] == "local" and written["DATABASE_URL"] == empty_db_url
    with recipe_process(None, env=dict(environ, NAILGUN_CONFIG=config)) as (port, server):
        status, headers, answer = request(port, "GET", "/api/v1/clusters/")
        assert status == 401 and headers["WWW-Authenticate"] == 'Basic realm="nailgun"', answer
        assert request(port, "GET", "/api/v1/clusters/", headers=basic("admin", "wrong"))[0] == 401
        assert request(port, "POST", "/api/v1/releases/", {"name": "r", "version": "v", "operating_system": "Ubuntu"},
                       headers=basic("nobody", "admin-secret"))[0] == 401
        assert request(port, "GET", "/api/v1/clusters/", headers=basic("admin", "admin-secret"))[::2] == (200, [])
        assert request(port, "GET", "/api/v1/version")[2]["auth_required"] is True
        assert request(port, "GET", "/ui/api/v1/clusters/")[0] == 401  # the console: only its signed-in user
        browser = requests.Session()
        shell = browser.get("http://127.0.0.1:{0}/ui/".format(port), timeout=30)
        login = re.search(r'name="csrf" value="([^"]+)"', shell.text.split('id="sign-in"')[1]).group(1)
        for password, status in (("wrong", 401), ("admin-secret", 200)):
            browser.post("http://127.0.0.1:{0}/ui/sign-in".format(port), timeout=30,
                         data={"username": "admin", "password": password, "csrf": login})
            assert browser.get("http://127.0.0.1:{0}/ui/api/v1/clusters/".format(port), timeout=30).status_code == status
        admin = basic("admin", "admin-secret")
        created = request(port, "POST", "/api/v1/config/components", {"name": "c", "resource_definitions": [
            {"name": "astute", "content": {}}]}, headers=admin)
        assert created[0] == 201, created
        created = request(port, "POST", "/api/v1/config/environments", {"components": ["c"], "hierarchy_levels": []},
                          headers=admin)
        assert created[0] == 201, created
        url = "/api/v1/config/environments/{0}/resources/astute/values".format(created[2]["id"])
        for value in range(3):
            assert requests.put("http://127.0.0.1:{0}{1}".format(port, url.replace("astute", str(
                created[2]["pins"][0]["id"]))), json={"a": value}, headers=admin, timeout=30).status_code == 204
            assert [request(port, "GET", url + "?effective", headers=admin)[2] for _ in range(3)] == [{"a": value}] * 3
        readers = state_readers(server.pid)
        assert len(readers) == 1, "READ_CACHE.state_reader: process starts one reader beside the server"
    assert gone_within(readers, 10), "the reader stops with its server"
    log = written["LOG"]["file"]
    assert log.startswith(str(tmp_path)) and '"GET /api/v1/clusters/" 401' in open(log).read()


def test_four_stalled_clients_do_not_stop_a_fifth(migrated_db, db_url):
    with recipe_server(db_url) as port:
        stalled = [stall(port) for _ in range(4)]
        try:
            status, _, releases = request(port, "GET", "/api/v1/releases/")
            assert (status, releases) == (200, [])
            status, _, created = request(port, "POST", "/api/v1/releases/", {
                "name": "fifth", "version": "v-9.0", "operating_system": "Ubuntu"})
            assert status == 201 and created["name"] == "fifth"
            # the stalled clients finally send their bodies, and get JSON answers
            for number, sock in enumerate(stalled):
                body = json.dumps({"name": "slow-{0}".format(number), "version": "v-9.0",
                                   "operating_system": "Ubuntu"}).encode()
                sock.sendall(body.ljust(PROMISED))
                response, data = read_answer(sock)
                assert response.status == 201 and response.getheader("Content-Type") == "application/json"
                assert json.loads(data)["name"] == "slow-{0}".format(number)
        finally:
            for sock in stalled:
                sock.close()
        status, _, releases = request(port, "GET", "/api/v1/releases/")
        assert sorted(r["name"] for r in releases) == ["fifth", "slow-0", "slow-1", "slow-2", "slow-3"]


def test_a_client_that_never_sends_its_body_is_disconnected_soon_after_the_channel_timeout(migrated_db, db_url):
    """The recipe's command with a channel timeout of 2 s instead of 60: the stalled connection is closed, with
    no answer or JSON, after those 2 s and within the recipe's ``--cleanup-interval`` more, as the Production page says
    (waitress's default interval of 30 s kept it open up to 32 s). A bound on whether it is closed at all, not a
    measure of speed: the margin is generous."""
    interval = [int(arg.split("=", 1)[1]) for arg in recipe_command(0) if arg.startswith("--cleanup-interval=")]
    assert len(interval) == 1, "the recipe sets --cleanup-interval"
    assert "--channel-timeout=60" in recipe_command(0)

    def command(port):
        return [arg.replace("--channel-timeout=60", "--channel-timeout=2") for arg in recipe_command(port)]

    with recipe_process(db_url, command=command) as (port, _process):
        started = time.monotonic()
        sock = stall(port)
        try:
            response, data = read_answer(sock)
        finally:
            sock.close()
        held = time.monotonic() - started
        assert response is None or response.getheader("Content-Type") == "application/json", data[:200]
        assert b"<html" not in data.lower()
        assert 2 <= held < 2 + interval[0] + 3, held
        assert request(port, "GET", "/api/v1/releases/")[0] == 200


def assert_unavailable(port, message):
    for method, path, body in (("GET", "/api/v1/clusters/", None), ("GET", "/api/v1/nodes/1", None),
                               ("POST", "/api/v1/releases/", {"name": "r", "version": "v-9.0",
                                                              "operating_system": "Ubuntu"}),
                               ("GET", "/api/v1/config/environments", None), ("GET", "/api/v1/health", None)):
        status, headers, answer = request(port, method, path, body)
        assert (status, answer["message"]) == (503, message), (method, path, answer)
        assert int(headers["Retry-After"]) > 0
    status, _, version = request(port, "GET", "/api/v1/version")
    assert status == 200 and version["release"] == "9.0"


#: the routes that answer without the database (/identity: from the request's identity alone)
WITHOUT_DATABASE = {"/", "/version", "/extensions", "/openapi.json", "/identity"}
#: a value for each placeholder that is not an id
PLACEHOLDERS = {"provider": "neutron", "levels": "nodes/1/", "resource": "1", "kind": "values",
                "operation": "set", "path": "name", "session": "0" * 32}


def assert_every_route_unavailable(port):
    """Every route and method of every URL map: a 503 with Retry-After, or a 4xx the request
    earns without the database; GETs of database routes are always 503."""
    wrong = []
    for entry in all_routes():
        path = "/api/v1" + re.sub(r"<([a-z_]+)>", lambda m: PLACEHOLDERS.get(m.group(1), "1"),
                                  entry["template"]).replace("//", "/")
        for method in methods(entry["handler"]):
            body = {} if method in ("POST", "PUT", "PATCH") else None
            status, headers, answer = request(port, method, path, body)
            if entry["template"] in WITHOUT_DATABASE:
                ok = status == 200
            elif status == 503:
                ok = int(headers["Retry-After"]) > 0
            else:
                ok = method != "GET" and 400 <= status < 500
            if not ok:
                wrong.append((method, path, status, answer))
    assert wrong == []


def test_a_database_that_does_not_answer_is_503_with_retry_after(migrated_db):
    closed = "postgresql+psycopg://nailgun:nailgun@127.0.0.1:{0}/nailgun".format(free_port())
    with recipe_server(closed) as port:
        assert_unavailable(port, "The database is unavailable; try again later")
        assert_every_route_unavailable(port)


def test_workers_on_an_unmigrated_database_answer_503_naming_nailgun_syncdb(migrated_db, tmp_path):
    url = "sqlite:///" + str(tmp_path / "unmigrated.db")
    with recipe_server(url) as port:
        assert_unavailable(port, "The database is not migrated: run nailgun-syncdb")
        assert_every_route_unavailable(port)
        _, _, health = request(port, "GET", "/api/v1/health")
        assert {"core is at no revision"} <= {e.split(",")[0] for e in health["errors"]}
        subprocess.run([os.path.join(BIN, "nailgun-syncdb"), "--db-url", url], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # migrated under the running server: it serves without a restart
        status, _, health = request(port, "GET", "/api/v1/health")
        assert status == 200 and set(health["migrations"]) == {"core", "cluster_upgrade", "configdb"}
        assert request(port, "GET", "/api/v1/clusters/")[:3:2] == (200, [])


@contextlib.contextmanager
def own_postgresql():
    """A PostgreSQL cluster of this test's own, in a temporary directory: the test may stop it.

    Never the shared one. Needs the server's binaries and root (to run them as ``postgres``).
    """
    if not os.environ.get("NAILGUN_TEST_DB_URL", "").startswith("postgresql"):
        pytest.skip("stops a PostgreSQL server of its own: runs with the PostgreSQL suite (NAILGUN_TEST_DB_URL)")
    binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not binaries or os.geteuid() != 0:
        pytest.skip("needs PostgreSQL's server binaries and root to run them as the postgres user")
    # not pytest's tmp_path: the postgres user cannot enter root's pytest directories
    data = tempfile.mkdtemp(prefix="nailgun-test-pg-")
    shutil.chown(data, "postgres")
    port = free_port()

    def run(*command):
        subprocess.run(["runuser", "-u", "postgres", "--", os.path.join(binaries[-1], command[0])] + list(command[1:]),
                       check=True, cwd="/", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    run("initdb", "-D", data, "-A", "trust", "-U", "postgres")
    options = "-p {0} -k {1} -c listen_addresses=127.0.0.1".format(port, data)

    def start():
        run("pg_ctl", "-D", data, "-o", options, "-w", "start")

    def stop():
        run("pg_ctl", "-D", data, "-m", "fast", "-w", "stop")

    start()
    try:
        run("createdb", "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "nailgun")
        yield "postgresql+psycopg://postgres@127.0.0.1:{0}/nailgun".format(port), start, stop
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            stop()
        shutil.rmtree(data, ignore_errors=True)


def test_postgresql_going_down_is_503_and_coming_back_serves_again():
    with own_postgresql() as (url, start, stop):
        subprocess.run([os.path.join(BIN, "nailgun-syncdb"), "--db-url", url], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with recipe_server(url) as port:
            assert request(port, "GET", "/api/v1/clusters/")[:3:2] == (200, [])
            stop()
            assert_unavailable(port, "The database is unavailable; try again later")
            start()
            assert request(port, "GET", "/api/v1/health")[0] == 200
            status, _, created = request(port, "POST", "/api/v1/releases/", {
                "name": "back", "version": "v-9.0", "operating_system": "Ubuntu"})
            assert status == 201 and request(port, "GET", "/api/v1/releases/")[2] == [created]


def test_health_names_each_part_at_its_head(app):
    health = app.get("/api/v1/health").json
    assert health["status"] == "ok"
    assert set(health["migrations"]) == {"core", "cluster_upgrade", "configdb"}
    assert all(len(revisions) == 1 for revisions in health["migrations"].values())


def test_nailgun_api_answers_head_without_a_body(live_server):
    """cheroot sends whatever body the application gives a HEAD: a keep-alive client would read it as the next
    answer's start."""
    import socket

    for path in ("/api/v1/version", "/api/v1/releases/"):
        with socket.create_connection(("127.0.0.1", live_server.port), 5) as sock:
            sock.sendall("HEAD {0} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".format(path).encode())
            received = b""
            while chunk := sock.recv(65536):
                received += chunk
        head, _, rest = received.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200") and rest == b"", received


def test_the_recipe_s_server_keeps_a_connection_for_the_next_request(migrated_db, db_url):
    """Answers tell their length (web.py streams even whole ones), so waitress need not close after each:
    fuel2, LCM tools and writers pay one connection, not one per request."""
    with recipe_server(db_url) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=SERVED_WITHIN)
        try:
            for method, path, body in (("GET", "/api/v1/clusters/", None), ("GET", "/api/v1/nodes/", None),
                                       ("POST", "/api/v1/releases/", {"name": "r", "version": "v",
                                                                      "operating_system": "Ubuntu"}),
                                       ("GET", "/api/v1/nowhere/", None)):
                connection.request(method, path, body=None if body is None else json.dumps(body),
                                   headers={"Content-Type": "application/json"})
                response = connection.getresponse()
                data = response.read()
                assert response.getheader("Content-Length") == str(len(data)), (path, response.headers)
                assert response.getheader("Connection") != "close" and not response.will_close, path
            sock = connection.sock
            connection.request("GET", "/api/v1/version")
            assert connection.getresponse().read() and connection.sock is sock  # the same connection all along
        finally:
            connection.close()
