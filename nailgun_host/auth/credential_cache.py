"""Remembers checked credentials briefly, keyed by a hash: never the password or token itself.

Checking a password costs a Keystone round trip or a bcrypt hash (a quarter of a
second by design); a client sending Basic on every request would pay it each time.
The key is a keyed BLAKE2 hash (a MAC, one C call) of the credential's parts under a
per-process random key, so the cache holds nothing from which a password or a token
could be found. The hash's state after the key is made once and copied for each credential: keying
BLAKE2 anew cost three times the hash of a Basic header, on every request. What is remembered with it says what the check depended on, so that
the caller can tell whether it still holds (``AuthMiddleware``, ``LocalUsers``).

A credential in use is renewed before its time is up (``get``'s ``renew``), so that the requests bearing it
never wait for its check: every ``ttl`` seconds they all did (the p99 of a busy client).
"""
import hashlib
import logging
import os
import threading
import time

LOG = logging.getLogger(__name__)

MAX_ENTRIES = 10000
#: the last share of an entry's time in which a request finding it asks for its renewal
RENEW_SHARE = 0.2


class CredentialCache:
    """``{credential's parts: value}`` for ``ttl`` seconds at most (0: nothing is remembered)."""

    def __init__(self, ttl):
        self.ttl = ttl
        self._keyed = hashlib.blake2b(key=os.urandom(32), digest_size=32)
        self._entries = {}
        #: the digests whose renewal has been asked for (once an entry)
        self._renewing = set()
        self._lock = threading.Lock()

    def digest(self, *parts):
        """The key ``parts`` are remembered under."""
        return self._digest(parts)

    def _digest(self, parts):
        hashed = self._keyed.copy()
        hashed.update(b"\0".join([part.encode("utf-8", "surrogatepass") for part in parts]))
        return hashed.digest()

    def get(self, *parts, renew=None):
        """The value remembered for ``parts``, or None. ``renew(value)`` is called once an entry, by the first
        request finding it in the last ``RENEW_SHARE`` of its time: it starts checking the credential again
        (``renewal``), while the requests keep the remembered value."""
        if self.ttl <= 0:
            return None
        digest = self._digest(parts)
        entry = self._entries.get(digest)  # a dict's get is atomic: no lock on the hot path
        now = time.monotonic()
        if entry is None or entry[0] < now:
            if entry is not None:
                with self._lock:
                    if self._entries.get(digest) is entry:  # not one a renewal has just put
                        del self._entries[digest]
                        self._renewing.discard(digest)
            return None
        if renew is not None and entry[0] - now < self.ttl * RENEW_SHARE and digest not in self._renewing:
            with self._lock:
                claimed = digest not in self._renewing
                self._renewing.add(digest)
            if claimed:
                renew(entry[1])
        return entry[1]

    def put(self, value, *parts, checked_at=None):
        """Remember ``value`` for ``parts`` for ``ttl`` seconds from ``checked_at`` (a monotonic time: when
        its check started; by default now)."""
        if self.ttl <= 0:
            return
        now = time.monotonic()
        digest = self._digest(parts)
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries = {k: v for k, v in self._entries.items() if v[0] >= now}
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries.clear()
                self._renewing &= self._entries.keys()
            self._entries[digest] = ((now if checked_at is None else checked_at) + self.ttl, value)
            self._renewing.discard(digest)

    def forget(self, *parts):
        """Remember nothing for ``parts`` any more (its renewal found it wrong)."""
        digest = self._digest(parts)
        with self._lock:
            self._entries.pop(digest, None)
            self._renewing.discard(digest)


def renewal(check, name="nailgun-credential-renewal"):
    """Run ``check()`` in a thread of its own (a ``renew`` of ``CredentialCache.get``): it checks a credential
    again and puts, or forgets, what it found. A thread that cannot be started leaves the entry to run out."""
    thread = threading.Thread(target=check, name=name, daemon=True)
    try:
        thread.start()
    except RuntimeError:  # no thread to be had (a limit of the process): the request goes on regardless
        LOG.warning("A remembered credential cannot be checked ahead of its expiry: no thread can be started")
        return None
    return thread
