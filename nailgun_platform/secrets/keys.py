"""The Fernet keys that encrypt secrets at rest: a key repository on disk, laid out like Keystone's.

The repository is a directory (mode 0700) of key files (mode 0600), each one Fernet key,
named by a number:

- ``0`` is the *staged* key: the next primary. Every server that loaded the repository since
  the last rotation already has it, so after the next ``rotate`` those servers, restarted or
  not, decrypt what the new primary encrypts;
- the highest number is the *primary* key: every new value is encrypted with it;
- the numbers in between are *old* keys: they still decrypt, until ``retire`` removes them.

``load`` creates the repository (a staged and a primary key) when the directory is missing
or empty, so a first start needs no setup step. Anything else that is wrong (a key file
missing, unreadable, readable by others or not a Fernet key, a stray file) is a
``KeyRepositoryError`` that names the file and the fix: a server must not start with keys
that would make it write values it cannot read back. A value that no key decrypts is an
``UndecryptableValue``, never garbage.

Writers (creation, ``rotate``, ``retire``) hold an exclusive ``flock`` on the directory and
readers a shared one, so several workers starting at once create one repository, and nobody
reads a rotation half done. Files are written to a dot-named temporary file and renamed.

Run as root (``nailgun-secrets status`` or ``rotate`` without ``runuser``), a new repository takes the owner of
the directory it is made in, and a key file the repository's owner, as ``nailgun-users`` does with its file: the
service user owning ``/var/lib/fuel-nailgun-extensions`` can still read every key.
"""
import contextlib
import fcntl
import functools
import os
import re
import shutil
import stat
import tempfile

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

STAGED = 0
#: a key file's name: a number without leading zeros (``0`` is the staged key)
_KEY_NAME = re.compile(r"0|[1-9][0-9]{0,8}")
#: a Fernet key as Fernet.generate_key writes it: 32 bytes, url-safe base64 with its padding
#: (base64 decoding alone skips characters outside the alphabet, so it would take garbage)
_KEY_TEXT = re.compile(rb"[A-Za-z0-9_-]{43}=")
#: permission bits a key file or the directory must not have: nobody but the owner reads keys
_OTHERS = 0o077
#: opened tokens a KeySet remembers (``KeySet.decrypt``), and the longest one it does (a secret leaf's,
#: not a whole sealed document's): at most about 8,192 x 2 KB = 16 MB per process
REMEMBERED, REMEMBERED_LENGTH = 8192, 1024


class KeyRepositoryError(Exception):
    """The key repository cannot be used as it is: the message says what is wrong and the fix."""


class KeyMissing(KeyRepositoryError):
    """The key manager holds no object where the database names one of the keys."""


class KeyManagerUnavailable(Exception):
    """The key manager holding the keys (``SECRETS.key_manager: castellan``) cannot be asked now: down, refusing
    our user, too slow. What needs a key answers 503 with ``Retry-After`` until it can."""


class UndecryptableValue(Exception):
    """No key of the repository decrypts a stored value: another repository, or a retired key."""


class KeySet:
    """The keys of a repository (or of the key manager) as they were when loaded: encrypt with the primary,
    decrypt with any. ``where``: what an operator is told they come from."""

    def __init__(self, where, keys):
        self.where = where
        self.keys = dict(keys)
        self.ids = sorted(keys)
        self.primary_id = self.ids[-1]
        order = [self.primary_id] + sorted((n for n in self.ids if n != self.primary_id), reverse=True)
        self._primary = Fernet(keys[self.primary_id])
        self._all = MultiFernet([Fernet(keys[n]) for n in order])
        # of the keys, not of the set: no reference cycle keeps an old set's keys alive once it is replaced
        self._remembered = functools.lru_cache(maxsize=REMEMBERED)(functools.partial(_opened, self._all, where))
        self._encrypted = set()  # tokens this set encrypted (``is_current`` without a decryption), at most REMEMBERED

    def roles(self):
        """``[(number, "staged" | "old" | "primary")]``, what a command shows an operator."""
        return [(n, "staged" if n == STAGED else "primary" if n == self.primary_id else "old")
                for n in self.ids]

    def encrypt(self, data):
        """A Fernet token (ASCII text, for a JSON document) of ``data`` (bytes) under the primary key."""
        token = self._primary.encrypt(data).decode("ascii")
        if len(self._encrypted) >= REMEMBERED:
            self._encrypted.clear()
        self._encrypted.add(token)
        return token

    def decrypt(self, token):
        """The bytes ``token`` holds, whichever key of the set encrypted it.

        A computed read opens the same secret leaves again and again (every node's effective values hold
        the environment's): short tokens' contents are remembered, by token, least recently used out
        first (``REMEMBERED``). The set holds the keys that opened them already, and the clear values
        are what every answer kept in memory holds anyway; a token is opened from memory only by the
        set that opened it, so a rotation or a retirement, which loads a new set (``secrets.keyset``,
        within a second), forgets them with the old keys (nothing but the set holds them, so they go
        with it, even in a process whose start-up objects ``gc.freeze`` keeps). Failures are not
        remembered."""
        if type(token) is str and len(token) <= REMEMBERED_LENGTH:
            return self._remembered(token)
        return _opened(self._all, self.where, token)

    def is_current(self, token):
        """Whether ``token`` is already encrypted with the primary key (re-encryption skips it): at once for a token
        this set encrypted (a write keeps the tokens of the secrets it does not change)."""
        if token in self._encrypted:
            return True
        try:
            self._primary.decrypt(_token_bytes(token, self.where))
        except (InvalidToken, UndecryptableValue):
            return False
        return True

    def reencrypt(self, token):
        """``token``'s value encrypted again under the primary key (its Fernet timestamp kept)."""
        try:
            return self._all.rotate(_token_bytes(token, self.where)).decode("ascii")
        except InvalidToken:
            raise _undecryptable(self.where) from None


