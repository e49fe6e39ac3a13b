"""Reads whose handler writes nothing (``BaseHandler.reads_only``: every ConfigDB GET and HEAD): they can write
nothing, and on PostgreSQL they send no BEGIN or COMMIT (``nailgun_host.db``'s module)."""
import copy
import datetime

import pytest
import sqlalchemy as sa
import webtest

from nailgun_host import db as host_db
from nailgun_host.api import releases
from nailgun_host.app import build_wsgi
from nailgun_host.db.models import Release
from nailgun_host.settings import settings

CONFIG = "/api/v1/config"
#: a release row that could be stored
SNEAKED = {"name": "sneaked", "version": "1", "operating_system": "Ubuntu"}


@pytest.fixture
def transactions(migrated_db):
    """For each statement sent meanwhile: whether its connection was inside a transaction once it ran."""
    engine = migrated_db[0]
    seen = []

    def record(_connection, cursor, statement, *_args):
        dbapi_connection = cursor.connection
        if engine.dialect.name == "postgresql":
            seen.append((statement, dbapi_connection.info.transaction_status.name != "IDLE"))
        else:
            seen.append((statement, dbapi_connection.in_transaction))

    sa.event.listen(engine, "after_cursor_execute", record)
    yield seen
    sa.event.remove(engine, "after_cursor_execute", record)


