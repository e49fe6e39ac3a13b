"""Remembers checked credentials briefly, keyed by a hash: never the password or token itself.

Checking a password costs a Keystone round trip or a bcrypt hash (a quarter of a
second by design); a client sending Basic on every request would pay it each time.
The key is a keyed BLAKE2 hash (a MAC, one C call) of the credential's parts under a
per-process random key, so the cache holds nothing from which a password or a token
could be found. The hash's state after the key is made once and copied for each credential: keying
BLAKE2 anew cost three times the hash of a Basic header, on every request. What is remembered with it says what the check depended on, so that
the caller can tell whether it still holds (``AuthMiddleware``, ``LocalUsers``).
"""
import hashlib
import os
import threading
import time

MAX_ENTRIES = 10000


class CredentialCache:
    """``{credential's parts: value}`` for ``ttl`` seconds at most (0: nothing is remembered)."""

    def __init__(self, ttl):
        self.ttl = ttl
        self._keyed = hashlib.blake2b(key=os.urandom(32), digest_size=32)
        self._entries = {}
        self._lock = threading.Lock()

    def digest(self, *parts):
        """The key ``parts`` are remembered under."""
        return self._digest(parts)

    def _digest(self, parts):
        hashed = self._keyed.copy()
        hashed.update(b"\0".join([part.encode("utf-8", "surrogatepass") for part in parts]))
        return hashed.digest()

    def get(self, *parts):
        """The value remembered for ``parts``, or None."""
        if self.ttl <= 0:
            return None
        digest = self._digest(parts)
        entry = self._entries.get(digest)  # a dict's get is atomic: no lock on the hot path
        if entry is None or entry[0] < time.monotonic():
            if entry is not None:
                with self._lock:
                    self._entries.pop(digest, None)
            return None
        return entry[1]

    def put(self, value, *parts):
        """Remember ``value`` for ``parts``."""
        if self.ttl <= 0:
            return
        now = time.monotonic()
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries = {k: v for k, v in self._entries.items() if v[0] >= now}
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries.clear()
            self._entries[self._digest(parts)] = (now + self.ttl, value)
