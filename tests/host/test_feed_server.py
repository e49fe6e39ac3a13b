"""Waiting on the change feed across real processes: ``nailgun-feed`` next to ``nailgun-api``, and
``gunicorn -w 2``, on the suite's database (SQLite, or PostgreSQL with NAILGUN_TEST_DB_URL).

What is asserted is counted (threads, answers, headers); the one time asserted is the brief's:
a waiter is answered within ``WOKEN_WITHIN`` of the write that wakes it, well before its ``wait``.
"""
import asyncio
import contextlib
import datetime
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests

from tests.conftest import free_port, stop_process

BIN = os.path.dirname(sys.executable)
API = "/api/v1/config"
WOKEN_WITHIN = 1.0
WAIT = 60
FEED_THREADS = 4


class FeedServer:
    """A real ``nailgun-feed`` on a free loopback port, sharing the test database."""

    def __init__(self, db_url, threads=FEED_THREADS, env=None, preexec_fn=None):
        self.port = free_port()
        self.url = "http://127.0.0.1:{0}".format(self.port)
        self.process = subprocess.Popen(
            [os.path.join(BIN, "nailgun-feed"), "--db-url", db_url, "--port", str(self.port),
             "--threads", str(threads)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env=dict(os.environ, **(env or {})), preexec_fn=preexec_fn)
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, "nailgun-feed exited with {0}".format(self.process.returncode)
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
                break
            assert time.monotonic() < deadline, "nailgun-feed did not start listening"
            time.sleep(0.1)

    def threads(self):
        with open("/proc/{0}/status".format(self.process.pid)) as status:
            return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))

    def stop(self):
        stop_process(self.process)


@pytest.fixture
def feed_server(migrated_db, db_url):
    server = FeedServer(db_url)
    yield server
    server.stop()


def setup_environment(base, headers=None):
    """A component with one resource and an environment over nodes; ``(environment id, resource id)``."""
    component = requests.post(base + API + "/components", json={
        "name": "comp", "resource_definitions": [{"name": "res", "content": {}}]}, headers=headers, timeout=30).json()
    environment = requests.post(base + API + "/environments", json={
        "components": [component["id"]], "hierarchy_levels": ["nodes"]}, headers=headers, timeout=30).json()
    return environment["id"], component["resource_definitions"][0]["id"]


def write(base, env_id, rid, data, headers=None):
    response = requests.put("{0}{1}/environments/{2}/resources/{3}/values".format(base, API, env_id, rid),
                            json=data, headers=headers, timeout=30)
    assert response.status_code == 204, response.text
    return time.monotonic()


class Waiter(threading.Thread):
    def __init__(self, base, env_id, since=0, headers=None, wait=WAIT):
        super().__init__(daemon=True)
        self.url = "{0}{1}/environments/{2}/changes?since={3}&wait={4}".format(base, API, env_id, since, wait)
        self.headers = headers
        self.response = self.answered = None
        self.start()

    def run(self):
        self.response = requests.get(self.url, headers=self.headers, timeout=WAIT + 30)
        self.answered = time.monotonic()


def assert_woken(waiter, written):
    waiter.join(WAIT + 30)
    assert waiter.response is not None and waiter.response.status_code == 200, waiter.response
    answer = waiter.response.json()
    assert [c["change"] for c in answer["changes"]] == ["write"]
    assert "X-Nailgun-Park" not in waiter.response.headers and "X-Feed-Waited" not in waiter.response.headers
    assert waiter.answered - written < WOKEN_WITHIN


def settle(base, env_id, headers=None):
    """One plain read of the feed through ``base``: the waiters started before have reached it."""
    assert requests.get("{0}{1}/environments/{2}/changes?since=0".format(base, API, env_id), headers=headers,
                        timeout=30).status_code == 200


def test_a_feed_waiter_is_woken_by_a_write_through_the_api_server(live_server, feed_server):
    env_id, rid = setup_environment(live_server.url)
    waiter = Waiter(feed_server.url, env_id)
    settle(feed_server.url, env_id)
    time.sleep(0.5)  # not needed for correctness (the mark closes the gap); lets the waiter park first
    assert waiter.response is None
    assert_woken(waiter, write(live_server.url, env_id, rid, {"a": 1}))


def test_a_waiter_on_one_gunicorn_worker_is_woken_by_a_write_on_the_other(gunicorn):
    base = gunicorn.rstrip("/").rsplit("/api/v1", 1)[0]
    env_id, rid = setup_environment(base)
    waiter = Waiter(base, env_id)
    time.sleep(0.5)  # the sync worker that took the waiter is busy: the write goes to the other one
    assert waiter.response is None
    assert_woken(waiter, write(base, env_id, rid, {"a": 1}))


def _raw_get(port, path):
    sock = socket.create_connection(("127.0.0.1", port), 30)
    sock.sendall("GET {0} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".format(path).encode())
    return sock


def _read_answer(sock):
    data = b""
    sock.settimeout(WAIT + 30)
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    sock.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, json.loads(body)


