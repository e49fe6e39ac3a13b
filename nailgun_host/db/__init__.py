"""The one database session the host and every extension share.

``db`` is a scoped session: one session per thread, which is one request. The
request processor commits it when the request succeeds and rolls it back on any
error, so a failed request leaves the database as it was.

A GET or HEAD whose handler writes nothing (``only_reads``: ``BaseHandler.reads_only``) runs on PostgreSQL without a
transaction (autocommit). Its isolation, READ COMMITTED (set on every connection, whatever the server's default),
gives each statement a snapshot of its own inside a transaction too, so a read's ``BEGIN`` and ``COMMIT`` decided
nothing and cost two round trips: 4-6% of the server's CPU for a computed ConfigDB read, 20% of PostgreSQL's. The
statements a read runs on every request (``read_rows``, on SQLite too) go further, to the statement reader's
connection (``statement_reader``), without the session's transaction. Outside a transaction a write would stay even if the
request failed, so such a request's statements are checked before they are sent (``_refuse_writes``, on SQLite too;
the statement reader's when it compiles one): a statement that is not a ``SELECT``, or a ``SELECT`` that writes, locks
rows or notifies, is refused (``WriteInARead``, a bug). What such a read must write goes through ``writing``, on a
connection of its own. (On SQLite the rest of a read keeps its transaction, which costs no round trip.) Other
reads keep their transaction: some create what they find missing (the admin network, on first use).
"""
import collections
import contextlib
import functools
import os
import threading
import time

import sqlalchemy as sa
from sqlalchemy import event, orm
from sqlalchemy.dialects.postgresql import JSONB

from nailgun_host import errors
from nailgun_host.validation import parse_id
from nailgun_platform import hosting
from nailgun_platform.read_cache import StatementFailed


class _RequestSession(orm.Session):
    """The session of a request: on ``_reading`` while the request only reads (module)."""

    def get_bind(self, *args, **kwargs):
        bind = super().get_bind(*args, **kwargs)
        if getattr(_request, "reads_only", False) and isinstance(bind, sa.engine.Engine):
            return _reading_copy(bind)
        return bind


db = orm.scoped_session(orm.sessionmaker(class_=_RequestSession, autoflush=True, expire_on_commit=False))

#: JSON documents: JSONB on PostgreSQL, JSON text elsewhere.
JSONType = sa.JSON().with_variant(JSONB(), "postgresql")


class Base(orm.DeclarativeBase):
    """Declarative base of every table, the core's and the extensions'."""

    type_annotation_map = {dict: JSONType, list: JSONType}


def get_or_404(model, object_id, message=None, lock=False):
    """The row of ``model`` that ``object_id`` (a URL segment or an int) names; 404 when none.

    ``lock`` takes the row FOR UPDATE (OF its own table: a cluster's joined release is read, not locked, or
    writers of two clusters of one release deadlock on it) and reloads it, so a writer sees what the one
    before it committed. An id outside the id rule names nothing (404, not a database error).
    """
    parsed = parse_id(object_id)
    lock_clause = {"of": model} if lock else None
    found = db.get(model, parsed, with_for_update=lock_clause, populate_existing=lock) if parsed else None
    if found is None:
        raise errors.ObjectNotFound(message or "{0} not found".format(model.__name__))
    return found


_engine = None
#: an engine and its copy for the requests that only read (``only_reads``): the same pool, without transactions on
#: PostgreSQL, refusing writes; made for the engine the session is bound to, whoever bound it
_reading = (None, None)
_request = threading.local()


class WriteInARead(RuntimeError):
    """A request that only reads sent a statement that writes (a bug: see the module)."""


def expect_writes(flag):
    """Tell the database whether this thread's request may write.

    A deferred SQLite transaction that reads and then writes can deadlock with another
    one (``database is locked``); those that may write take the write lock up front
    (``BEGIN IMMEDIATE``) and wait their turn instead. Reads stay concurrent.
    """
    _request.writes = flag
    _request.reads_only = False


def only_reads():
    """This request's statements only read from now on (module): taken by a request that expects no writes and has
    not used its session yet; another keeps its transaction."""
    if not getattr(_request, "writes", True) and not db().in_transaction():
        _request.reads_only = True


@contextlib.contextmanager
def writing(engine):
    """A transaction on ``engine`` of its own that writes, whatever this thread's request expects (on SQLite it
    takes the write lock up front, as ``expect_writes(True)`` makes it)."""
    with _expecting(True), engine.begin() as connection:
        yield connection


@contextlib.contextmanager
def reading(engine):
    """A connection to ``engine`` of its own that only reads, whatever this thread's request expects (on SQLite
    its transaction leaves the write lock to writers)."""
    with _expecting(False), engine.connect() as connection:
        yield connection