def _document(app):
    app.post_json(CONFIG + "/components", {"name": "fuel", "resource_definitions": [{"name": "astute"}]})
    app.post_json(CONFIG + "/environments", {"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
    app.put_json(CONFIG + "/environments/1/resources/1/values", {"a": 1, "password": "p"})
    return CONFIG + "/environments/1/nodes/node-1/resources/1/values?effective"


def test_a_read_runs_outside_transactions_on_postgresql_and_in_its_snapshot_on_sqlite(app, transactions, db_url):
    """PostgreSQL gives each statement a snapshot of its own inside a transaction too (READ COMMITTED): a read's
    BEGIN and COMMIT were two round trips deciding nothing. SQLite's read transaction is its snapshot: it stays."""
    url = _document(app)
    transactions.clear()
    assert app.get(url).json == {"a": 1, "password": "p"}
    app.get(CONFIG + "/environments/1")
    app.head(CONFIG + "/environments/1/resources/1/values")
    reads = list(transactions)
    transactions.clear()
    app.put_json(CONFIG + "/environments/1/nodes/node-1/resources/1/values", {"b": 2})
    writes = list(transactions)
    transactions.clear()
    app.get("/api/v1/releases/")  # the host's reads that do not say they only read keep their transaction
    undeclared = list(transactions)

    postgresql = sa.make_url(db_url).get_backend_name() == "postgresql"
    statements = [statement for statement, _ in reads if statement != "BEGIN"]
    assert len(statements) >= 3 and all(s.lstrip().upper().startswith("SELECT") for s in statements)
    assert {inside for _, inside in reads} == {not postgresql}
    assert writes and {inside for _, inside in writes} == {True}
    assert undeclared and {inside for _, inside in undeclared} == {True}


#: statements a read may send (``nailgun_host.db._refuse_writes``)
READS = ["SELECT 1", "  select updated_at, deleted FROM t", "WITH c AS (SELECT 1) SELECT * FROM c",
         "(SELECT 1 LIMIT 1) UNION (SELECT 2 LIMIT 1)", "BEGIN"]
#: statements that write, lock or notify: refused
NOT_READS = ["INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "DELETE FROM t", "SAVEPOINT s", "BEGIN IMMEDIATE",
             "SELECT 1 INTO t2", "SELECT pg_notify('a', 'b')", "SELECT nextval('s')", "SELECT setval('s', 1)",
             "SELECT * FROM t FOR UPDATE", "SELECT * FROM t FOR NO KEY UPDATE", "SELECT * FROM t FOR SHARE",
             "SELECT * FROM t FOR KEY SHARE", "WITH x AS (UPDATE t SET a = 1 RETURNING a) SELECT * FROM x",
             "WITH x AS (DELETE FROM t RETURNING a) SELECT * FROM x",
             "WITH x AS (INSERT INTO t VALUES (1) RETURNING a) SELECT * FROM x"]


class _Context:
    isinsert = isupdate = isdelete = False


@pytest.mark.parametrize("statement", READS)
def test_a_read_may_send_selects(statement):
    host_db._refuse_writes(None, None, statement, None, _Context(), False)


@pytest.mark.parametrize("statement", NOT_READS)
def test_a_read_may_not_send_what_writes_locks_or_notifies(statement):
    """Outside a transaction (PostgreSQL) these would stay, or lock nothing, whatever the request did next."""
    with pytest.raises(host_db.WriteInARead):
        host_db._refuse_writes(None, None, statement, None, _Context(), False)


def _writing_get(monkeypatch, write):
    def GET(_self):
        write()
        return []

    monkeypatch.setattr(releases.ReleaseCollectionHandler, "GET", GET)
    monkeypatch.setattr(releases.ReleaseCollectionHandler, "reads_only", True)


@pytest.mark.parametrize("write", ["orm", "core", "text"])
def test_a_read_that_would_write_is_refused_and_writes_nothing(app, session, monkeypatch, caplog, write):
    """A GET's write would stay on PostgreSQL, outside a transaction, whatever the request did next: it is refused
    before it is sent, on every database (a bug, so 500 and a log line naming the statement)."""
    before = session.scalar(sa.select(sa.func.count()).select_from(Release))
    session.remove()
    writes = {
        "orm": lambda: (host_db.db.add(Release(**SNEAKED)), host_db.db.flush()),
        "core": lambda: host_db.db.execute(sa.insert(Release).values(**SNEAKED)),
        "text": lambda: host_db.db.execute(sa.text("DELETE FROM releases")),
    }
    _writing_get(monkeypatch, writes[write])
    answer = app.get("/api/v1/releases/", status=500)
    assert answer.json["message"] == "Internal server error"
    assert "a request that only reads cannot run: " in caplog.text
    assert session.scalar(sa.select(sa.func.count()).select_from(Release)) == before


def test_reading_and_writing_leave_the_threads_expectation_as_it_was(migrated_db, session):
    """``reading`` (the token keys' load, in the authentication before any request's own) does not leave the
    thread refusing writes afterwards, nor ``writing`` allowing them."""
    engine = migrated_db[0]
    host_db.expect_writes(True)
    with host_db.reading(engine) as connection:
        connection.execute(sa.select(Release.id)).all()
    session.add(Release(**SNEAKED))
    session.flush()
    session.rollback()

    host_db.expect_writes(False)
    host_db.only_reads()
    try:
        with host_db.writing(engine):
            pass
        with pytest.raises(host_db.WriteInARead):
            session.execute(sa.text("DELETE FROM releases"))
    finally:
        session.rollback()
        host_db.expect_writes(True)


def test_a_read_goes_to_the_engine_the_session_is_bound_to(app, migrated_db, db_url):
    """Commands, and tests after them, bind the shared session again (``configure``, or an engine put back): a read
    goes through the engine bound now, never through a copy of one bound before (its database may be another)."""
    url = _document(app)
    suites = migrated_db[0]
    host_db.configure(db_url)  # another engine, the same database, as a command's own would be
    host_db.db.remove()
    host_db.get_engine().dispose()
    host_db._engine = suites  # put back as tests/host/test_key_repository_default.py does
    host_db.db.configure(bind=suites)
    seen = []

    def record(*_args):
        seen.append(1)

    sa.event.listen(suites, "before_cursor_execute", record)
    try:
        assert app.get(url).json == {"a": 1, "password": "p"}
    finally:
        sa.event.remove(suites, "before_cursor_execute", record)
    assert seen


def _postgresql(db_url):
    return sa.make_url(db_url).get_backend_name() == "postgresql"


def test_a_computed_read_runs_its_statements_outside_the_session(app, transactions):
    """The statements a ConfigDB read runs on every request (``read_rows``: the URL's resolution, the documents'
    heads) go to the statement reader (PostgreSQL: the thread's own connection; SQLite: one of the pool's for the
    statement alone): the request's session, whose transaction and pool checkout cost a quarter of the read, runs
    nothing."""
    _document(app)
    app.get(CONFIG + "/environments/1/nodes/node-1/resources/1/values?effective")  # opens the stored document
    transactions.clear()
    reader = host_db.statement_reader.executed
    other_node = CONFIG + "/environments/1/nodes/node-2/resources/1/values?effective"  # a URL not answered yet
    assert app.get(other_node).json == {"a": 1, "password": "p"}
    assert transactions == []
    assert host_db.statement_reader.executed - reader >= 2


def _reader_statements():
    """Every shape of statement a ConfigDB read gives ``read_rows``, with parameters naming ``_document``'s rows."""
    from nailgun_ext_configdb.objects import address, document, levels
    located = {"environment_id": 1, "resource_id": 1, "path": "nodes/node-1", "under_path": "nodes//node-1//%",
               "under_parent": "nodes//%"}
    shapes = []
    for by_name, ref in ((False, 1), (True, "astute"), (True, "missing")):
        for node, value in ((None, None), (levels.NODE_BY_ID, 1), (levels.NODE_BY_FQDN, "node-1.domain.tld")):
            shapes.append((address._statement(by_name, node), {"environment_id": 1, "ref": ref, "node": value}))
    for paths in (1, 2, 3):
        prefixes = document._paths(["", "nodes/node-1", "nodes/node-1/x"][:paths])
        shapes.append((document._heads(paths), dict(located, **prefixes)))
        for deepest in (True, False):
            for top in (True, False):
                shapes.append((document._holding_and_heads(deepest, top, paths), dict(located, **prefixes)))
    return shapes


#: columns whose values SQLAlchemy converts on some database or driver (SQLite's dates, PostgreSQL's numerics)
CONVERTED = sa.select(sa.cast(sa.literal(1.5), sa.Float).label("real"),
                      sa.cast(sa.literal("2.50"), sa.Numeric(10, 2)).label("decimal"),
                      sa.literal(datetime.datetime(2026, 12, 7, 10), sa.DateTime).label("moment"),
                      sa.cast(sa.literal(1), sa.Boolean).label("flag"), sa.literal(None).label("absent"))


def test_the_statement_readers_rows_are_sqlalchemys(app, migrated_db):
    """The rows ``statement_reader`` hands out (from the driver's, converted as SQLAlchemy would convert them, by
    the types the driver reports) are those of SQLAlchemy's execution, named alike, for every statement a ConfigDB
    read gives it and for columns SQLAlchemy converts."""
    _document(app)
    engine = migrated_db[0]
    assert engine is host_db.get_engine()
    for statement, params in _reader_statements() + [(CONVERTED, {})]:
        expected = [(tuple(row), row._fields) for row in _session_rows(engine, statement, params)]
        for _ in range(2):  # compiled at the first run, kept for the next
            found = [(tuple(row), row._fields) for row in host_db.statement_reader.run(statement, params)]
            assert found == expected, str(statement)
    assert any(host_db.statement_reader.run(statement, params) for statement, params in _reader_statements())


def _session_rows(engine, statement, params):
    with engine.connect() as connection:
        return connection.execute(statement, params).all()


#: statements that fail on the server: a missing table; text that is no number (PostgreSQL; SQLite reads it as 0)
FAILING = {"no table": sa.select(sa.table("no_such_table", sa.column("a"))),
           "no number": sa.select(sa.cast(sa.literal("x") + sa.bindparam("n"), sa.Integer).label("n"))}


@pytest.mark.parametrize("failing", sorted(FAILING))
def test_a_statement_readers_error_is_sqlalchemys(migrated_db, db_url, failing):
    """A failed statement raises the error SQLAlchemy raises for it (what the application answers 503 or 400 for),
    hiding the parameters as the engine does; the connection, which the server did not close, is kept."""
    if failing == "no number" and not _postgresql(db_url):
        pytest.skip("SQLite reads any text as a number")
    engine, statement = migrated_db[0], FAILING[failing]
    with pytest.raises(sa.exc.DBAPIError) as through_sqlalchemy:
        _session_rows(engine, statement, {"n": "secret"})
    assert type(through_sqlalchemy.value) is not sa.exc.DBAPIError  # a kind: OperationalError, DataError...
    before = host_db.statement_reader.run(sa.select(sa.literal(1).label("one")), {})
    backend = _readers_backend() if _postgresql(db_url) else None
    with pytest.raises(sa.exc.DBAPIError) as through_reader:
        host_db.statement_reader.run(statement, {"n": "secret"})
    assert type(through_reader.value) is type(through_sqlalchemy.value)
    assert not through_reader.value.connection_invalidated
    assert "[parameters:" not in str(through_reader.value)  # SQLAlchemy's words for the parameters it shows
    assert host_db.statement_reader.run(sa.select(sa.literal(1).label("one")), {}) == before == [(1,)]
    if backend is not None:
        assert _readers_backend() == backend


def test_the_statement_reader_runs_no_write_and_no_expanding_parameter(migrated_db):
    with pytest.raises(host_db.WriteInARead):
        host_db.statement_reader.run(sa.delete(Release), {})
    with pytest.raises(ValueError, match="expanding"):
        host_db.statement_reader.run(sa.select(Release.id).where(Release.id.in_([1, 2])), {})


def _readers_backend():
    return host_db.statement_reader._local.connection.dbapi_connection.info.backend_pid


@pytest.fixture
def computing(migrated_db):
    """An application whose every ConfigDB read is computed: no read cache in front, whose state statements would
    find a closed connection first."""
    saved = copy.deepcopy(dict(settings))
    settings.reload(overrides={"READ_CACHE": {"max_bytes": 0}})
    yield webtest.TestApp(build_wsgi(), extra_environ={"REMOTE_ADDR": "127.0.0.1"})
    settings.clear()
    settings.update(saved)


def test_a_read_that_finds_its_connection_closed_by_the_server_runs_again(computing, db_url, monkeypatch):
    """A server restarted since the thread's connection was last used: the read runs once more on a new connection
    (it only reads), and answers. The connection is never pinged first: at a few requests a second spread over
    waitress's threads, each would have sat idle past ``PING_AFTER_IDLE`` and paid a round trip."""
    if not _postgresql(db_url):
        pytest.skip("no server closes a SQLite connection (pg_terminate_backend is PostgreSQL's)")
    from tests.host.test_db_pool import _terminate
    url = _document(computing)
    assert computing.get(url).status_int == 200
    pid = _readers_backend()
    pings = []
    dialect = type(host_db.get_engine().dialect)
    ping = dialect.do_ping
    monkeypatch.setattr(dialect, "do_ping", lambda self, connection: pings.append(connection) or ping(self, connection))
    _terminate(db_url, pid)
    assert computing.get(url).json == {"a": 1, "password": "p"}
    assert _readers_backend() != pid
    assert pings == []


def test_a_read_that_finds_the_server_gone_answers_503(computing, db_url, monkeypatch):
    """Gone for good (the new connection refused too): 503 with Retry-After, as any request that finds the database
    down."""
    if not _postgresql(db_url):
        pytest.skip("no server closes a SQLite connection (pg_terminate_backend is PostgreSQL's)")
    from tests.host.test_db_pool import _terminate
    url = _document(computing)
    assert computing.get(url).status_int == 200
    _terminate(db_url, _readers_backend())

    def refused():  # as the pool raises it: the driver's own error
        raise host_db.get_engine().dialect.loaded_dbapi.OperationalError("connection refused")

    for autocommit in host_db.statement_reader._engines.values():
        monkeypatch.setattr(autocommit, "raw_connection", refused)
    answer = computing.get(url, expect_errors=True)
    assert answer.status_int == 503 and answer.headers["Retry-After"]
    assert answer.json["message"]


def test_a_session_bound_to_another_engine_reads_through_it(app, migrated_db, db_url):
    """A command or a test that binds the session to an engine of its own reads through that engine, and the
    statement reader keeps the configured engine's connections."""
    url = _document(app)
    other = host_db.make_engine(db_url)
    seen = []
    sa.event.listen(other, "before_cursor_execute", lambda *_args: seen.append(1))
    readers = dict(host_db.statement_reader._engines)
    host_db.db.remove()
    host_db.db.configure(bind=other)
    try:
        assert app.get(url.replace("node-1", "node-5")).json == {"a": 1, "password": "p"}
    finally:
        host_db.db.remove()
        host_db.db.configure(bind=migrated_db[0])
        other.dispose()
    assert len(seen) >= 2
    assert host_db.statement_reader._engines == readers
