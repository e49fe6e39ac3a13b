"""Remembers checked Basic credentials briefly, keyed by a hash: never the password itself.

Checking a password costs a Keystone round trip or a bcrypt hash (a quarter of a
second by design); a client sending Basic on every request would pay it each time.
The key is an HMAC of user and password under a per-process random key, so the
cache holds nothing from which the password could be found.
"""
import hashlib
import hmac
import os
import threading
import time

MAX_ENTRIES = 10000


class CredentialCache:
    def __init__(self, ttl):
        self.ttl = ttl
        self._key = os.urandom(32)
        self._entries = {}
        self._lock = threading.Lock()

    def _digest(self, user, password):
        message = user.encode("utf-8") + b"\0" + password.encode("utf-8")
        return hmac.new(self._key, message, hashlib.sha256).digest()

    def get(self, user, password):
        if self.ttl <= 0:
            return None
        digest = self._digest(user, password)
        with self._lock:
            entry = self._entries.get(digest)
            if entry is None or entry[0] < time.monotonic():
                self._entries.pop(digest, None)
                return None
            return entry[1]

    def put(self, user, password, identity):
        if self.ttl <= 0:
            return
        now = time.monotonic()
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries = {k: v for k, v in self._entries.items() if v[0] >= now}
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries.clear()
            self._entries[self._digest(user, password)] = (now + self.ttl, identity)