def test_two_hundred_parked_waiters_hold_no_threads_and_the_api_still_answers(live_server, feed_server):
    env_id, rid = setup_environment(live_server.url)
    settle(feed_server.url, env_id)
    idle_threads = feed_server.threads()
    path = "{0}/environments/{1}/changes?since=0&wait={2}".format("/api/v1/config", env_id, WAIT)
    waiters = [_raw_get(feed_server.port, path) for _ in range(200)]
    try:
        # the feed server answers other requests while they wait, and so does the API server
        for base in (feed_server.url, live_server.url):
            answer = requests.get("{0}{1}/environments/{2}".format(base, API, env_id), timeout=30)
            assert answer.status_code == 200 and answer.json()["revision"] == 0
        settle(feed_server.url, env_id)
        parked_threads = feed_server.threads()
        readable, _, _ = select.select(waiters, [], [], 0)
        assert readable == []  # none has been answered: each waits, parked
        assert parked_threads <= idle_threads + FEED_THREADS, (idle_threads, parked_threads)
        write(live_server.url, env_id, rid, {"a": 1})
        answers = [_read_answer(sock) for sock in waiters]
    finally:
        for sock in waiters:
            sock.close()
    assert {status for status, _, _ in answers} == {200}
    assert all([c["revision"] for c in body["changes"]] == [1] for _, _, body in answers)
    assert not any("x-nailgun-park" in headers or "x-feed-waited" in headers for _, headers, _ in answers)
    assert feed_server.threads() <= idle_threads + FEED_THREADS


@pytest.mark.parametrize("method, path, body", [
    ("GET", "/config/environments/{env}/changes", None),
    ("GET", "/config/environments/{env}/changes?since=x", None),
    ("GET", "/config/environments/{env}/changes?since=0&wait=61", None),
    ("GET", "/config/environments/999/changes?since=0", None),
    ("GET", "/config/environments/{env}/changes?since=0&wait=0", None),
    ("GET", "/nowhere", None),
    ("POST", "/config/components", b"{not json"),
    ("PUT", "/config/environments/{env}/resources/{res}/values", b"[1]"),
    ("PUT", "/config/environments/{env}/resources/{res}/values", b'{"k": ' + b"[" * 200 + b"]" * 200 + b"}"),
])
def test_the_feed_server_answers_exactly_as_the_api_server(live_server, feed_server, method, path, body):
    env_id, rid = setup_environment(live_server.url)
    url = "/api/v1" + path.format(env=env_id, res=rid)
    answers = []
    for base in (live_server.url, feed_server.url):
        response = requests.request(method, base + url, data=body, timeout=30,
                                    headers={"Content-Type": "application/json"})
        answers.append((response.status_code, response.headers.get("Content-Type"), response.json(),
                        response.headers.get("ETag")))
    assert answers[0] == answers[1]
    assert answers[0][0] < 500


@pytest.mark.parametrize("peer, trusted, forwarded, client", [
    ("127.0.0.1", "127.0.0.1", ["10.0.0.5"], "10.0.0.5"),                  # nginx names the client
    ("127.0.0.1", "127.0.0.1", ["10.0.0.9, 10.0.0.5"], "10.0.0.5"),        # the proxy's own entry is the last
    ("127.0.0.1", "127.0.0.1", ["10.0.0.9", "10.0.0.5"], "10.0.0.5"),      # one header a line
    ("127.0.0.1", "127.0.0.1", [], "127.0.0.1"),                           # a local client, not through nginx
    ("10.0.0.7", "127.0.0.1", ["127.0.0.1"], "10.0.0.7"),                  # anyone else's header is ignored
    ("127.0.0.1", None, ["10.0.0.5"], "127.0.0.1"),                        # without --trusted-proxy, the peer
])
def test_the_client_is_the_peer_or_what_the_trusted_proxy_says(peer, trusted, forwarded, client):
    from aiohttp import test_utils
    from multidict import CIMultiDict

    from nailgun_platform.feed_server import client_address

    class Transport:
        def get_extra_info(self, name, default=None):
            return (peer, 40000) if name == "peername" else default

    headers = CIMultiDict(("X-Forwarded-For", value) for value in forwarded)
    request = test_utils.make_mocked_request("GET", "/api/v1/version", headers=headers, transport=Transport())
    assert client_address(request, trusted) == client


def test_a_parked_waiter_is_answered_at_its_own_deadline_and_its_neighbour_waits_on(live_server, feed_server):
    env_id, rid = setup_environment(live_server.url)
    short = Waiter(feed_server.url, env_id, wait=1)
    long = Waiter(feed_server.url, env_id)
    short.join(WAIT)
    assert short.response.status_code == 200 and short.response.json()["changes"] == []
    assert "X-Nailgun-Park" not in short.response.headers
    assert long.response is None
    assert_woken(long, write(live_server.url, env_id, rid, {"a": 1}))


