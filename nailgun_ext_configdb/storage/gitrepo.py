"""The dulwich layer of the git store: one bare repository per environment, one commit per stored version.

commit() only writes objects; a branch moves solely through advance(), once the caller's database
transaction has committed, so a rollback leaves nothing behind but unreferenced objects. Every write
goes through git's own lock-file protocol, so several processes may write into one repository at once.
"""
import datetime
import os
import re
import shutil
import stat
import threading
import time
import uuid

from dulwich.file import FileLocked
from dulwich.lru_cache import LRUSizeCache
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

#: bytes of blob content a process keeps (each blob is a stored version's YAML)
CACHED_BYTES = 64 * 1024 * 1024
MASTER = b"refs/heads/master"
#: where a branch tip the database no longer knows is kept when the branch is set to the database's commit
REPLACED = b"refs/replaced-heads/"
FILE_MODE = 0o100644
LOCK_WAITS = 500  # times 10 ms: how long another writer may hold the lock of an object or a ref
#: how far back a branch move looks for the branch's commit (writers of one environment are never far apart)
ANCESTRY_WALK = 1000

_SHA = re.compile(r"[0-9a-f]{40}\Z")
_blobs = LRUSizeCache(max_size=CACHED_BYTES, compute_size=len)
_blobs_lock = threading.Lock()


def author_line(identity: str) -> bytes:
    """A git ident for a ConfigDB user: git splits idents on <, > and newlines, so none may get through."""
    name = " ".join(re.sub(r"[<>\x00]", "", identity).split()) or "unknown"
    return "{0} <{1}@configdb>".format(name, name.replace(" ", ".")).encode("utf-8", "replace")


def _patiently(write, *args, waits=LOCK_WAITS):
    """Run a dulwich write that takes a lock file: another writer holding it (storing the very same
    object, say: an identical document) only delays this one, which then finds the object in place."""
    for _ in range(waits):
        try:
            return write(*args)
        except FileLocked:
            time.sleep(0.01)
    return write(*args)


def _write_tree(store, tree_id, changes, written, prefix=""):
    """The id of tree `tree_id` (None: empty) with `changes` applied; None when a subdirectory ends up empty."""
    entries = {e.path.decode(): (e.mode, e.sha) for e in store[tree_id].iteritems()} if tree_id else {}
    nested = {}
    for path, content in changes.items():
        name, _, rest = path.partition("/")
        if rest:
            nested.setdefault(name, {})[rest] = content
        elif stat.S_ISDIR(entries.get(name, (FILE_MODE,))[0]):
            raise ValueError("{0}{1} is a directory".format(prefix, name))
        elif content is None:
            entries.pop(name, None)
        else:
            blob = Blob.from_string(content)
            _patiently(store.add_object, blob)
            entries[name] = (FILE_MODE, blob.id)
            written[prefix + name] = blob.id.decode()
    for name, sub in nested.items():
        mode, sha = entries.pop(name, (stat.S_IFDIR, None))
        if not stat.S_ISDIR(mode):
            raise ValueError("{0}{1} is a file".format(prefix, name))
        sha = _write_tree(store, sha, sub, written, prefix + name + "/")
        if sha is not None:
            entries[name] = (stat.S_IFDIR, sha)
    if not entries and prefix:
        return None
    tree = Tree()
    for name, (mode, sha) in entries.items():
        tree.add(name.encode(), mode, sha)
    _patiently(store.add_object, tree)
    return tree.id


def _object(repo, sha, kind):
    """The object `sha` of type `kind`, or LookupError: a missing version is the caller's error, not ours."""
    try:
        obj = repo.object_store[sha.encode()] if _SHA.match(sha) else None
    except KeyError:
        obj = None
    if obj is None or obj.type_name != kind:
        raise LookupError("no {0} {1} in {2}".format(kind.decode(), sha, repo.path))
    return obj


def _descends(store, commit, ancestor):
    """Whether `ancestor` is among the ANCESTRY_WALK nearest ancestors of `commit` (a linear history)."""
    sha = commit
    for _ in range(ANCESTRY_WALK):
        if sha == ancestor:
            return True
        parents = store[sha].parents
        if not parents:
            return False
        sha = parents[0]
    return False


