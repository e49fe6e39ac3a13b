"""Secret leaves encrypted in the database: the key check at start, and re-encryption under the
newest key of every sealed column (the ``SealedJSON`` column type is the platform's,
``nailgun_platform.sealed``).

The canary, one token of a known text written by the first start, tells at start whether the
key repository is the one this database was encrypted with.
"""
import logging
import os
import threading
import time

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from nailgun_host import errors, extensions
from nailgun_host.db import Base, db, managed_keys
from nailgun_platform import secrets
from nailgun_platform.sealed import SealedJSON
from nailgun_platform.secrets import keys, sealing

LOG = logging.getLogger(__name__)
CANARY_TEXT = b"nailgun secrets canary"


class SecretsCanary(Base):
    """One Fernet token of a known text: whether the key repository fits this database."""

    __tablename__ = "secrets_canary"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    token: Mapped[str] = mapped_column(sa.String(512))


def sealed_columns():
    """Every ``SealedJSON`` column of every table, the core's and the extensions' (models imported)."""
    return [(table, column) for table in Base.metadata.sorted_tables for column in table.columns
            if isinstance(column.type, SealedJSON)]


_keys_checked = threading.Event()


def check_keys_at_start(engine):
    """``check_keys`` now; if the database does not answer yet, at the first request (``keys_checked``)."""
    _keys_checked.clear()
    try:
        check_keys(engine)
    except sa.exc.DBAPIError as exc:
        LOG.warning("The database does not answer (%s): the secrets' keys are checked at the first request",
                    errors.first_line(exc))
        return
    except keys.KeyManagerUnavailable as exc:
        LOG.warning("%s: the secrets' keys are checked again in the background", exc)
        return
    _keys_checked.set()


def keys_checked(engine):
    """Make sure ``check_keys`` passed once in this process (a request calls it before it reads anything).

    A database that still does not answer is left to the request: what needs it fails with 503,
    what does not (``/version``) answers. The key manager's keys are checked in a thread of their own, at most
    once per ``secrets.RECHECK_AFTER``: a key manager that is slow to answer holds no request that needs no key
    (one that does waits for the keys in ``secrets.keyset``, at most ``SECRETS.castellan.timeout``).
    """
    if _keys_checked.is_set():
        return
    if secrets.managed():
        _check_in_background(engine)
        return
    try:
        check_keys(engine)
    except sa.exc.DBAPIError:
        return
    _keys_checked.set()


_checking = {"running": False, "last": 0.0}
_checking_lock = threading.Lock()


def _check_in_background(engine):
    with _checking_lock:
        if _checking["running"] or time.monotonic() - _checking["last"] < secrets.RECHECK_AFTER:
            return
        _checking.update(running=True, last=time.monotonic())

    def check():
        try:
            check_keys(engine)
            _keys_checked.set()
        except (sa.exc.DBAPIError, keys.KeyManagerUnavailable):
            pass
        except keys.KeyRepositoryError as exc:
            LOG.error("%s", exc)
        finally:
            _checking["running"] = False

    try:
        threading.Thread(target=check, name="nailgun-keys-check", daemon=True).start()
    except RuntimeError:
        _checking["running"] = False


def check_keys(engine):
    """Raise KeyRepositoryError unless the configured keys open this database's canary (written when missing).

    The repository is created only for a database that has no canary yet: one that does was
    encrypted with keys a new repository would not hold.
    """
    table = SecretsCanary.__table__
    read = sa.select(table.c.token).where(table.c.id == 1)
    with engine.begin() as connection:
        token = connection.scalar(read)
    if secrets.managed():
        if token is None:
            managed_keys.create(engine)  # the key manager's first keys, unless the database names some
    elif token is not None and not os.path.exists(secrets.repository_path()):
        earlier = secrets.earlier_default()
        raise keys.KeyRepositoryError(
            "The key repository {0} does not exist, and this database holds secrets encrypted with keys: set "
            "SECRETS.key_repository to the repository the database was used with (or restore it from its "
            "backup).{1}".format(secrets.repository_path(), "" if earlier is None else
                                 " {0}, the default of earlier versions, is there: if it is this database's, "
                                 "move it to {1}.".format(earlier, secrets.repository_path())))
    keyset = secrets.keyset(create=token is None)
    if token is None:
        try:
            with engine.begin() as connection:
                connection.execute(sa.insert(table), {"id": 1, "token": keyset.encrypt(CANARY_TEXT)})
            return
        except sa.exc.IntegrityError:  # another worker starting at the same time wrote it first
            with engine.begin() as connection:
                token = connection.scalar(read)
    try:
        opened = keyset.decrypt(token)
    except keys.UndecryptableValue:
        opened = None
    if opened != CANARY_TEXT:
        raise keys.KeyRepositoryError(
            "{0} does not hold the keys this database's secrets are encrypted with: its keys would read them as "
            "garbage. Set SECRETS.key_repository (or SECRETS.castellan) to the keys the database was used with "
            "(or restore them from their backup).".format(keyset.where[0].upper() + keyset.where[1:]))


def rotate_keys(engine):
    """Rotate the keys in force, wherever ``SECRETS.key_manager`` keeps them; the new primary's number."""
    return managed_keys.rotate(engine) if secrets.managed() else keys.rotate(secrets.repository_path())


def retire_keys(engine):
    """Retire the keys older than the primary, wherever they are kept; their numbers."""
    return managed_keys.retire(engine) if secrets.managed() else keys.retire(secrets.repository_path())


def canary_opens(engine, keyset):
    """Whether ``keyset`` opens this database's canary (a database without one has nothing to open: yes)."""
    table = SecretsCanary.__table__
    with engine.connect() as connection:
        token = connection.scalar(sa.select(table.c.token).where(table.c.id == 1))
    if token is None:
        return True
    try:
        return keyset.decrypt(token) == CANARY_TEXT
    except keys.UndecryptableValue:
        return False


