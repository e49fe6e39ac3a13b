"""Local mode: users, bcrypt password hashes and roles in a YAML file, and this server's own tokens.

The file (``AUTH.users_file``, mode 0600)::

    users:
      admin: {password: "$2b$12$...", roles: [admin]}

``nailgun-users`` writes it. (The ``token_secret`` that files of earlier versions carry is ignored, and
dropped at the next write: tokens are signed with the keys in the database, ``token_keys``, so that every
host of the database accepts them.) It is read again whenever it changes on disk, so a user added,
removed or given other roles counts at the next request, in every worker: a server looks at the file's
``stat`` at most once per ``LOOK_SECONDS`` (a system call per request handed the GIL over on every request,
which doubled the CPU of a replayed read under the server's threads), and ``save`` returns only that long
after it replaced the file. So a request sent after ``nailgun-users`` returned is served under a look that
started after the write (the read cache's lease argument); a file changed by other means (an edit, a copy
from another host) counts within ``LOOK_SECONDS``. A token names its
user, its expiry and a fingerprint of the user's password hash: roles are looked up at each
request, and a removed user's tokens, or tokens issued before a password change, stop working.
A file that breaks while the server runs refuses every request with 503 until it is fixed.
"""
import base64
import binascii
import functools
import hashlib
import json
import os
import tempfile
import threading
import time

import bcrypt
import yaml

from nailgun_host.auth import AuthenticationFailed, AuthenticationUnavailable, Identity, credential_cache

#: bcrypt hashes only the first 72 bytes; longer passwords are refused rather than cut
MAX_PASSWORD_BYTES = 72
#: how long a look at the users file's ``stat`` is taken for true, and how long ``save`` waits after its write
LOOK_SECONDS = 0.1
@functools.cache
def _dummy_hash(rounds):
    return bcrypt.hashpw(b"unknown user", bcrypt.gensalt(rounds)).decode()


def _hash_for_unknown_users(users):
    """Checked for unknown users too, at the cost of the file's own hashes: a wrong name costs as long as a
    wrong password, so timing tells nobody which names exist."""
    for entry in users.values():
        try:
            return _dummy_hash(int(entry["password"].split("$")[2]))
        except (IndexError, ValueError):
            continue
    return _dummy_hash(12)


class UsersFileError(AuthenticationUnavailable):
    """The users file cannot be read or is not in the expected shape (at start: no start; later: 503)."""


def _read(path):
    try:
        with open(path, encoding="utf-8") as stream:
            loaded = yaml.safe_load(stream) or {}
    except (OSError, ValueError, RecursionError, yaml.YAMLError) as exc:  # ValueError: undecodable, or a bad date
        raise UsersFileError("cannot read the users file {0}: {1}".format(path, exc))
    users = loaded.get("users") if isinstance(loaded, dict) else None
    if not isinstance(users, dict) or not all(
            isinstance(name, str) and isinstance(entry, dict) and isinstance(entry.get("password"), str)
            and isinstance(entry.get("roles", []), list) and all(isinstance(role, str) for role in entry.get(
                "roles", [])) for name, entry in users.items()):
        raise UsersFileError("{0} is not a users file: it needs users "
                             "({{name: {{password: <bcrypt hash>, roles: [...]}}}})".format(path))
    return loaded


def new_users_file():
    return {"users": {}}


def fingerprint(entry):
    """What a token carries of its user's password hash: a new password, or a revocation, ends the token."""
    return _fingerprint(entry["password"])


