"""``READ_CACHE.state_reader: process``: a child process reads the read cache's states (``nailgun_host.state_reader``,
``nailgun_platform.state_board``). The server's threads then send no state statement, a write is still seen by
the next read anywhere (the lease's argument), and without the child the threads read as before."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import webtest

from nailgun_host.app import build_wsgi
from nailgun_host.db import statement_reader
from nailgun_host.settings import settings
from tests.conftest import LOOPBACK
from tests.configdb.conftest import ConfigAPI, read_cache_of
from tests.processes import gone_within

LEASE_MS = 200


@pytest.fixture
def process_mode(migrated_db, db_url):
    """(The suite's ``clean_db`` puts the settings back for the next test.)"""
    settings.reload(overrides={"DATABASE_URL": db_url, "READ_CACHE": {"state_reader": "process", "lease_ms": LEASE_MS}})


def _built():
    testapp = webtest.TestApp(build_wsgi(), extra_environ=LOOPBACK)
    board = read_cache_of(testapp).board
    assert board is not None, "state_reader: process gives the read cache a board"
    return testapp, board


def _stop(board):
    board.process.terminate()
    board.process.wait(10)


def _environment(cdb):
    """(environment id, resource id) of an environment of one component with one resource, ``astute``."""
    resource = cdb.component("comp1", ["astute"])["resource_definitions"][0]["id"]
    return cdb.environment(["comp1"])["id"], resource


def _published(board, deadline=30):
    """Once the reader has published a read (it starts with the first request that wants one)."""
    stop = time.monotonic() + deadline
    while time.monotonic() < stop:
        if board.lease(time.monotonic(), LEASE_MS / 1000.0) is not None:
            return
        time.sleep(0.05)
    raise AssertionError("the state reader published nothing in {0} s".format(deadline))


def test_replayed_reads_send_no_state_statement_from_the_servers_threads(process_mode):
    testapp, board = _built()
    try:
        cdb = ConfigAPI(testapp)
        env_id, astute = _environment(cdb)
        cdb.put(env_id, astute, {"a": 1})
        url = cdb.url(env_id, astute) + "?effective"
        assert testapp.get(url).json == {"a": 1}
        _published(board)
        store = read_cache_of(testapp).store
        hits, sent, started = store.hits, statement_reader.executed, time.monotonic()
        count = 0
        while time.monotonic() - started < 6 * LEASE_MS / 1000.0:
            assert testapp.get(url).json == {"a": 1}
            count += 1
            time.sleep(0.01)
        assert store.hits == hits + count
        # a thread reading the states would have sent about one statement per lease (six); one the reader was
        # too slow for (a busy machine) is allowed
        assert statement_reader.executed - sent <= 1
        assert board._known[0] > 0
    finally:
        _stop(board)


def test_a_write_is_seen_by_the_next_read_of_a_server_whose_states_a_reader_process_reads(process_mode):
    """The lease's argument with the states read by the child: a write answered a lease after its commit is
    seen by the very next read of another server process, which replayed the old answer just before."""
    reader, board = _built()
    writer = webtest.TestApp(build_wsgi(), extra_environ=LOOPBACK)
    try:
        cdb = ConfigAPI(writer)
        env_id, astute = _environment(cdb)
        url = cdb.url(env_id, astute) + "?effective"
        for value in range(4):
            cdb.put(env_id, astute, {"a": value})
            assert reader.get(url).json == {"a": value}
            _published(board)
            hits = read_cache_of(reader).store.hits
            assert reader.get(url).json == {"a": value}
            assert read_cache_of(reader).store.hits == hits + 1  # replayed under the child's read
        # the reader stopped (a busy host): its last read is soon older than a lease, and is not taken
        os.kill(board.process.pid, signal.SIGSTOP)
        try:
            cdb.put(env_id, astute, {"a": "after"})
            assert reader.get(url).json == {"a": "after"}
        finally:
            os.kill(board.process.pid, signal.SIGCONT)
    finally:
        _stop(read_cache_of(writer).board)
        _stop(board)


def test_without_its_reader_process_a_server_reads_the_states_in_its_threads(process_mode):
    testapp, board = _built()
    cdb = ConfigAPI(testapp)
    env_id, astute = _environment(cdb)
    cdb.put(env_id, astute, {"a": 1})
    url = cdb.url(env_id, astute) + "?effective"
    assert testapp.get(url).json == {"a": 1}
    _published(board)
    board.process.kill()
    board.process.wait(10)
    sent = statement_reader.executed
    time.sleep(3 * LEASE_MS / 1000.0)
    assert testapp.get(url).json == {"a": 1}
    assert statement_reader.executed > sent
    cdb.put(env_id, astute, {"a": 2})
    assert testapp.get(url).json == {"a": 2}


def test_the_reader_process_leaves_with_its_server_and_shows_no_password(tmp_path, migrated_db, db_url):
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
        print(read_cache_of(webtest.TestApp(build_wsgi())).board.process.pid, flush=True)
        time.sleep(600)
    """)
    server = subprocess.Popen([sys.executable, "-c", script, db_url], stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
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
