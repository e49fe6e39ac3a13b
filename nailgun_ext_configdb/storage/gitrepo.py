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
from dulwich.lru_cache import LRUCache
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

CACHED_BLOBS = 256
MASTER = b"refs/heads/master"
FILE_MODE = 0o100644
LOCK_WAITS = 500  # times 10 ms: how long another writer may hold the lock of an object or a ref

_SHA = re.compile(r"[0-9a-f]{40}\Z")
_blobs = LRUCache(CACHED_BLOBS)
_blobs_lock = threading.Lock()


def author_line(identity: str) -> bytes:
    """A git ident for a ConfigDB user: git splits idents on <, > and newlines, so none may get through."""
    name = " ".join(re.sub(r"[<>\x00]", "", identity).split()) or "unknown"
    return "{0} <{1}@configdb>".format(name, name.replace(" ", ".")).encode("utf-8", "replace")


def _patiently(write, *args):
    """Run a dulwich write that takes a lock file: another writer holding it (storing the very same
    object, say: an identical document) only delays this one, which then finds the object in place."""
    for _ in range(LOCK_WAITS):
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
    """Whether `ancestor` is reachable from `commit` through parents."""
    seen, todo = set(), [commit]
    while todo:
        sha = todo.pop()
        if sha == ancestor:
            return True
        if sha not in seen:
            seen.add(sha)
            todo.extend(store[sha].parents)
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

    def advance(self, commit: str, branch: bytes = MASTER) -> bool:
        """Move `branch` to `commit` if that is forward; compare-and-swap, so racing writers never rewind it."""
        with self._open() as repo:
            new = _object(repo, commit, b"commit").id
            while True:
                current = repo.refs.follow(branch)[1]
                if current is None:
                    if _patiently(repo.refs.add_if_new, branch, new):
                        if repo.refs.follow(b"HEAD")[1] is None:
                            repo.refs.set_symbolic_ref(b"HEAD", branch)
                        return True
                elif current == new or not _descends(repo.object_store, new, current):
                    return False
                elif _patiently(repo.refs.set_if_equals, branch, current, new):
                    return True

    def log(self, branch: bytes = MASTER) -> list[dict]:
        """The branch's commits, newest first (each has at most one parent, so this is the parent chain)."""
        entries, sha = [], self.head(branch)
        if sha is None:
            return entries
        with self._open() as repo:
            while sha:
                commit = repo.object_store[sha.encode()]
                entries.append({"sha": sha, "author": commit.author.decode().rsplit(" <", 1)[0],
                                "message": commit.message.decode(), "parents": [p.decode() for p in commit.parents]})
                sha = entries[-1]["parents"][0] if commit.parents else None
        return entries

    def files_at(self, commit: str) -> dict[str, str]:
        with self._open() as repo:
            tree = _object(repo, commit, b"commit").tree
            return {e.path.decode(): e.sha.decode() for e in repo.object_store.iter_tree_contents(tree)}


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
