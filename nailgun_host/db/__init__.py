"""The one database session the host and every extension share.

``db`` is a scoped session: one session per thread, which is one request. The
request processor commits it when the request succeeds and rolls it back on any
error, so a failed request leaves the database as it was.
"""
import os
import threading

import sqlalchemy as sa
from sqlalchemy import event, orm
from sqlalchemy.dialects.postgresql import JSONB

from nailgun_host import errors
from nailgun_host.validation import parse_id

db = orm.scoped_session(orm.sessionmaker(autoflush=True, expire_on_commit=False))

#: JSON documents: JSONB on PostgreSQL, JSON text elsewhere.
JSONType = sa.JSON().with_variant(JSONB(), "postgresql")


class Base(orm.DeclarativeBase):
    """Declarative base of every table, the core's and the extensions'."""

    type_annotation_map = {dict: JSONType, list: JSONType}


def get_or_404(model, object_id, message=None, lock=False):
    """The row of ``model`` that ``object_id`` (a URL segment or an int) names; 404 when none.

    ``lock`` takes the row FOR UPDATE and reloads it, so a writer sees what the one
    before it committed. An id outside the id rule names nothing (404, not a database error).
    """
    parsed = parse_id(object_id)
    found = db.get(model, parsed, with_for_update=True if lock else None, populate_existing=lock) if parsed else None
    if found is None:
        raise errors.ObjectNotFound(message or "{0} not found".format(model.__name__))
    return found


_engine = None
_request = threading.local()


def expect_writes(flag):
    """Tell SQLite whether this thread's next transactions may write.

    A deferred SQLite transaction that reads and then writes can deadlock with another
    one (``database is locked``); those that may write take the write lock up front
    (``BEGIN IMMEDIATE``) and wait their turn instead. Reads stay concurrent.
    """
    _request.writes = flag


def _sqlite_begin(connection):
    connection.exec_driver_sql("BEGIN IMMEDIATE" if getattr(_request, "writes", True) else "BEGIN")


def _sqlite_pragmas(dbapi_connection, _record):
    dbapi_connection.isolation_level = None  # transactions are begun by _sqlite_begin
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def make_engine(url):
    """An engine for ``url``; SQLite gets foreign keys, WAL and thread sharing.

    Its errors and logs never show a statement's parameters: they may be values a client sent."""
    url = sa.make_url(url)
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            os.makedirs(os.path.dirname(os.path.abspath(url.database)), exist_ok=True)
        engine = sa.create_engine(url, connect_args={"check_same_thread": False}, hide_parameters=True)
        event.listen(engine, "connect", _sqlite_pragmas)
        event.listen(engine, "begin", _sqlite_begin)
        return engine
    return sa.create_engine(url, pool_pre_ping=True, hide_parameters=True)


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