def reseal(table, column, classifier_of_row=None, where=None, columns=(), dry_run=False, commit=True, batch=200):
    """Renew every token of ``column`` under the primary key and seal what is secret today but stored in
    clear; how many values that changed (or would, with ``dry_run``).

    ``classifier_of_row(row)``: the classifier (clear value -> secret pointers) of a row, or None to
    only renew its tokens; ``row`` holds the primary key and ``columns`` (e.g. what the classifier
    depends on), by name. ``where``: a clause restricting the rows. Leaves no longer secret stay
    sealed: every read opens them anyway.

    Reads and writes the stored JSON as it is (tokens, never clear values) in batches of rows, so
    a large table is never held in memory; ``commit``: each batch its own transaction (a command
    that must not lock a large database for the whole run), else all in the caller's (a request, which
    holds the locks its writers take). A token is renewed with its value, so this is no change of any
    document (no new version).

    A command runs beside the servers: on PostgreSQL each row it changes is read again under its row
    lock and committed alone, so a write that came between the batch's read and the rewrite is what gets
    resealed, never overwritten, and no lock is held while another is awaited. SQLite's batch already holds
    the database's write lock (``BEGIN IMMEDIATE``).
    """
    keyset = secrets.keyset()
    raw = sa.type_coerce(column, sa.JSON().with_variant(JSONB(), "postgresql")).label("_sealed_value")
    key = list(table.primary_key.columns)
    row_by_row = commit and not dry_run and db.get_bind().dialect.name == "postgresql"
    count, last = 0, None
    while True:
        query = sa.select(*key, *columns, raw).order_by(*key)
        if where is not None:
            query = query.where(where)
        rows = db.execute((query if last is None else query.where(sa.tuple_(*key) > sa.tuple_(*last)))
                          .limit(batch)).all()
        if not rows:
            break
        for row in rows:
            value, changed = _resealed(row, keyset, classifier_of_row)
            matches = [c == v for c, v in zip(key, row[:len(key)])]
            if changed and row_by_row:
                db.commit()  # holds no lock while the row's is awaited
                row = db.execute(query.where(*matches).with_for_update()).first()
                value, changed = _resealed(row, keyset, classifier_of_row) if row is not None else (None, 0)
            count += changed
            if changed and not dry_run:
                db.execute(sa.update(table).where(*matches).values({column.name: sa.type_coerce(value, raw.type)}))
                if row_by_row:
                    db.commit()
        last = tuple(rows[-1][:len(key)])
        if commit:
            db.commit()
    return count


def _resealed(row, keyset, classifier_of_row):
    """``(value, changed)``: the row's stored value with every token under the primary key and what its
    classifier makes secret sealed; how many leaves that changed."""
    value, changed = sealing.reencrypt(row[-1], keyset)
    classifier = classifier_of_row(row) if classifier_of_row is not None else None
    if classifier is not None and value is not None:
        before = sealing.count_sealed(value)
        value = sealing.seal(value, classifier(sealing.unseal(value, keyset)), keyset)
        changed += sealing.count_sealed(value) - before
    return value, changed


#: what health says when the keys stopped fitting (the details, with the repository's path, go to the log)
KEYS_UNFIT_MESSAGE = ("The secrets' keys in use (the key repository, or the key manager's objects) are not those "
                      "this database's secrets are encrypted with, or cannot be read: an operator must fix them (see "
                      "nailgun-secrets status)")


#: what health says when the key manager holding the keys cannot be asked (the details go to the log)
KEY_MANAGER_MESSAGE = ("The key manager holding the secrets' keys cannot be asked now (SECRETS.key_manager: "
                       "castellan); reads and writes of secrets answer 503 until it can")


def keys_fault(engine):
    """None while the configured keys open this database's canary; otherwise the 503 to answer.

    Health asks at every call: the keys may stop fitting under a running server (a wrong
    repository restored, ``nailgun-secrets retire --force``), and then every route that reads
    a secret answers 503, so a load balancer must stop sending traffic here.
    """
    try:
        check_keys(engine)
    except keys.KeyRepositoryError as exc:
        LOG.error("Health: %s", exc)
        return errors.ServiceUnavailable(KEYS_UNFIT_MESSAGE)
    except keys.KeyManagerUnavailable as exc:
        LOG.error("Health: %s", exc)
        return errors.ServiceUnavailable(KEY_MANAGER_MESSAGE)
    return None


def reencrypt_all(dry_run=False, batch=200):
    """Encrypt every stored token again under the primary key, and seal what is secret today but stored in
    clear (rows from before a pattern or a schema's marker was added); ``{"table.column": values renewed}``.

    The extensions reseal their own columns first (``on_secrets_reseal``: ConfigDB classifies each
    document with its definition's schema, which the column cannot know); every other
    ``SealedJSON`` column goes through ``reseal`` with its own classifier. ``dry_run`` only counts.
    """
    keyset = secrets.keyset()
    renewed = {}
    for counts in extensions.fire("on_secrets_reseal", dry_run):
        renewed.update(counts or {})
    for table, column in sealed_columns():
        name = "{0}.{1}".format(table.name, column.name)
        if name not in renewed:
            classifier = column.type.classifier
            renewed[name] = reseal(table, column, None if classifier is None else lambda row: classifier,
                                   dry_run=dry_run, batch=batch)
    canary = db.get(SecretsCanary, 1)
    if canary is not None and not keyset.is_current(canary.token):
        renewed[SecretsCanary.__tablename__ + ".token"] = 1
        if not dry_run:
            canary.token = keyset.reencrypt(canary.token)
        db.commit()
    return renewed
