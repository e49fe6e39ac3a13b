"""The dulwich layer of the git store: trees, commits, the blob cache, forward-only branches, racing writers."""
import concurrent.futures
import datetime
import multiprocessing
import os
import re
import shutil
import subprocess
import threading
import uuid

import pytest
from dulwich.objects import Blob
from dulwich.repo import Repo
from hypothesis import given
from hypothesis import strategies as st

from nailgun_ext_configdb.storage import gitrepo
from nailgun_ext_configdb.storage.gitrepo import Repository

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="the git binary is not installed")
GIT_ENV = dict(os.environ, GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")


def git(path, *args):
    return subprocess.run(["git", "--git-dir=" + str(path)] + list(args), env=GIT_ENV,
                          capture_output=True, check=True).stdout.decode()


def log(repo, branch=gitrepo.MASTER):
    """The branch's commits, newest first: sha, author (name), message, parents."""
    entries, sha = [], repo.head(branch)
    with Repo(repo.path) if repo.exists() else _none() as store:
        while sha:
            commit = store.object_store[sha.encode()]
            entries.append({"sha": sha, "author": commit.author.decode().rsplit(" <", 1)[0],
                            "message": commit.message.decode(), "parents": [p.decode() for p in commit.parents]})
            sha = entries[-1]["parents"][0] if commit.parents else None
    return entries


class _none:
    def __enter__(self):
        return None

    def __exit__(self, *_):
        return False


def files_at(repo, commit):
    """``{path: blob sha}`` of a commit's tree; LookupError as the module raises for anything else."""
    try:
        with Repo(repo.path) as store:
            found = store.object_store[commit.encode()] if re.fullmatch("[0-9a-f]{40}", commit or "") else None
            if found is None or found.type_name != b"commit":
                raise KeyError(commit)
            return {e.path.decode(): e.sha.decode() for e in store.object_store.iter_tree_contents(found.tree)}
    except (KeyError, ValueError, OSError) as exc:
        raise LookupError(str(exc))


@pytest.fixture
def repo(tmp_path):
    return Repository(str(tmp_path / "env1"))


def test_nothing_exists_before_the_first_commit(repo, tmp_path):
    assert not repo.exists()
    assert repo.head() is None
    assert log(repo) == []
    assert os.listdir(tmp_path) == []
    with pytest.raises(LookupError, match="no repository"):
        repo.read_blob("a" * 40)


def test_nested_paths_are_written_as_directories(repo):
    sha, written = repo.commit(None, {"a/b/c.yaml": b"c: 1\n", "top.yaml": b"t: 2\n"}, "alice", "first")
    assert repo.exists()
    assert set(written) == {"a/b/c.yaml", "top.yaml"}
    assert files_at(repo, sha) == written
    assert repo.read_blob(written["a/b/c.yaml"]) == b"c: 1\n"
    assert repo.head() is None, "commit() must not move any ref"


def test_a_chain_of_commits_keeps_the_files_it_does_not_touch(repo):
    first, one = repo.commit(None, {"a.yaml": b"1"}, "alice", "one")
    second, two = repo.commit(first, {"nodes/1/b.yaml": b"2"}, "alice", "two")
    third, three = repo.commit(second, {"a.yaml": b"3"}, "bob", "three")
    assert files_at(repo, third) == {"a.yaml": three["a.yaml"], "nodes/1/b.yaml": two["nodes/1/b.yaml"]}
    assert files_at(repo, first) == one
    assert repo.read_blob(three["a.yaml"]) == b"3"


@needs_git
def test_removal_prunes_emptied_directories(repo):
    first, _ = repo.commit(None, {"a/b/c.yaml": b"1", "a/d.yaml": b"2", "e/f/g.yaml": b"3"}, "alice", "one")
    second, written = repo.commit(first, {"a/b/c.yaml": None, "e/f/g.yaml": None, "absent/x.yaml": None}, "a", "rm")
    assert written == {}
    assert set(files_at(repo, second)) == {"a/d.yaml"}
    assert git(repo.path, "ls-tree", "-r", "-t", "--name-only", second).split() == ["a", "a/d.yaml"]
    emptied, _ = repo.commit(second, {"a/d.yaml": None}, "alice", "all gone")
    assert files_at(repo, emptied) == {}


@pytest.mark.parametrize("files", [
    {"/etc.yaml": b""}, {"a//b.yaml": b""}, {"a/../b.yaml": b""}, {"./a.yaml": b""}, {".git/config": b""},
    {"a/": b""}, {"a\x00b": b""}, {"a": b"file", "a/b": b"in a file"},
])
def test_paths_that_are_not_plain_relative_files_are_refused(repo, files):
    with pytest.raises(ValueError):
        repo.commit(None, files, "alice", "bad")


def test_a_file_never_silently_replaces_a_directory_or_the_reverse(repo):
    sha, _ = repo.commit(None, {"a/b.yaml": b"1", "c.yaml": b"2"}, "alice", "one")
    for files in ({"a": b"x"}, {"a": None}, {"c.yaml/d": b"x"}):
        with pytest.raises(ValueError):
            repo.commit(sha, files, "alice", "conflict")


def test_missing_or_malformed_objects_raise_lookup_error(repo):
    sha, written = repo.commit(None, {"a/b.yaml": b"1"}, "alice", "one")
    with Repo(repo.path) as dulwich_repo:
        tree = dulwich_repo.object_store[sha.encode()].tree.decode()
    for bad in ("0" * 40, "not a sha", sha, tree, "A" * 40):
        with pytest.raises(LookupError):
            repo.read_blob(bad)
    for bad in ("0" * 40, written["a/b.yaml"]):
        with pytest.raises(LookupError):
            files_at(repo, bad)
        with pytest.raises(LookupError):
            repo.commit(bad, {}, "alice", "on nothing")
        with pytest.raises(LookupError):
            repo.advance(bad)


def test_read_blob_serves_from_the_cache(repo):
    content = uuid.uuid4().bytes
    _, written = repo.commit(None, {"a.yaml": content}, "alice", "one")
    sha = written["a.yaml"]
    assert repo.read_blob(sha) == content
    os.remove(os.path.join(repo.path, "objects", sha[:2], sha[2:]))
    assert repo.read_blob(sha) == content


def test_remember_fills_the_cache_which_stays_bounded(repo):
    repo.commit(None, {"a.yaml": b"1"}, "alice", "one")
    phantom = uuid.uuid4().hex + "0" * 8
    repo.remember(phantom, b"known to the writer")
    assert repo.read_blob(phantom) == b"known to the writer"
    for _ in range(gitrepo.CACHED_BYTES // (1024 * 1024) + 1):
        repo.remember(uuid.uuid4().hex + "0" * 8, b"o" * 1024 * 1024)
    with pytest.raises(LookupError):
        repo.read_blob(phantom)


def test_advance_only_moves_forward(repo):
    first, _ = repo.commit(None, {"a.yaml": b"1"}, "alice", "one")
    second, _ = repo.commit(first, {"a.yaml": b"2"}, "alice", "two")
    sibling, _ = repo.commit(first, {"a.yaml": b"fork"}, "bob", "fork")
    assert repo.advance(first)
    assert repo.advance(second)
    assert repo.head() == second
    assert not repo.advance(first), "an older commit"
    assert not repo.advance(second), "the current commit"
    assert repo.head() == second
    assert [(e["sha"], e["author"], e["message"], e["parents"]) for e in log(repo)] == [
        (second, "alice", "two", [first]), (first, "alice", "one", [])]


def test_a_branch_on_another_line_is_set_to_the_database_commit_and_kept_aside(repo):
    """The database is the index: a commit that does not descend from the branch (the database was restored
    from a backup, say) becomes the branch, whose tip stays reachable under refs/replaced-heads/."""
    first, _ = repo.commit(None, {"a.yaml": b"1"}, "alice", "one")
    second, _ = repo.commit(first, {"a.yaml": b"2"}, "alice", "two")
    sibling, _ = repo.commit(first, {"a.yaml": b"fork"}, "bob", "fork")
    assert repo.advance(second)
    assert repo.advance(sibling)
    assert repo.head() == sibling
    assert repo.head(gitrepo.REPLACED + second.encode()) == second
    assert not repo.advance(first), "still never backwards"


@needs_git
def test_the_first_branch_becomes_head(repo):
    sha, _ = repo.commit(None, {"a.yaml": b"1"}, "alice", "one")
    assert repo.advance(sha, b"refs/heads/deploy")
    assert repo.head(b"refs/heads/deploy") == sha and repo.head() is None
    assert git(repo.path, "symbolic-ref", "HEAD").strip() == "refs/heads/deploy"


@needs_git
def test_git_reads_what_dulwich_wrote(repo):
    when = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=2)))
    first, _ = repo.commit(None, {"a/b.yaml": b"x: 1\n"}, "alice", "create a/b", when=when)
    second, _ = repo.commit(first, {"a/b.yaml": b"x: 2\n", "c.yaml": b"y"}, "m\u00e9l<evil>\n", "update")
    repo.advance(second)
    assert git(repo.path, "log", "--format=%an%x00%s").splitlines() == ["m\u00e9levil\x00update", "alice\x00create a/b"]
    assert git(repo.path, "show", "master:a/b.yaml") == "x: 2\n"
    assert git(repo.path, "show", "-s", "--format=%ai", first).strip() == "2024-05-01 12:00:00 +0200"
    git(repo.path, "fsck", "--strict", "--full")


