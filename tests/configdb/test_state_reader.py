"""``READ_CACHE.state_reader: process``: a child process reads the read cache's states (``nailgun_host.state_reader``,
``nailgun_platform.state_board``). The server's threads then send no state statement, a write is still seen by
the next read anywhere (the lease's argument), the reader rests when requests stop, and without it the threads
read as before until it is started again."""
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import webtest

from nailgun_host import state_reader
from nailgun_host.app import build_wsgi
from nailgun_host.db import statement_reader
from nailgun_host.settings import settings
from nailgun_platform import state_board
from tests.conftest import LOOPBACK
from tests.configdb.conftest import ConfigAPI, read_cache_of
from tests.processes import gone_within, running

LEASE_MS = 200
LEASE = LEASE_MS / 1000.0
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture
def process_mode(migrated_db, db_url):
    """(The suite's ``clean_db`` puts the settings back for the next test.)"""
    settings.reload(overrides={"DATABASE_URL": db_url, "READ_CACHE": {"state_reader": "process", "lease_ms": LEASE_MS}})


@pytest.fixture
def served(process_mode):
    """(WebTest app, its ``StateReader``, the effective URL of a document holding ``{"a": 1}``, a ConfigAPI)."""
    testapp = webtest.TestApp(build_wsgi(), extra_environ=LOOPBACK)
    states = read_cache_of(testapp).board
    assert isinstance(states, state_reader.StateReader)
    cdb = ConfigAPI(testapp)
    resource = cdb.component("comp1", ["astute"])["resource_definitions"][0]["id"]
    env_id = cdb.environment(["comp1"])["id"]
    cdb.put(env_id, resource, {"a": 1})
    yield testapp, states, cdb.url(env_id, resource) + "?effective", cdb.url(env_id, resource)
    states.stop()


def _published(states, deadline=30):
    """Once the reader publishes reads (it starts with the first request that wants one, and reads while they come
    often: here one a millisecond); its process."""
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        if states.lease(time.monotonic(), LEASE) is not None:
            return states.process
        time.sleep(0.001)
    raise AssertionError("the state reader published nothing in {0} s".format(deadline))


def test_building_the_application_starts_no_reader_and_its_first_read_starts_one(process_mode):
    """(So ``nailgun-feed``, which builds it and serves no document read, has none.)"""
    testapp = webtest.TestApp(build_wsgi(), extra_environ=LOOPBACK)
    states = read_cache_of(testapp).board
    try:
        assert states.process is None and states.board is None
        cdb = ConfigAPI(testapp)
        cdb.component("comp1", ["astute"])
        assert testapp.get(cdb.url(cdb.environment(["comp1"])["id"], "astute") + "?effective").json == {}
        assert states.process is not None and running(states.process.pid)
    finally:
        states.stop()


def test_replayed_reads_send_no_state_statement_from_the_servers_threads(served):
    testapp, states, url, _ = served
    assert testapp.get(url).json == {"a": 1}
    _published(states)
    store = read_cache_of(testapp).store
    hits, sent, published, started = store.hits, statement_reader.executed, states.board._known[0], time.monotonic()
    count = 0
    while time.monotonic() - started < 6 * LEASE:
        assert testapp.get(url).json == {"a": 1}
        count += 1
        time.sleep(0.01)
    assert store.hits == hits + count
    # a thread reading the states would have sent about one statement per lease (six); one the reader was too
    # slow for (a busy machine) is allowed
    assert statement_reader.executed - sent <= 1
    assert states.board._known[0] >= published + 2 * 4, "the reader published a read per lease meanwhile"


def test_the_reader_rests_when_requests_stop(served):
    testapp, states, url, _ = served
    assert testapp.get(url).json == {"a": 1}
    _published(states)
    time.sleep(3 * LEASE)
    rested = _sequence(states)
    time.sleep(5 * LEASE)
    assert _sequence(states) == rested, "no read without requests"
    assert testapp.get(url).json == {"a": 1}
    _published(states)
    assert _sequence(states) > rested