class Repository:
    """One environment's bare repository; opened per call (cheap) so a set-aside directory is never reused."""

    def __init__(self, path: str):
        self.path = path

    def exists(self) -> bool:
        return os.path.isfile(os.path.join(self.path, "HEAD"))

    def _open(self, create=False):
        if not self.exists():
            if not create:
                raise LookupError("no repository at {0}".format(self.path))
            # Built aside and renamed into place, so no process ever sees half a repository.
            scratch = "{0}.init-{1}".format(self.path.rstrip(os.sep), uuid.uuid4().hex)
            os.makedirs(scratch)
            Repo.init_bare(scratch, default_branch=b"master").close()
            try:
                os.rename(scratch, self.path)
            except OSError:  # another process created it first
                shutil.rmtree(scratch)
                if not self.exists():
                    raise
        return Repo(self.path)

    def commit(self, parent: str | None, files: dict[str, bytes | None], author: str, message: str,
               when: datetime.datetime | None = None) -> tuple[str, dict[str, str]]:
        for path in files:
            if any(part in ("", ".", "..", ".git") or "\x00" in part for part in path.split("/")):
                raise ValueError("not a relative file path: {0!r}".format(path))
        when = when or datetime.datetime.now(datetime.timezone.utc)
        if when.tzinfo is None:
            when = when.replace(tzinfo=datetime.timezone.utc)
        with self._open(create=True) as repo:
            written = {}
            commit = Commit()
            commit.tree = _write_tree(repo.object_store, _object(repo, parent, b"commit").tree if parent else None,
                                      files, written)
            commit.parents = [parent.encode()] if parent else []
            commit.author = commit.committer = author_line(author)
            commit.author_time = commit.commit_time = int(when.timestamp())
            commit.author_timezone = commit.commit_timezone = int(when.utcoffset().total_seconds())
            commit.message = message.encode("utf-8")
            _patiently(repo.object_store.add_object, commit)
        return commit.id.decode(), written

    def read_blob(self, sha: str) -> bytes:
        with _blobs_lock:
            content = _blobs.get(sha)
        if content is None:
            with self._open() as repo:
                content = _object(repo, sha, b"blob").data
            self.remember(sha, content)
        return content

    def remember(self, sha: str, content: bytes):
        """Cache a blob the writer already holds; blobs are content-addressed, so an entry is never stale."""
        with _blobs_lock:
            _blobs[sha] = content

    def head(self, branch: bytes = MASTER) -> str | None:
        if not self.exists():
            return None
        with self._open() as repo:
            sha = repo.refs.follow(branch)[1]
        return sha.decode() if sha else None

    def advance(self, commit: str, branch: bytes = MASTER, waits: int = LOCK_WAITS) -> bool:
        """Move `branch` to `commit`, the newest state the database knows; whether it moved.

        Never backwards: a writer that lost a race finds the branch already past its commit. A branch
        on another line than `commit` (the database restored from a backup, say) is set to `commit`, its
        tip kept under ``refs/replaced-heads/``. Compare-and-swap, waiting at most `waits` times 10 ms for
        another writer's lock file.
        """
        with self._open() as repo:
            new = _object(repo, commit, b"commit").id
            store = repo.object_store
            while True:
                current = repo.refs.follow(branch)[1]
                if current is None:
                    if _patiently(repo.refs.add_if_new, branch, new, waits=waits):
                        if repo.refs.follow(b"HEAD")[1] is None:
                            repo.refs.set_symbolic_ref(b"HEAD", branch)
                        return True
                    continue
                if current == new or _descends(store, current, new):
                    return False
                if not _descends(store, new, current):
                    _patiently(repo.refs.__setitem__, REPLACED + current, current, waits=waits)
                if _patiently(repo.refs.set_if_equals, branch, current, new, waits=waits):
                    return True

def set_aside(root: str, path: str) -> str | None:
    """Keep a deleted environment's history rather than destroy it, under a name saying when it went."""
    if not os.path.exists(path):
        return None
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S.%fZ")
    target = base = os.path.join(root, "deleted", "{0}-{1}".format(os.path.basename(os.path.normpath(path)), stamp))
    os.makedirs(os.path.dirname(base), exist_ok=True)
    count = 0
    while os.path.exists(target):
        count += 1
        target = "{0}-{1}".format(base, count)
    os.rename(path, target)
    return target