@functools.lru_cache(maxsize=1024)
def _fingerprint(password_hash):
    return hashlib.sha256(password_hash.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def hash_password(password):
    encoded = password.encode("utf-8")
    if not encoded or len(encoded) > MAX_PASSWORD_BYTES:
        raise ValueError("a password must have 1 to {0} bytes".format(MAX_PASSWORD_BYTES))
    return bcrypt.hashpw(encoded, bcrypt.gensalt()).decode()


def save(path, content):
    """Write the users file atomically, readable by its owner only. Written by root, it keeps the owner it had,
    or a new one takes its directory's: root's ``nailgun-users`` leaves it readable by the service owning them."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    owner = os.stat(path if os.path.exists(path) else directory)
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=".users-")
    try:
        with os.fdopen(handle, "w") as stream:
            yaml.safe_dump(content, stream, default_flow_style=False, sort_keys=True)
        os.chmod(temporary, 0o600)
        if os.getuid() == 0:  # only root can give a file away
            os.chown(temporary, owner.st_uid, owner.st_gid)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    time.sleep(LOOK_SECONDS)  # every look a server took before the write has run out (module)


def load(path):
    return _read(path)


class LocalUsers:
    """The users file of a running server, re-read when it changes."""

    def __init__(self, path, token_ttl, cache, token_keys):
        self.path = path
        self.token_ttl = token_ttl
        #: the keys that sign and open tokens, and the revocations (``token_keys.TokenKeys``)
        self.token_keys = token_keys
        #: passwords found right, keyed with the stored hash too: a changed password counts at once
        self.cache = cache
        #: tokens opened: their claims, and the copy of the token keys that opened them (``check_token``)
        self.opened = credential_cache.CredentialCache(cache.ttl)
        self._lock = threading.Lock()
        #: the file's (mtime, size, inode) when ``_content`` was read from it
        self._stamp = None
        self._content = None
        #: (the monotonic time the latest look at the file started, the content it found)
        self._looked = (None, None)
        self._identities = (None, {})
        self._content_now()  # a missing or broken file stops the server at start, not at the first request

    def _content_now(self):
        """The content under a look at the file that started less than ``LOOK_SECONDS`` ago (module)."""
        looked = self._looked
        asked_at = time.monotonic()
        if looked[0] is not None and asked_at - looked[0] < LOOK_SECONDS:
            return looked[1]
        try:
            stat = os.stat(self.path)
        except OSError as exc:
            raise UsersFileError("cannot read the users file {0}: {1}".format(self.path, exc))
        stamp = (stat.st_mtime_ns, stat.st_size, stat.st_ino)
        with self._lock:
            if stamp != self._stamp:
                self._content = _read(self.path)
                self._stamp = stamp
            content = self._content  # the file as last read, so never older than any look's before
            if self._looked[0] is None or asked_at > self._looked[0]:
                self._looked = (asked_at, content)
            else:  # a later look has finished first: it keeps its time, with the newest content
                self._looked = (self._looked[0], content)
            return content

    def content(self):
        """The users file as it is now (read again if it changed): the same object while it does not."""
        return self._content_now()

    def identity(self, name, content):
        """The user's identity as ``content`` says: one object per user and content of the file."""
        known = self._identities
        if known[0] is not content:
            known = self._identities = (content, {})
        identity = known[1].get(name)
        if identity is None:
            entry = content["users"].get(name)
            if entry is None:
                raise AuthenticationFailed("unknown user")
            identity = known[1][name] = Identity(name, tuple(str(role) for role in entry.get("roles", [])),
                                                 user_id=name)
        return identity

    def password_hash(self, name, content):
        """The password hash ``content`` (the users file as ``content()`` gave it) holds for the user, or None."""
        entry = content["users"].get(name)
        return entry["password"] if entry else None

    def remembered(self, name, password, content=None):
        """The user's identity if this password was found right lately (no bcrypt check), else None; against
        ``content`` (the file as ``content()`` gave it) or the file as it is now."""
        content = content or self._content_now()
        entry = content["users"].get(name)
        if entry and self.cache.get(name, entry["password"], password):
            return self.identity(name, content)
        return None

    def check_password(self, name, password, content=None):
        """The user's identity, with the roles the file gives (``content``, or the file as it is now);
        AuthenticationFailed if wrong. A bcrypt check: the caller runs it in a check slot
        (``AuthMiddleware.password_check``)."""
        content = content or self._content_now()
        entry = content["users"].get(name)
        stored = entry["password"] if entry else _hash_for_unknown_users(content["users"])
        encoded = password.encode("utf-8")
        try:
            matches = len(encoded) <= MAX_PASSWORD_BYTES and bcrypt.checkpw(encoded, stored.encode())
        except ValueError:  # not a bcrypt hash: that user cannot log in
            matches = False
        if not (entry and matches):
            raise AuthenticationFailed("wrong user name or password")
        self.cache.put(True, name, stored, password)
        return self.identity(name, content)

    def issue_token(self, identity, content, expires=None):
        """A token of the user valid ``token_ttl`` seconds (or until ``expires``): (token, expiry time). It
        carries the password of ``content``, the file its login was checked against: a password changed
        meanwhile ends it."""
        expires = expires or time.time() + self.token_ttl
        payload = json.dumps({"user": identity.name, "expires": expires,
                              "password": fingerprint(content["users"][identity.name])}).encode()
        return self.token_keys.sign(payload).decode(), expires

    def check_token(self, token, content=None):
        """The identity a token of this server names, and when the token expires. A token opened under the
        keys this process holds now is not opened again (a rotation or a reload of the keys opens it anew);
        its expiry, user, password and revocation are checked at every request."""
        content = content or self._content_now()
        claims = self.opened.get(token)
        if claims is None or claims[0] is not self.token_keys.current():
            claims = self._claims(token)
            self.opened.put(claims, token)
        _, name, expires, carried = claims
        entry = content["users"].get(name)
        if expires < time.time() or entry is None or carried != fingerprint(entry) or \
                self.token_keys.revoked(name, carried):
            raise AuthenticationFailed("the token is invalid or expired")
        return self.identity(name, content), expires

    def _claims(self, token):
        """``(keys, user name, expiry, password fingerprint)`` of a token the ``keys`` open."""
        try:
            encoded = token.encode("ascii")
            if base64.urlsafe_b64encode(base64.urlsafe_b64decode(encoded)) != encoded:
                raise ValueError("not canonical base64")  # Fernet alone would accept trailing junk
            payload, keys = self.token_keys.opened(encoded)
            claims = json.loads(payload)
            return keys, claims["user"], float(claims["expires"]), claims["password"]
        except (ValueError, KeyError, TypeError, UnicodeError, binascii.Error):
            raise AuthenticationFailed("the token is invalid or expired")
