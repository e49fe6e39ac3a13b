"""The secrets' keys in the cloud's key manager (``SECRETS.key_manager: castellan``): which object is which key.

The key material is the key manager's (``nailgun_platform.secrets.key_manager``); the database keeps only the id
of the object holding each key, by the key's number, with the roles of a key repository
(``nailgun_platform.secrets.keys``): 0 the staged key, the highest the primary, the ones between old. So every
host of the database finds the same keys, and a database dump holds none.

A change (the first keys, a rotation, a retirement, a move) stores its new objects first, then changes the rows
in one transaction that holds the table (PostgreSQL: ``LOCK TABLE``; SQLite: its write lock), and deletes the
objects no row names any more only after that committed: a failed change deletes what it stored, and no row
ever names an object already deleted. Running servers see a change within a second (``secrets.keyset``).
"""
import logging

import sqlalchemy as sa
from cryptography.fernet import Fernet
from sqlalchemy.orm import Mapped, mapped_column

from nailgun_host.db import Base, get_engine, statement_reader, writing
from nailgun_platform import hosting, secrets
from nailgun_platform.secrets import keys

LOG = logging.getLogger(__name__)


class SecretsKeyRef(Base):
    """One key of the set: its number (0 staged, highest primary) and the key manager's object holding it."""

    __tablename__ = "secrets_key_refs"

    number: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    object_id: Mapped[str] = mapped_column(sa.String(255))


TABLE = SecretsKeyRef.__table__
_READ = sa.select(TABLE.c.number, TABLE.c.object_id)


def refs():
    """``{number: object id}`` of the keys this database names (one statement, outside any transaction)."""
    if not statement_reader.available():
        with get_engine().connect() as connection:
            return dict(connection.execute(_READ).all())
    # a database that is down raises SQLAlchemy's error, which the application answers 503 for
    return dict(statement_reader.run(_READ, {}))


hosting.provide(key_refs=refs)


def create(engine):
    """A staged and a primary key in the key manager, named here, unless the database names keys already;
    whether this made them (two servers starting at once: one does, the other's objects are deleted)."""
    if refs():
        return False
    manager = secrets.manager()
    stored = {}
    try:
        stored[1] = manager.store(Fernet.generate_key())
        stored[0] = manager.store(Fernet.generate_key())
        with writing(engine) as connection:
            _hold(connection)
            if _named(connection):
                raise _AlreadyNamed()
            connection.execute(sa.insert(TABLE), [{"number": n, "object_id": o} for n, o in stored.items()])
    except _AlreadyNamed:
        _delete(manager, stored.values(), undone=True)
        return False
    except BaseException:
        _delete(manager, stored.values(), undone=True)
        raise
    secrets.forget_keys()
    return True


def rotate(engine):
    """The staged key becomes the primary and a new key is staged (``keys.rotate``); the new primary's number.

    A staged key whose object is gone (deleted, or a restore of the key manager older than the last rotation) is
    replaced by the new key instead, and that is said as an error: it sealed nothing, and a rotation promoting it
    would leave the servers a primary they cannot fetch; run ``rotate`` again."""
    manager = secrets.manager()
    staged_before = _complete(refs())[keys.STAGED]
    try:
        manager.fetch(staged_before)
        missing = False
    except keys.KeyMissing:
        missing = True
    staged = manager.store(Fernet.generate_key())
    try:
        with writing(engine) as connection:
            _hold(connection)
            current = _complete(_named(connection))
            if current[keys.STAGED] != staged_before:
                raise keys.KeyRepositoryError("The keys were changed meanwhile (another rotation): run rotate again")
            primary = max(current) + 1
            if not missing:
                connection.execute(sa.insert(TABLE), {"number": primary, "object_id": current[keys.STAGED]})
            connection.execute(sa.update(TABLE).where(TABLE.c.number == keys.STAGED).values(object_id=staged))
    except BaseException:
        _delete(manager, [staged], undone=True)
        raise
    secrets.forget_keys()
    if missing:
        raise keys.KeyRepositoryError(
            "The staged key's object {0} was gone from the key manager: a new key is staged in its place (the old "
            "one sealed nothing). Run nailgun-secrets rotate again".format(staged_before))
    return primary


def retire(engine):
    """Forget and delete the keys older than the primary (``keys.retire``); their numbers."""
    manager = secrets.manager()
    with writing(engine) as connection:
        _hold(connection)
        current = _complete(_named(connection))
        old = [n for n in sorted(current) if keys.STAGED < n < max(current)]
        connection.execute(sa.delete(TABLE).where(TABLE.c.number.in_(old)))
    secrets.forget_keys()
    _delete(manager, [current[n] for n in old])
    return old


def fetched(engine):
    """``{number: Fernet key}`` of every key the database names, from the key manager (a move out)."""
    manager = secrets.manager()
    with engine.connect() as connection:
        current = _complete(_named(connection))
    return manager.fetch_all(current, complete=True)


def put(engine, key_set):
    """Store the keys ``{number: Fernet key}`` (a move in) in place of any the database named; the objects that
    held those are deleted once the new ones are named."""
    manager = secrets.manager()
    stored = {}
    try:
        for number, key in sorted(key_set.items()):
            stored[number] = manager.store(key)
        with writing(engine) as connection:
            _hold(connection)
            replaced = _named(connection)
            connection.execute(sa.delete(TABLE))
            connection.execute(sa.insert(TABLE), [{"number": n, "object_id": o} for n, o in stored.items()])
    except BaseException:
        _delete(manager, stored.values(), undone=True)
        raise
    secrets.forget_keys()
    _delete(manager, replaced.values())


def remove(engine):
    """Forget every key the database names and delete their objects (the source of a move out, once proved)."""
    manager = secrets.manager()
    with writing(engine) as connection:
        _hold(connection)
        removed = _named(connection)
        connection.execute(sa.delete(TABLE))
    secrets.forget_keys()
    _delete(manager, removed.values())
    return sorted(removed)


class _AlreadyNamed(Exception):
    pass


def _hold(connection):
    """Hold the table for this transaction (SQLite: ``writing`` took the write lock): a second writer waits, then
    reads what the first wrote."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql("LOCK TABLE secrets_key_refs IN EXCLUSIVE MODE")


def _named(connection):
    return dict(connection.execute(_READ).all())


def _complete(current):
    if keys.STAGED not in current or len(current) < 2:
        raise keys.KeyRepositoryError(
            "This database names {0} in the key manager: it needs the staged key (0) and a primary. Restore the "
            "table secrets_key_refs from the database's backup, or move the keys in again with nailgun-secrets "
            "move-keys --to castellan".format(
                "keys " + ", ".join(map(str, sorted(current))) if current else "no key"))
    return current


def _delete(manager, object_ids, undone=False):
    """Delete objects no row names; those that cannot be deleted now are named for an operator to delete, in
    an error, or (``undone``: a failed change's, whose own error is what counts) in the log."""
    left = []
    for object_id in object_ids:
        try:
            manager.delete(object_id)
        except Exception:
            left.append(object_id)
    if left:
        message = ("The key manager's objects {0} hold keys no longer in use, and could not be deleted now: delete "
                   "them (openstack secret delete)".format(", ".join(left)))
        if undone:
            LOG.warning("%s", message)
        else:
            raise keys.KeyRepositoryError(message)