def test_author_line_examples():
    assert gitrepo.author_line("alice") == b"alice <alice@configdb>"
    assert gitrepo.author_line("  <>\n\x00 ") == b"unknown <unknown@configdb>"
    assert gitrepo.author_line("Jo\r\nDoe <jo@x>") == b"Jo Doe jo@x <Jo.Doe.jo@x@configdb>"


@given(st.text())
def test_author_line_is_always_a_well_formed_ident(identity):
    line = gitrepo.author_line(identity).decode("utf-8")
    assert re.match(r"^[^<>\n\x00]+ <[^<>\n\x00]+>$", line)


def test_a_writer_waits_while_another_holds_the_object_lock(repo):
    repo.commit(None, {"a.yaml": b"1"}, "alice", "create the repository")
    blob = Blob.from_string(b"contended")
    lock = os.path.join(repo.path, "objects", blob.id[:2].decode(), blob.id[2:].decode() + ".lock")
    os.makedirs(os.path.dirname(lock), exist_ok=True)
    open(lock, "wb").close()
    threading.Timer(0.2, os.remove, [lock]).start()
    _, written = repo.commit(None, {"b.yaml": b"contended"}, "bob", "waits")
    assert repo.read_blob(written["b.yaml"]) == b"contended"


def _write_and_advance(path, writer, lock, rounds=10):
    """One writer as the driver writes: the commit is built on the last one under a lock (the environment's
    row lock; the file ``last`` stands for its ``storage_head``), the branch is moved after the lock is let
    go (after the database commit), racing the other writers' moves."""
    repo, last = Repository(path), os.path.join(os.path.dirname(path), "last")
    for i in range(rounds):
        with lock:
            parent = open(last).read() if os.path.exists(last) else None
            files = {"shared.yaml": b"same for all", "w%d/%d.yaml" % (writer, i): b"%d" % i}
            sha, _ = repo.commit(parent or None, files, "w%d" % writer, "round %d" % i)
            with open(last, "w") as stream:
                stream.write(sha)
        repo.advance(sha)