def _sequence(states):
    """The board's sequence number: two more for each read the reader published."""
    return state_board._SEQUENCE.unpack_from(states.board._memory)[0]


def test_a_write_is_seen_by_the_next_read_of_a_server_whose_states_a_reader_process_reads(served):
    """The lease's argument with the states read by the child: a write answered a lease after its commit is
    seen by the very next read of another server process, which replayed the old answer just before."""
    reader, states, url, document = served
    writer = webtest.TestApp(build_wsgi(), extra_environ=LOOPBACK)
    try:
        for value in range(4):
            writer.put_json(document, {"a": value}, status=204)
            assert reader.get(url).json == {"a": value}
            _published(states)
            hits = read_cache_of(reader).store.hits
            assert reader.get(url).json == {"a": value}
            assert read_cache_of(reader).store.hits == hits + 1  # replayed under the child's read
        # the reader stopped (a busy host): its last read is soon older than a lease, and is not taken
        os.kill(states.process.pid, signal.SIGSTOP)
        try:
            writer.put_json(document, {"a": "after"}, status=204)
            assert reader.get(url).json == {"a": "after"}
        finally:
            os.kill(states.process.pid, signal.SIGCONT)
    finally:
        read_cache_of(writer).board.stop()


def test_a_reader_gone_leaves_the_threads_reading_until_it_is_started_again(served, monkeypatch, caplog):
    testapp, states, url, document = served
    assert testapp.get(url).json == {"a": 1}
    first = _published(states)
    first.kill()
    time.sleep(3 * LEASE)
    sent = statement_reader.executed
    assert testapp.get(url).json == {"a": 1}
    assert statement_reader.executed > sent
    testapp.put_json(document, {"a": 2}, status=204)
    assert testapp.get(url).json == {"a": 2}
    assert states.process is first, "not started again before RESTART_SECONDS"
    monkeypatch.setattr(state_reader, "RESTART_SECONDS", 0.0)
    with caplog.at_level(logging.WARNING, logger=state_reader.__name__):
        second = _published(states)
    assert second is not first and first.returncode == -signal.SIGKILL  # reaped, not left a zombie
    assert "The state reader exited (-9); it is started again" in caplog.text


def test_the_reader_leaves_with_its_server_and_shows_no_password(migrated_db, db_url):
    """Its server killed outright (no exit handler runs), the reader exits on its own; its command line is
    ``python -m nailgun_host.state_reader FD``, the database's URL coming on its standard input."""
    script = textwrap.dedent("""
        import sys, time
        from nailgun_host import db
        from nailgun_host.settings import settings
        settings.reload(overrides={"DATABASE_URL": sys.argv[1], "READ_CACHE": {"state_reader": "process"}})
        db.configure(sys.argv[1])
        from nailgun_host.app import build_wsgi
        from tests.configdb.conftest import read_cache_of
        import webtest
        states = read_cache_of(webtest.TestApp(build_wsgi())).board
        states.lease(time.monotonic(), 0.005)
        print(states.process.pid, flush=True)
        time.sleep(600)
    """)
    server = subprocess.Popen([sys.executable, "-c", script, db_url], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        pid = int(server.stdout.readline())
        with open("/proc/{0}/cmdline".format(pid), "rb") as cmdline:
            arguments = cmdline.read().split(b"\0")
        assert arguments[1:3] == [b"-m", b"nailgun_host.state_reader"] and arguments[3].isdigit()
        assert arguments[4:] == [b""], "nothing more than the board's file descriptor"
        server.send_signal(signal.SIGKILL)
        server.wait(10)
        assert gone_within([pid], 10), "the reader outlived its server"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close()


def test_a_state_reader_other_than_thread_or_process_is_refused(db_url):
    with pytest.raises(ValueError, match="READ_CACHE.state_reader must be one of thread, process"):
        settings.reload(overrides={"DATABASE_URL": db_url, "READ_CACHE": {"state_reader": "fork"}})