def _opened(fernets, where, token):
    """The bytes ``token`` holds, opened by any of ``fernets`` (a MultiFernet of the keys from ``where``)."""
    try:
        return fernets.decrypt(_token_bytes(token, where))
    except InvalidToken:
        raise _undecryptable(where) from None


def _token_bytes(token, where):
    if isinstance(token, str):
        if not token.isascii():
            raise _undecryptable(where)
        token = token.encode("ascii")
    return token


def _undecryptable(where):
    return UndecryptableValue(
        "No key of {0} decrypts a stored value: it was encrypted with a key that is not there (other "
        "keys, or a key already retired). Restore the keys the data was encrypted with.".format(where))


def load(path, create=True):
    """The repository at ``path`` as a KeySet, created first when ``create`` and it is missing or empty."""
    path = os.path.abspath(path)
    if create and _missing_or_empty(path):
        _create(path)
    _check_directory(path)
    with _locked(path, exclusive=False):
        return KeySet("the key repository {0}".format(path), _read_keys(path))


def rotate(path):
    """Make the staged key the primary and stage a new key; old keys stay. Returns the new primary's number.

    Servers running since before the rotation keep encrypting with the previous primary until
    they restart; every key they used stays until ``retire``.
    """
    path = os.path.abspath(path)
    _check_directory(path)
    with _locked(path, exclusive=True):
        keys = _read_keys(path)
        primary = max(keys) + 1
        _write_key(path, primary, keys[STAGED])
        _write_key(path, STAGED, Fernet.generate_key())
        _sync_directory(path)
    return primary


def retire(path):
    """Remove every key older than the primary (the staged key stays). Returns the removed numbers.

    Values those keys encrypted cannot be read any more: re-encrypt everything under the
    primary first, with every server restarted since the last ``rotate`` (a server that was
    not still encrypts with the previous primary).
    """
    path = os.path.abspath(path)
    _check_directory(path)
    with _locked(path, exclusive=True):
        keys = _read_keys(path)
        old = [n for n in sorted(keys) if STAGED < n < max(keys)]
        for number in old:
            os.unlink(os.path.join(path, str(number)))
        _sync_directory(path)
    return old


def write(path, key_set):
    """A repository at ``path`` holding the keys ``{number: Fernet key}`` (keys moved out of the key manager), in
    place of whatever is there: written in full beside it, then renamed into place, so an interrupted write leaves
    the directory as it was."""
    path = os.path.abspath(path)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    building = tempfile.mkdtemp(dir=parent, prefix="." + os.path.basename(path) + ".moving-")
    try:
        os.chmod(building, 0o700)
        _give_to_owner_of(building, parent)
        for number, key in sorted(key_set.items()):
            _write_key(building, number, key)
        _sync_directory(building)
        if os.path.isdir(path) and os.listdir(path):
            replaced = tempfile.mkdtemp(dir=parent, prefix="." + os.path.basename(path) + ".replaced-")
            os.rename(path, os.path.join(replaced, "keys"))
            os.rename(building, path)
            shutil.rmtree(replaced)
        else:
            os.rename(building, path)  # over an empty directory, or none
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    _sync_directory(parent)


