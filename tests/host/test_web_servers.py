"""What the servers do before the application runs: bursts of connections, requests they cannot parse.

``nailgun-api`` (web.py's cheroot, ``nailgun_host.web_server``) and the Production page's waitress recipe, as real
processes on loopback ports.
"""
import contextlib
import json
import os
import re
import select
import signal
import socket
import time

import pytest
import requests
import webob

from tests.auth import auth_server, local_settings
from tests.conftest import LOOPBACK, LiveServer
from tests.host.test_production import recipe_process

BURST = 30
#: Content-Length values no server may read as a size
MALFORMED_LENGTHS = ["abc", "-1", "+2", "1e3", "0x2", "2, 2", "1_0", "²"]


@contextlib.contextmanager
def nailgun_api(db_url):
    server = LiveServer(db_url)
    try:
        yield server.port, server.process
    finally:
        server.stop()


SERVERS = {"nailgun-api": nailgun_api, "waitress": recipe_process}


def raw(port, request, timeout=20):
    """``(status line, headers, body)`` of what the server sends back to ``request`` (bytes) until it closes."""
    with socket.create_connection(("127.0.0.1", port), timeout) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    return lines[0], headers, body


def _established(pending, within):
    """The sockets of ``pending`` (non-blocking, connecting) whose connection the kernel completed."""
    done, deadline = set(), time.monotonic() + within
    while len(done) < len(pending) and time.monotonic() < deadline:
        _, writable, _ = select.select([], [s for s in pending if s not in done], [], 0.1)
        done.update(s for s in writable if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0)
    return done


@pytest.mark.parametrize("serving", sorted(SERVERS))
def test_a_burst_of_connections_while_the_server_is_busy_is_queued_and_answered(serving, migrated_db, db_url):
    """The server is stopped (SIGSTOP) while BURST clients connect: the kernel queues them all (a listen
    backlog of 5 completed six and dropped the others' SYNs), and once it goes on every one is answered."""
    with SERVERS[serving](db_url) as (port, process):
        sockets = [socket.socket() for _ in range(BURST)]
        os.kill(process.pid, signal.SIGSTOP)
        try:
            for sock in sockets:
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", port))
            established = _established(sockets, within=5)  # SYNs dropped at 0 s are sent again at 1 and 3 s
        finally:
            os.kill(process.pid, signal.SIGCONT)
        try:
            assert len(established) == BURST
            for sock in sockets:
                sock.setblocking(True)
                sock.settimeout(20)
                sock.sendall(b"GET /api/v1/clusters/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answers = []
            for sock in sockets:
                received = b""
                while chunk := sock.recv(65536):
                    received += chunk
                answers.append(received.split(b"\r\n", 1)[0])
            assert answers == [b"HTTP/1.1 200 OK"] * BURST
        finally:
            for sock in sockets:
                sock.close()


@pytest.fixture(scope="module")
def api_port(live_server):
    return live_server.port


@pytest.mark.parametrize("length", MALFORMED_LENGTHS)
@pytest.mark.parametrize("path", ["/api/v1/releases/", "/api/v1/clusters/1/attributes", "/keystone/v2.0/tokens", "/nowhere"])
def test_nailgun_api_answers_a_malformed_content_length_with_json_400(api_port, length, path):
    status, headers, body = raw(api_port, "POST {0} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: {1}\r\n"
                                          "Content-Type: application/json\r\n\r\n{{}}".format(path, length).encode())
    assert status == "HTTP/1.1 400 Bad Request" and headers["content-type"] == "application/json", (status, body)
    assert set(json.loads(body)) == {"message", "errors"} and "Content-Length" in json.loads(body)["message"], body


@pytest.mark.parametrize("request_text", [
    b"NOT-HTTP\r\n\r\n", b"GET /api/v1/ HTTP/1.1\r\nBad Header\r\n\r\n", b"GET /api/v1/ HTTP/9.9\r\n\r\n"])
def test_every_refusal_of_nailgun_api_s_server_is_json(api_port, request_text):
    status, headers, body = raw(api_port, request_text)
    assert status.split()[1][0] in "45" and headers["content-type"] == "application/json", (status, body)
    assert json.loads(body)["errors"] == []


#: a line of cheroot's own in the request log's format (nailgun_host.request_log.FORMAT): time, level, logger, request id
CHEROOT_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (INFO|WARNING|ERROR) nailgun\.server \[-\] Client \(")


def test_nailgun_api_logs_its_clients_tls_failures_with_time_and_level(migrated_db, db_url, tls):
    """A client that refuses the certificate, and one speaking plain HTTP to the TLS port: cheroot's lines about
    them have the request log's time and level, where cheroot alone writes them bare on stderr."""
    server = auth_server(db_url, local_settings(), tls=tls)
    try:
        with pytest.raises(requests.exceptions.SSLError):
            requests.get(server.url + "/api/v1/version", verify=tls.wrong_ca_file, timeout=30)
        with contextlib.suppress(ConnectionResetError):  # cheroot answers 400 and closes, maybe before it read all
            raw(server.port, b"GET /api/v1/version HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with open(server.log_path, encoding="utf-8", errors="replace") as log:
                lines = [line for line in log if "Client (" in line]
            # both clients' lines; others may come first (the start-up probe's connection, closed at once)
            if any("during handshake" in line and "unknown ca" in line for line in lines) and \
                    any("attempted to speak plain HTTP" in line for line in lines):
                break
            time.sleep(0.1)
    finally:
        server.stop()
    assert any("during handshake" in line and "unknown ca" in line for line in lines), lines
    assert any("attempted to speak plain HTTP" in line for line in lines), lines
    assert all(CHEROOT_LINE.match(line) for line in lines), lines


@pytest.mark.parametrize("length", MALFORMED_LENGTHS)
def test_the_application_refuses_a_malformed_content_length_whatever_serves_it(app, length):
    """gunicorn and uwsgi may hand the application what they do not check themselves."""
    for path in ("/api/v1/releases/", "/api/v1/clusters/", "/api/v1/clusters/1/attributes", "/nowhere"):
        request = webob.Request.blank(path, method="POST", body=b"{}", environ=LOOPBACK)
        request.environ["CONTENT_LENGTH"] = length  # as the server passes it on
        refused = request.get_response(app.app)
        assert refused.status_int == 400 and refused.json["message"].startswith("Content-Length must be"), path
    assert app.get("/api/v1/releases/").json == []


@pytest.mark.parametrize("length", ["abc", "-1"])
def test_waitress_refuses_a_malformed_content_length_itself(migrated_db, db_url, length):
    """Not ours to shape: waitress answers 400 before the application runs (text/plain, its own words)."""
    with recipe_process(db_url) as (port, _process):
        status, _, body = raw(port, "POST /api/v1/releases/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                                    "Content-Length: {0}\r\n\r\n{{}}"
                              .format(length).encode())
    assert status == "HTTP/1.1 400 Bad Request" and b"Content-Length is invalid" in body
