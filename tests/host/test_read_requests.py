"""Reads whose handler writes nothing (``BaseHandler.reads_only``: every ConfigDB GET and HEAD): they can write
nothing, and on PostgreSQL they send no BEGIN or COMMIT (``nailgun_host.db``'s module)."""
import pytest
import sqlalchemy as sa

from nailgun_host import db as host_db
from nailgun_host.api import releases
from nailgun_host.db.models import Release

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
