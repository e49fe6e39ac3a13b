"""Local mode's token keys and revocations, kept in the database so that every host of one database accepts the
tokens of every other, and copied into each process so that checking a token asks the database nothing.

Keys (``auth_token_keys``): Fernet keys, sealed with the secrets' keys (``SealedJSON``) so that a dump of the
database forges no token, and resealed by ``nailgun-secrets reencrypt`` as every sealed column; the highest id is the primary and signs new tokens, the others still
open the tokens they signed. ``rotate`` (``nailgun-users rotate-token-key``) adds a new primary and drops the
keys whose tokens have all expired (superseded more than ``AUTH.token_ttl`` ago); with ``revoke`` it drops every
other key, and with them every token issued so far. The first key is made at the first use; hosts starting at
once agree on one (its id is the primary key, so the second insert fails and reads the first's).

Revocations (``auth_revocations``): a user name and the fingerprint of a password hash it had
(``nailgun-users delete``, or a new password). A token carrying them is refused by every host, even one whose
copy of the users file still has the user: neither its own tokens nor those it issues afterwards pass.

Each process reloads both at most every ``REFRESH`` seconds, on the request that finds its copy older (two
reads of small tables), and sooner when a token opens under none of the keys it knows (a key that another host
made), at most every ``FORCED_REFRESH`` seconds so that made-up tokens cannot keep the database busy. So a
rotation or a revocation counts on every host within ``REFRESH`` seconds.
"""
import collections
import datetime
import threading
import time

import sqlalchemy as sa
from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from nailgun_host import errors
from nailgun_host.auth import AuthenticationFailed, AuthenticationUnavailable
from nailgun_host.db import get_engine, reading, writing
from nailgun_host.db.models import TokenKey, TokenRevocation
from nailgun_platform import clock

#: seconds a process trusts its copy of the keys and revocations
REFRESH = 1.0
#: the shortest time between two reloads asked for by tokens that no known key opens
FORCED_REFRESH = 0.1

_KEYS = TokenKey.__table__
#: the member of a key's column that holds the Fernet key
FERNET_KEY = "fernet_key"
_REVOCATIONS = TokenRevocation.__table__

_Copy = collections.namedtuple("_Copy", "engine loaded signer opener revoked")


def _new_key():
    """A new token key as its column holds it: sealed with the secrets' keys on its way to the database."""
    return {FERNET_KEY: Fernet.generate_key().decode()}


def _create_first_key(engine):
    try:
        with writing(engine) as connection:
            connection.execute(sa.insert(_KEYS), {"id": 1, "key": _new_key(),
                                                  "superseded_at": None})
    except sa.exc.IntegrityError:
        pass  # another process made it first: read its key


def _load(engine):
    """The keys (primary first) and revocations of the database; the first key made when there is none."""
    for _attempt in range(2):
        with reading(engine) as connection:
            keys = connection.execute(sa.select(_KEYS.c.key).order_by(_KEYS.c.id.desc())).scalars().all()
            revoked = frozenset(tuple(row) for row in connection.execute(
                sa.select(_REVOCATIONS.c.user_name, _REVOCATIONS.c.password_fingerprint)))
        if keys:
            fernets = [Fernet(key[FERNET_KEY]) for key in keys]
            return _Copy(engine, time.monotonic(), fernets[0], MultiFernet(fernets), revoked)
        _create_first_key(engine)
    raise AuthenticationUnavailable("the token keys cannot be created in the database")


class TokenKeys:
    """This process's copy of the database's token keys and revocations."""

    def __init__(self):
        self._lock = threading.Lock()
        self._copy = None

    def _current(self, older_than=REFRESH):
        engine = get_engine()
        copy = self._copy
        if copy is not None and copy.engine is engine and time.monotonic() - copy.loaded < older_than:
            return copy
        with self._lock:
            copy = self._copy
            if copy is None or copy.engine is not engine or time.monotonic() - copy.loaded >= older_than:
                try:
                    copy = self._copy = _load(engine)
                except sa.exc.SQLAlchemyError as exc:
                    raise AuthenticationUnavailable("the token keys cannot be read from the database: {0}".format(
                        errors.first_line(exc)))
            return copy

    def sign(self, payload):
        """A token of ``payload`` (bytes) under the primary key."""
        return self._current().signer.encrypt(payload)

    def current(self):
        """This process's copy of the keys and revocations: the same object until it is read again."""
        return self._current()

    def open(self, token):
        """The payload of ``token`` (bytes) if one of the keys opens it; AuthenticationFailed otherwise."""
        return self.opened(token)[0]

    def opened(self, token):
        """``(payload, copy)``: the payload of ``token`` and the copy of the keys (``current``) that opened it."""
        copy = self._current()
        try:
            return copy.opener.decrypt(token), copy
        except InvalidToken:
            pass
        copy = self._current(older_than=FORCED_REFRESH)  # signed with a key made since this copy was read?
        try:
            return copy.opener.decrypt(token), copy
        except InvalidToken:
            raise AuthenticationFailed("the token is invalid or expired")

    def revoked(self, user_name, fingerprint):
        """Whether the tokens of ``user_name`` under the password ``fingerprint`` are revoked."""
        return (user_name, fingerprint) in self._current().revoked


def rotate(engine, token_ttl, revoke=False):
    """Add a new primary key; drop the keys whose tokens have expired (all others with ``revoke``).

    Returns ``(new primary id, ids of the keys that still open tokens)``.
    """
    now = clock.now()
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":  # one rotation at a time: the second waits, then goes on
            connection.execute(sa.text("LOCK TABLE auth_token_keys IN EXCLUSIVE MODE"))
        newest = connection.scalar(sa.select(sa.func.max(_KEYS.c.id))) or 0
        connection.execute(sa.update(_KEYS).where(_KEYS.c.superseded_at.is_(None)).values(superseded_at=now))
        expired = _KEYS.c.superseded_at < now - datetime.timedelta(seconds=token_ttl)
        connection.execute(sa.delete(_KEYS).where(sa.true() if revoke else expired))
        connection.execute(sa.insert(_KEYS), {"id": newest + 1, "key": _new_key(),
                                              "superseded_at": None})
        kept = connection.execute(sa.select(_KEYS.c.id).order_by(_KEYS.c.id.desc())).scalars().all()
    return newest + 1, kept


def revoke(engine, user_name, fingerprint):
    """Refuse, on every host, the tokens of ``user_name`` that carry the password ``fingerprint``."""
    try:
        with engine.begin() as connection:
            connection.execute(sa.insert(_REVOCATIONS), {"user_name": user_name, "password_fingerprint": fingerprint,
                                                         "revoked_at": clock.now()})
    except sa.exc.IntegrityError:
        pass  # revoked already