@contextlib.contextmanager
def _expecting(writes):
    expected = getattr(_request, "writes", True)
    _request.writes = writes
    try:
        yield
    finally:
        _request.writes = expected


#: how the statements of a read begin: a select, one with common table expressions, a compound select's first part
_READ_STARTS = ("select", "with", "(select")
#: what no statement of a read contains (lowercased): the writes of a common table expression, a SELECT's writes
#: (INTO, sequences), its row locks, PostgreSQL's notifications. Values are bound parameters, never in the text; no
#: table or column name holds one of these (``updated_at`` is not ``update ``)
_NOT_IN_A_READ = ("insert ", "update ", "delete ", " into ", "nextval(", "setval(", " for update", " for share",
                  " for key share", " for no key update", "pg_notify(")


def _refuse_writes(_connection, _cursor, statement, _parameters, context, _executemany):
    """``before_cursor_execute`` of ``_reading``: only a read goes out, and SQLite's deferred ``BEGIN`` (module)."""
    if context.isinsert or context.isupdate or context.isdelete or not _only_reads(statement):
        raise WriteInARead("a request that only reads cannot run: {0}".format(statement.lstrip()[:60]))


@functools.lru_cache(maxsize=1024)
def _only_reads(statement):
    """Whether the text of ``statement`` only reads (``_READ_STARTS``, ``_NOT_IN_A_READ``): judged once per text, as
    SQLAlchemy hands a compiled statement's text again each time it runs."""
    if statement == "BEGIN":
        return True
    lowered = statement.lstrip().lower()
    return lowered.startswith(_READ_STARTS) and not any(word in lowered for word in _NOT_IN_A_READ)


def _reading_copy(engine):
    """``engine``'s copy for the reads (``_reading``), made at its first read. SQLite's read transactions stay: they
    are its snapshots, and cost no round trip."""
    global _reading
    known, copy = _reading
    if known is not engine:
        copy = engine.execution_options(**({"isolation_level": "AUTOCOMMIT"}
                                           if engine.dialect.name == "postgresql" else {}))
        event.listen(copy, "before_cursor_execute", _refuse_writes)
        _reading = (engine, copy)
    return copy


def _sqlite_begin(connection):
    connection.exec_driver_sql("BEGIN IMMEDIATE" if getattr(_request, "writes", True) else "BEGIN")


def _sqlite_pragmas(dbapi_connection, _record):
    dbapi_connection.isolation_level = None  # transactions are begun by _sqlite_begin
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


#: connections a process keeps open for its requests: the production recipe's 8 threads and a few more. Beyond this
#: many at once the pool opens up to ``POOL_OVERFLOW`` more and closes them again after use: on PostgreSQL a new
#: server process each time, on SQLite the file opened and its pragmas run again (SQLAlchemy's default kept 5: a
#: tenth of a computed read). 15 at most, as before (5 and 10 then).
POOL_SIZE, POOL_OVERFLOW = 10, 5
#: a pooled PostgreSQL connection that has not been used for this long is pinged before a request takes it. One used
#: moments ago is alive, unless the server restarted meanwhile: the request that finds it so answers 503 (Retry-After),
#: and the pool connects anew. Pinging every checkout cost a round trip per request. The pool hands out the connection
#: used last (``pool_use_lifo``), so under load the same few stay in use and are not pinged.
PING_AFTER_IDLE = 1.0


def _ping_when_idle(engine):
    """Ping a pooled connection before a request takes it only if it sat idle ``PING_AFTER_IDLE`` or longer; one the
    server closed makes the pool drop every connection opened before (as ``pool_pre_ping`` did), another that fails
    its ping is replaced alone."""

    def used(_dbapi_connection, record, *_proxy):
        record.info["used_at"] = time.monotonic()

    def checkout(dbapi_connection, record, _proxy):
        used_at = record.info.get("used_at")
        if used_at is not None and time.monotonic() - used_at < PING_AFTER_IDLE:
            return
        try:
            engine.dialect.do_ping(dbapi_connection)
        except engine.dialect.loaded_dbapi.Error as exc:  # the pool drops it and connects anew
            said = errors.first_line(exc)
            if engine.dialect.is_disconnect(exc, dbapi_connection, None):  # the server restarted: so did the others
                raise sa.exc.InvalidatePoolError(said) from exc
            raise sa.exc.DisconnectionError(said) from exc

    event.listen(engine, "connect", used)
    event.listen(engine, "checkin", used)
    event.listen(engine, "checkout", checkout)
    return engine


#: seconds a new PostgreSQL connection may take (libpq's ``connect_timeout``, unless the URL sets its own): a server
#: that accepts the connection and never answers (frozen, or behind a proxy whose database is gone) then costs a
#: request a 503 with Retry-After, not a waitress thread held until the server answers again
CONNECT_TIMEOUT = 5


