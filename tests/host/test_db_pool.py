"""The connection pool: connections kept for every thread of the production recipe, and (PostgreSQL) a pooled
connection pinged only after it sat idle (``nailgun_host.db.POOL_SIZE``, ``PING_AFTER_IDLE``)."""
import socket
import threading
import time

import pytest
import sqlalchemy as sa

from nailgun_host import db as host_db


@pytest.fixture
def engine(migrated_db, db_url):
    if sa.make_url(db_url).get_backend_name() != "postgresql":
        pytest.skip("SQLite's connections are files opened in this process: nothing to keep or ping")
    return migrated_db[0]


@pytest.fixture
def pings(engine, monkeypatch):
    """The pings the pool sends, counted."""
    sent = []
    ping = engine.dialect.do_ping

    def counted(dbapi_connection):
        sent.append(dbapi_connection)
        return ping(dbapi_connection)

    monkeypatch.setattr(engine.dialect, "do_ping", counted)
    return sent


def _backend(engine):
    with engine.connect() as connection:
        return connection.execute(sa.text("SELECT pg_backend_pid()")).scalar()


def _terminate(db_url, *pids):
    """The server processes ``pids`` ended by PostgreSQL (as a restart would), waited for."""
    other = sa.create_engine(db_url)
    try:
        with other.begin() as connection:
            for pid in pids:
                assert connection.execute(sa.text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid}).scalar()
    finally:
        other.dispose()


def test_the_production_recipes_threads_each_keep_a_connection(migrated_db):
    """Eight requests at once (waitress --threads=8), twice: the second time connects nothing new. The pool kept 5
    before, and opened and closed the others for every request: a new server process (PostgreSQL), the file opened
    and its pragmas run (SQLite), each time."""
    engine = migrated_db[0]
    engine.dispose()
    connected = []

    def count(*_):
        connected.append(1)

    done = []

    def request(together):
        with engine.connect() as connection:
            together.wait(10)  # all eight hold a connection at once
            connection.execute(sa.text("SELECT 1"))
        done.append(1)

    sa.event.listen(engine, "connect", count)
    try:
        opened = []
        for _ in range(2):
            connected.clear()
            together = threading.Barrier(8)
            threads = [threading.Thread(target=request, args=(together,)) for _ in range(8)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(20)
            opened.append(len(connected))
        assert len(done) == 16
        assert opened == [8, 0]
    finally:
        sa.event.remove(engine, "connect", count)
        engine.dispose()


def test_a_connection_used_moments_ago_is_not_pinged(engine, pings, monkeypatch):
    monkeypatch.setattr(host_db, "PING_AFTER_IDLE", 60.0)  # "moments" on a machine that may stall
    _backend(engine)
    pings.clear()
    for _ in range(3):
        _backend(engine)
    assert pings == []


def test_a_connection_idle_longer_is_pinged(engine, pings, monkeypatch):
    _backend(engine)
    monkeypatch.setattr(host_db, "PING_AFTER_IDLE", 0.0)
    pings.clear()
    _backend(engine)
    assert len(pings) == 1


def test_an_idle_connection_the_server_closed_is_replaced_before_a_request_uses_it(app, engine, db_url, pings,
                                                                                 monkeypatch):
    engine.dispose()
    app.get("/api/v1/version")
    pid = _backend(engine)
    _terminate(db_url, pid)
    monkeypatch.setattr(host_db, "PING_AFTER_IDLE", 0.0)  # it sat idle longer than that
    assert app.get("/api/v1/clusters/").status_int == 200
    assert len(pings) >= 1
    assert _backend(engine) != pid


def test_a_connection_closed_moments_after_its_use_fails_one_request_with_retry_after(app, engine, db_url,
                                                                                      monkeypatch):
    """The trade of pinging only idle connections: a server restarted within ``PING_AFTER_IDLE`` of a connection's
    use costs the request that finds it a 503 it may retry; the pool connects anew for the next."""
    monkeypatch.setattr(host_db, "PING_AFTER_IDLE", 3600.0)
    engine.dispose()
    pid = _backend(engine)
    _terminate(db_url, pid)
    failed = app.get("/api/v1/clusters/", expect_errors=True)
    assert failed.status_int == 503
    assert failed.headers["Retry-After"]
    assert failed.json["message"]
    assert app.get("/api/v1/clusters/").status_int == 200
    assert _backend(engine) != pid


def test_a_ping_that_finds_the_server_restarted_renews_every_pooled_connection(engine, db_url, monkeypatch):
    """As ``pool_pre_ping`` did: the other pooled connections of the restarted server are not handed out either,
    pinged or not."""
    engine.dispose()
    first, second = engine.connect(), engine.connect()
    pids = [connection.execute(sa.text("SELECT pg_backend_pid()")).scalar() for connection in (first, second)]
    first.close()
    second.close()
    _terminate(db_url, *pids)
    monkeypatch.setattr(host_db, "PING_AFTER_IDLE", 0.0)
    with engine.connect() as pinged:
        monkeypatch.setattr(host_db, "PING_AFTER_IDLE", 3600.0)  # the next is not pinged
        with engine.connect() as other:
            found = {connection.execute(sa.text("SELECT pg_backend_pid()")).scalar() for connection in (pinged, other)}
    assert len(found) == 2 and not found & set(pids)


@pytest.mark.parametrize("autocommit", [False, True])
def test_a_server_that_accepts_and_never_answers_fails_the_connection_soon(monkeypatch, autocommit):
    """A PostgreSQL frozen, or a proxy in front of one that is gone: the TCP connection is accepted and nothing
    comes back. A new connection, pooled or the statement reader's, gives up after ``CONNECT_TIMEOUT`` (a 503 for
    the request) instead of holding a waitress thread until the server answers. A bound on whether it gives up at
    all: the margin is generous."""
    monkeypatch.setattr(host_db, "CONNECT_TIMEOUT", 2)  # libpq's least
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nobody ever reads or answers
        engine = host_db.make_engine("postgresql+psycopg://nailgun:nailgun@127.0.0.1:{0}/nailgun".format(
            silent.getsockname()[1]), autocommit=autocommit)
        outcome = []

        def connect():
            try:
                engine.connect().close()
                outcome.append("connected")
            except sa.exc.OperationalError as exc:
                outcome.append(exc)

        started = time.monotonic()
        thread = threading.Thread(target=connect, daemon=True)
        thread.start()
        thread.join(timeout=20)
        assert outcome and isinstance(outcome[0], sa.exc.OperationalError), outcome
        assert time.monotonic() - started < 20
        engine.dispose()