@needs_git
@pytest.mark.parametrize("pool", ["threads", "processes"])
def test_racing_writers_never_move_the_branch_backwards(tmp_path, pool):
    path, writers, rounds = str(tmp_path / "env1"), 8, 10
    repo, observed, done = Repository(path), [], threading.Event()

    def watch():
        while not done.is_set():
            observed.append(repo.head())

    watcher = threading.Thread(target=watch)
    watcher.start()
    if pool == "threads":
        executor, lock = concurrent.futures.ThreadPoolExecutor(writers), threading.Lock()
    else:
        context = multiprocessing.get_context("spawn")
        manager = context.Manager()
        executor, lock = concurrent.futures.ProcessPoolExecutor(writers, mp_context=context), manager.Lock()
    try:
        with executor:
            list(executor.map(_write_and_advance, [path] * writers, range(writers), [lock] * writers))
    finally:
        done.set()
        watcher.join()
    chain = [entry["sha"] for entry in log(repo)][::-1]
    assert chain[-1] == open(tmp_path / "last").read(), "the branch ends at the last commit"
    assert len(chain) == writers * rounds and not os.path.exists(os.path.join(path, "refs", "replaced-heads"))
    depths = [chain.index(sha) for sha in observed if sha is not None]
    assert depths == sorted(depths), "the branch moved backwards"
    assert all(repo.read_blob(blob) for blob in files_at(repo, chain[-1]).values())
    assert len(files_at(repo, chain[-1])) == writers * rounds + 1
    git(path, "fsck", "--strict", "--full")


def test_set_aside_moves_the_repository_under_a_unique_name(tmp_path):
    root = str(tmp_path)
    assert gitrepo.set_aside(root, os.path.join(root, "env1")) is None
    aside = []
    for _ in range(2):
        repo = Repository(os.path.join(root, "env1"))
        sha, _ = repo.commit(None, {"a.yaml": b"1"}, "alice", "one")
        aside.append(gitrepo.set_aside(root, repo.path))
        assert not repo.exists()
    assert aside[0] != aside[1]
    assert all(os.path.dirname(p) == os.path.join(root, "deleted") and os.path.basename(p).startswith("env1-")
               for p in aside)
    assert files_at(Repository(aside[1]), sha) == {"a.yaml": Blob.from_string(b"1").id.decode()}