def make_engine(url, autocommit=False):
    """An engine for ``url``; SQLite gets foreign keys, WAL and thread sharing.

    ``autocommit``: unpooled connections on which every statement commits alone (``StatementReader``).
    Its errors and logs never show a statement's parameters: they may be values a client sent."""
    url = sa.make_url(url)
    options = {"poolclass": sa.pool.NullPool, "isolation_level": "AUTOCOMMIT"} if autocommit else {}
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(url.database)), exist_ok=True)
            if not autocommit:
                options.update(pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW)
        engine = sa.create_engine(url, connect_args={"check_same_thread": False}, hide_parameters=True, **options)
        event.listen(engine, "connect", _sqlite_pragmas)
        if not autocommit:
            event.listen(engine, "begin", _sqlite_begin)
        return engine
    if "connect_timeout" not in url.query:
        options["connect_args"] = {"connect_timeout": CONNECT_TIMEOUT}
    if autocommit:
        return sa.create_engine(url, hide_parameters=True, **options)
    return _ping_when_idle(sa.create_engine(url, pool_size=POOL_SIZE, max_overflow=POOL_OVERFLOW, pool_use_lifo=True,
                                            isolation_level="READ COMMITTED", hide_parameters=True, **options))


def configure(url):
    """Bind the shared session to the database at ``url`` (replacing any earlier one)."""
    global _engine
    db.remove()
    if _engine is not None:
        _engine.dispose()
    _engine = make_engine(url)
    db.configure(bind=_engine)
    return _engine


def get_engine():
    if _engine is None:
        raise RuntimeError("the database is not configured: call nailgun_host.db.configure(url)")
    return _engine