def test_waiters_woken_together_are_each_authenticated_again(db_url, migrated_db, tmp_path):
    """A token that expired while its request was parked, and a user removed from the users file meanwhile,
    get 401 when a write wakes them, as they would at once; the admin parked with them gets the change."""
    from tests.auth import LOCAL_USERS, ROLES, auth_server, basic, local_settings, write_users_file

    api = auth_server(db_url, local_settings(token_ttl=3), directory=str(tmp_path))
    feed = FeedServer(db_url, env={"NAILGUN_CONFIG": api.config_file})
    try:
        admin = basic("admin")
        env_id, rid = setup_environment(api.url, admin)
        login = requests.post(api.url + "/keystone/v2.0/tokens", json={"auth": {"passwordCredentials": {
            "username": "admin", "password": LOCAL_USERS["admin"]}, "tenantName": "admin"}}, timeout=30).json()
        token = {"X-Auth-Token": login["access"]["token"]["id"]}
        waiters = {"token": Waiter(feed.url, env_id, headers=token), "admin": Waiter(feed.url, env_id, headers=admin),
                   "reader": Waiter(feed.url, env_id, headers=basic("reader"))}
        settle(feed.url, env_id, admin)
        time.sleep(0.5)  # lets the waiters park (the wake comes seconds later anyway)
        assert {name: w.response for name, w in waiters.items()} == dict.fromkeys(waiters)  # all parked
        write_users_file(api.users_file, {name: (LOCAL_USERS[name], ROLES[name]) for name in ROLES if name != "reader"})
        time.sleep(max(0.0, datetime.datetime.fromisoformat(
            login["access"]["token"]["expires"].replace("Z", "+00:00")).timestamp() - time.time() + 0.2))
        write(api.url, env_id, rid, {"a": 1}, admin)
        for waiter in waiters.values():
            waiter.join(WAIT + 30)
        assert waiters["token"].response.status_code == 401
        assert waiters["reader"].response.status_code == 401
        assert waiters["admin"].response.status_code == 200
        assert [c["revision"] for c in waiters["admin"].response.json()["changes"]] == [1]
    finally:
        feed.stop()
        api.stop()


def test_the_feed_raises_its_open_files_soft_limit_to_the_hard_one(migrated_db, db_url):
    """Each parked reader holds a socket: a soft limit of 1024 (systemd's default) would refuse the 1,000th."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip("the hard limit of open files is {0}: nothing to raise".format(hard))
    server = FeedServer(db_url, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard)))
    try:
        with open("/proc/{0}/limits".format(server.process.pid)) as limits:
            soft, limit = next(line.split()[3:5] for line in limits if line.startswith("Max open files"))
        assert soft == limit != "256"
    finally:
        server.stop()


class _Listener:
    """The seam of ``Parking``: a listener whose topics move when the test says."""

    def __init__(self):
        self.seq, self.watchers = 0, []

    def mark(self, topic):
        return (0, self.seq)

    def watch(self, callback):
        self.watchers.append(callback)

    def unwatch(self, callback):
        self.watchers.remove(callback)


class _Runner:
    """Runs nothing: each request's future gets the name its ``make_environ`` returns."""

    def __init__(self):
        self.ran = []

    def run_all(self, requests):
        for make_environ, future in requests:
            self.ran.append(make_environ())
            future.set_result(make_environ())

    def run(self, make_environ, future):
        self.run_all([(make_environ, future)])


def test_parked_requests_hold_one_timer_of_the_loop_and_a_wake_cancels_none():
    """A wake of a thousand must not cancel a thousand timers of the loop (each cancelled one costs its heap);
    the earliest deadline still answers its request alone, and a request gone is never run."""
    from nailgun_platform import feed_server

    async def scenario():
        loop = asyncio.get_running_loop()
        parking = feed_server.Parking(loop, _Listener(), _Runner())
        now = loop.time()
        waiters = [asyncio.ensure_future(parking.park("t", (0, 0), now + 60 + i, lambda i=i: i)) for i in range(100)]
        short = asyncio.ensure_future(parking.park("t", (0, 0), now + 0.05, lambda: "short"))
        gone = asyncio.ensure_future(parking.park("t", (0, 0), now + 0.02, lambda: "gone"))
        await asyncio.sleep(0)
        assert len([handle for handle in loop._scheduled if not handle.cancelled()]) == 1
        gone.cancel()
        assert await short == "short"
        assert "gone" not in parking.runner.ran
        cancelled = sum(handle.cancelled() for handle in loop._scheduled)
        parking._wake("t")
        assert await asyncio.gather(*waiters) == list(range(100))
        assert sum(handle.cancelled() for handle in loop._scheduled) == cancelled
        parking.close()

    asyncio.run(scenario())


def test_the_deadlines_of_woken_requests_do_not_pile_up():
    """Readers woken and parked again, write after write: the deadlines of those gone are dropped."""
    from nailgun_platform import feed_server

    async def scenario():
        loop = asyncio.get_running_loop()
        parking = feed_server.Parking(loop, _Listener(), _Runner())
        for _ in range(5):
            waiters = [asyncio.ensure_future(parking.park("t", (0, 0), loop.time() + 60, lambda: None))
                       for _ in range(1000)]
            await asyncio.sleep(0)
            parking._wake("t")
            await asyncio.gather(*waiters)
        assert len(parking._deadlines) <= feed_server.COMPACT_ABOVE
        parking.close()

    asyncio.run(scenario())