def remove(path):
    """Delete the repository at ``path``, its keys first (the source of a move into the key manager)."""
    path = os.path.abspath(path)
    _check_directory(path)
    with _locked(path, exclusive=True):
        for name in os.listdir(path):
            os.unlink(os.path.join(path, name))
        _sync_directory(path)
    os.rmdir(path)


def _missing_or_empty(path):
    try:
        return not _entries(path)
    except FileNotFoundError:
        return True
    except OSError:
        return False  # not a directory, or not readable: _check_directory says so


def _entries(path):
    """The names in the directory that are not temporary (dot) files."""
    return [name for name in os.listdir(path) if not name.startswith(".")]


def _create(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        os.mkdir(path, 0o700)
        os.chmod(path, 0o700)  # mkdir's mode passes through the umask
        _give_to_owner_of(path, os.path.dirname(path))
    except FileExistsError:
        pass
    _check_directory(path)
    with _locked(path, exclusive=True):
        if not _entries(path):  # another process may have created it meanwhile
            _write_key(path, 1, Fernet.generate_key())
            _write_key(path, STAGED, Fernet.generate_key())
            _sync_directory(path)


def _check_directory(path):
    try:
        status = os.stat(path)
    except FileNotFoundError:
        raise KeyRepositoryError(
            "The key repository {0} does not exist. It is created at the server's first start; if "
            "data was already encrypted, restore the repository it was encrypted with.".format(path))
    except OSError as exc:
        raise KeyRepositoryError("Cannot read the key repository {0}: {1}".format(path, exc.strerror))
    if not stat.S_ISDIR(status.st_mode):
        raise KeyRepositoryError("The key repository {0} is not a directory".format(path))
    if status.st_mode & _OTHERS:
        raise KeyRepositoryError(
            "The key repository {0} has mode {1:04o}: only its owner may use it (chmod 700 {0})".format(
                path, stat.S_IMODE(status.st_mode)))


@contextlib.contextmanager
def _locked(path, exclusive):
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise KeyRepositoryError("Cannot read the key repository {0}: {1}".format(path, exc.strerror))
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(descriptor)


def _read_keys(path):
    """{number: key} of every key file, each checked; the staged key and a primary must be there."""
    try:
        names = _entries(path)
    except OSError as exc:
        raise KeyRepositoryError("Cannot list the key repository {0}: {1}".format(path, exc.strerror))
    keys = {}
    for name in names:
        if not _KEY_NAME.fullmatch(name):
            raise KeyRepositoryError(
                "{0} does not belong in the key repository {1}: it holds only key files named by "
                "numbers (0, the staged key, and 1, 2, ..., the highest the primary). Move it "
                "elsewhere.".format(name, path))
        keys[int(name)] = _read_key(os.path.join(path, name))
    if STAGED not in keys or len(keys) < 2:
        raise KeyRepositoryError(
            "The key repository {0} is incomplete: it needs key file 0 (the staged key) and at least "
            "one numbered key (the highest is the primary), and it has {1}. Restore it from its "
            "backup; remove the directory only if no data was ever encrypted with it.".format(
                path, ", ".join(sorted(names, key=int)) or "no key file"))
    return keys


def _read_key(filename):
    try:
        status = os.stat(filename)
        if not stat.S_ISREG(status.st_mode):
            raise KeyRepositoryError("The key file {0} is not a regular file".format(filename))
        if status.st_mode & _OTHERS:
            raise KeyRepositoryError(
                "The key file {0} has mode {1:04o}: only its owner may read it (chmod 600 {0})".format(
                    filename, stat.S_IMODE(status.st_mode)))
        with open(filename, "rb") as stream:
            text = stream.read(1024).rstrip(b"\r\n")
    except OSError as exc:
        raise KeyRepositoryError("Cannot read the key file {0}: {1}".format(filename, exc.strerror))
    if not _KEY_TEXT.fullmatch(text):
        raise KeyRepositoryError(
            "The key file {0} does not hold a Fernet key (44 characters of url-safe base64): "
            "restore it from the repository's backup".format(filename))
    return text


def _write_key(path, number, key):
    """Write one key file atomically, mode 0600 from the start (mkstemp)."""
    descriptor, temporary = tempfile.mkstemp(dir=path, prefix=".key-")
    try:
        _give_to_owner_of(temporary, path)
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(key + b"\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, os.path.join(path, str(number)))
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _give_to_owner_of(path, owner_path):
    """Root's files go to ``owner_path``'s owner (only root can give a file away)."""
    if os.getuid() == 0:
        owner = os.stat(owner_path)
        os.chown(path, owner.st_uid, owner.st_gid)


def _sync_directory(path):
    descriptor = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