class StatementReader:
    """Single statements outside any transaction: the one query a cached read asks on every request
    (``nailgun_platform.read_cache``), and those of a request that only reads (``read_rows``). Each
    statement is compiled once per engine and thread, and checked once to only read.

    PostgreSQL: on its thread's own autocommit connection, so no pool checkout, ping, BEGIN or ROLLBACK (each a round
    trip); a statement that finds it closed by the server runs again on a new one (``run``). SQLite: on a connection
    of the engine's pool (in autocommit already, and local), so that it is closed and disposed with the engine's: a
    connection kept apart would outlive the files SQLite shares between connections. A statement that fails because
    the server closed its connection drops it; the next one connects again. An in-memory SQLite database, which
    another connection would not see, has no reader (``available`` is False).
    """

    def __init__(self):
        #: statements run so far in this process (the test suite counts them with the ORM's)
        self.executed = 0
        self._lock = threading.Lock()
        self._available = (None, False)
        self._inherited = []
        self._start_afresh()
        os.register_at_fork(after_in_child=self._start_afresh)

    def _start_afresh(self):
        """No connection of a parent process is used in a child, nor closed there (closing one would end
        it for the parent too): they are kept, untouched, until the child exits."""
        if hasattr(self, "_local"):
            self._inherited.append((self._local, self._engines))
        self._local = threading.local()
        self._engines = {}  # configured engine -> its autocommit engine (at most one live)

    def available(self):
        """Whether the configured engine's database can be read by another connection (asked on every request:
        the answer is kept for the engine)."""
        engine = get_engine()
        known = self._available
        if known[0] is not engine:
            url = engine.url
            known = self._available = (engine, not (
                url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")))
        return known[1]

    def _state(self, engine):
        """This thread's compiled statements and, on PostgreSQL, connection for ``engine``."""
        local = self._local
        if getattr(local, "engine", None) is not engine:
            connection = None
            if engine.dialect.name != "sqlite":
                with self._lock:
                    if engine not in self._engines:
                        for old in self._engines.values():
                            old.dispose()
                        self._engines = {engine: make_engine(engine.url, autocommit=True)}
                    autocommit = self._engines[engine]
                connection = autocommit.raw_connection()
            local.connection, local.engine, local.compiled = connection, engine, {}
        return local

    def rows(self, statement, **params):
        """The rows of ``statement`` (``run``); a database that cannot be asked raises ``StatementFailed``, which the
        read cache knows."""
        try:
            return self.run(statement, params)
        except sa.exc.DBAPIError as exc:
            raise StatementFailed(errors.first_line(exc)) from exc

    def run(self, statement, params):
        """The rows of ``statement`` (a Core select with named bind parameters, none expanding) on the configured
        engine, as named tuples converted as SQLAlchemy would; a database error is raised as SQLAlchemy raises it.

        A statement that finds its thread's connection closed by the server (a restart) runs once more on a new one:
        it only reads. So the connection is never pinged: a ping after each idle second cost a round trip per
        request at a few requests a second, spread over waitress's threads."""
        engine = get_engine()
        try:
            return self._run(engine, statement, params)
        except sa.exc.DBAPIError as exc:
            if not exc.connection_invalidated or engine.dialect.name == "sqlite":
                raise
        return self._run(engine, statement, params)

    def _run(self, engine, statement, params):
        try:
            local = self._state(engine)
            connection = local.connection or engine.raw_connection()
        except engine.dialect.loaded_dbapi.Error as exc:  # the pool hands out the driver's own error
            raise sa.exc.DBAPIError.instance(None, None, exc, engine.dialect.loaded_dbapi.Error, hide_parameters=True,
                                             dialect=engine.dialect) from exc
        known = local.compiled.get(statement)
        if known is None:
            known = local.compiled[statement] = _Compiled(statement, engine.dialect)
        values = known.parameters(params)
        self.executed += 1
        cursor = None
        try:
            cursor = connection.cursor()
            try:
                cursor.execute(known.sql, values)
                rows = known.rows(cursor)
            finally:
                cursor.close()
        except engine.dialect.loaded_dbapi.Error as exc:
            gone = engine.dialect.is_disconnect(exc, connection.dbapi_connection, cursor)
            if gone:
                connection.invalidate()
                local.engine = None
            raise sa.exc.DBAPIError.instance(known.sql, values, exc, engine.dialect.loaded_dbapi.Error,
                                             hide_parameters=True, connection_invalidated=gone,
                                             dialect=engine.dialect) from exc
        finally:
            if connection is not local.connection:
                connection.close()  # back to the engine's pool
        return rows


class _Compiled:
    """A statement as ``StatementReader`` runs it: its text, its parameters' defaults and order, and the
    conversions SQLAlchemy would make of its parameters and of its columns (decided at its first run, from the types
    the driver reports, as SQLAlchemy decides them; none, for most on PostgreSQL)."""

    def __init__(self, statement, dialect):
        compiled = statement.compile(dialect=dialect)
        self.sql = compiled.string
        if not _only_reads(self.sql):
            raise WriteInARead("the statement reader only reads: {0}".format(self.sql[:60]))
        if "POSTCOMPILE" in self.sql:
            raise ValueError("the statement reader compiles a statement once: no expanding parameters (IN lists)")
        self._dialect = dialect
        self._defaults = {name: bind.value for name, bind in compiled.binds.items()}
        self._order = compiled.positiontup if compiled.positional else None
        self._binds = {name: processor for name, bind in compiled.binds.items()
                       if (processor := bind.type.dialect_impl(dialect).bind_processor(dialect)) is not None}
        self._types = [column.type for column in statement.selected_columns]
        self._results = ()  # not decided yet; None: no column to convert
        self._row = collections.namedtuple("Row", statement.selected_columns.keys(),
                                           rename=True)  # an unnamed column: by position

    def parameters(self, params):
        values = dict(self._defaults, **params)
        for name, processor in self._binds.items():
            values[name] = processor(values[name])
        return [values[name] for name in self._order] if self._order is not None else values

    def rows(self, cursor):
        """The rows ``cursor`` fetches, named and converted."""
        if self._results == ():
            self._results = [kind.dialect_impl(self._dialect).result_processor(self._dialect, described[1])
                             for kind, described in zip(self._types, cursor.description)]
            if not any(self._results):
                self._results = None
        make, found = self._row._make, cursor.fetchall()
        if self._results is None:
            return [make(row) for row in found]
        return [make(value if convert is None else convert(value) for convert, value in zip(self._results, row))
                for row in found]


def read_rows(statement, **params):
    """The rows of a read's ``statement`` (a Core select without expanding parameters), as named tuples.

    In a request that only reads (``only_reads``), outside any transaction on the statement reader's connection
    (PostgreSQL: the thread's own; SQLite: one of the pool's, taken for the statement alone): the request's session
    would begin its transaction and take a connection from the pool around the same statement, about a quarter of
    a computed ConfigDB read's CPU on either database. Such a read never relied on its statements sharing a snapshot:
    PostgreSQL's READ COMMITTED gave each its own inside a transaction too. Elsewhere in the request's session: in a
    request that may write, on an in-memory SQLite database (no reader), and when a command or a test bound the
    session to another engine than the configured one."""
    if getattr(_request, "reads_only", False) and _engine is not None and statement_reader.available() and \
            orm.Session.get_bind(db()) is _engine:
        return statement_reader.run(statement, params)
    return db.connection().execute(statement, params).all()


#: the process's reader of single statements (the read cache's fingerprints, ``read_rows``)
statement_reader = StatementReader()

hosting.provide(session=db, engine=get_engine)
