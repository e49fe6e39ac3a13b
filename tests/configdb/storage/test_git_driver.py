"""What only the git driver has to get right: its files, its branch, its repositories, whatever the
state of the disk; every test here selects the driver itself, so it runs in every pass."""
import os
import string
import subprocess
import sys

import pytest
import sqlalchemy as sa
import yaml
from hypothesis import given, strategies as st

from nailgun_host.db import db
from nailgun_host.settings import settings
from nailgun_ext_configdb.models import Environment
from nailgun_ext_configdb.objects import document, environment
from nailgun_ext_configdb.storage.drivers import git as git_driver
from tests.configdb.conftest import API
from tests.conftest import free_port


@pytest.fixture
def root(migrated_db, db_url, tmp_path):
    settings.reload(overrides={"DATABASE_URL": db_url, "CONFIGDB": {"storage": "git",
                                                                     "git_root": str(tmp_path / "git")}})
    return tmp_path / "git"


def git(root, *args, env=1):
    return subprocess.run(["git", "--git-dir", str(root / "{0}.git".format(env))] + list(args),
                          check=True, capture_output=True, text=True).stdout


def tree(root, env=1):
    return git(root, "ls-tree", "-r", "--name-only", "master", env=env).split()


@pytest.fixture
def written(cdb, root):
    """Environment 1 with data source ``astute`` (id 1) and its values at the environment level."""
    cdb.component("c", ["astute"])
    cdb.environment(["c"])
    cdb.put(1, 1, {"a": 1, "admin_password": "S3cr3tPw"})
    return root


NAME = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=6)
#: a level's name or value: one segment of the document's URL
LEVEL = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00/"), min_size=1, max_size=6)


@given(st.lists(st.tuples(NAME, st.lists(LEVEL, max_size=4).map(tuple), st.sampled_from(["values", "overrides"])),
                min_size=2, max_size=6, unique=True))
def test_documents_never_share_a_file_and_paths_are_plain(places):
    paths = [git_driver.file_path(name, "/".join(levels), kind) for name, levels, kind in places]
    assert len(set(paths)) == len(paths)
    for path in paths:
        assert all(part and not part.startswith(".") for part in path.split("/")), path
    # no document's file is a directory of another's
    assert not any(other.startswith(path + "/") for path in paths for other in paths)


def test_names_with_slashes_and_odd_levels_get_files_of_their_own(cdb, root):
    names = ["z", "nodes/n1/z", "q", "override/q", ".hidden", "a/../b"]
    cdb.component("odd", names)
    cdb.environment(["odd"], levels=["nodes"])
    for rid, name in enumerate(names, 1):
        cdb.put(1, rid, {"name": name})
    cdb.put(1, 1, {"at": "node n1"}, levels="nodes/n1/")
    cdb.put(1, 1, {"at": "node .git"}, levels="nodes/.git/")
    cdb.put(1, 3, {"override": "of q"}, kind="overrides")
    files = tree(root)
    assert len(files) == len(names) + 3
    for path in files:
        data = yaml.safe_load(git(root, "show", "master:" + path))
        assert data in [{"name": n} for n in names] + [{"at": "node n1"}, {"at": "node .git"}, {"override": "of q"}]
    assert yaml.safe_load(git(root, "show", "master:override/q.yaml")) == {"override": "of q"}
    assert yaml.safe_load(git(root, "show", "master:override%2Fq.yaml")) == {"name": "override/q"}


def test_a_rename_moves_the_files_and_a_delete_removes_them(cdb, written):
    cdb.put(1, 1, {"b": 1}, levels="nodes/7/")
    assert sorted(tree(written)) == ["astute.yaml", "nodes/7/astute.yaml"]
    cdb.app.put_json(API + "/resource_definitions/1", {"name": "facts"})
    assert sorted(tree(written)) == ["facts.yaml", "nodes/7/facts.yaml"]
    assert git(written, "log", "-1", "--format=%s").strip() == "rename astute to facts"
    assert cdb.get(1, "facts", levels="nodes/7/").json == {"b": 1}
    cdb.app.delete(API + "/resource_definitions/1", status=204)
    assert tree(written) == []


def test_a_secret_that_did_not_change_keeps_its_token(cdb, written):
    cdb.put(1, 1, {"a": 2, "admin_password": "S3cr3tPw"})
    changed = [line for line in git(written, "diff", "HEAD~1", "HEAD").splitlines()
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["-a: 1", "+a: 2"]
    cdb.put(1, 1, {"a": 2, "admin_password": "0therPw"})
    assert any("fernet" in line for line in git(written, "diff", "HEAD~1", "HEAD").splitlines())
    assert "S3cr3tPw" not in git(written, "log", "-p") and "0therPw" not in git(written, "log", "-p")


def test_a_lock_file_left_on_the_branch_fails_no_write(cdb, written):
    lock = written / "1.git" / "refs" / "heads" / "master.lock"
    lock.write_text("")
    cdb.put(1, 1, {"a": 2})  # committed: the branch waits for the next write
    assert cdb.get(1, 1).json == {"a": 2}
    lock.unlink()
    cdb.put(1, 1, {"a": 3})
    assert git(written, "log", "--format=%s").splitlines() == [
        "values (environment) of astute, version 3", "values (environment) of astute, version 2",
        "values (environment) of astute, version 1"]


def test_a_missing_repository_is_a_503_naming_it_and_nothing_is_made(cdb, written, session):
    (written / "1.git").rename(written / "elsewhere.git")
    answer = cdb.put(1, 1, {"a": 2}, status=503).json
    assert str(written / "1.git") in answer["message"]
    assert not (written / "1.git").exists()
    assert session.scalar(sa.select(Environment.revision).where(Environment.id == 1)) == 1


def test_a_rolled_back_first_write_leaves_the_repository_in_use(cdb, root):
    cdb.component("c", ["astute"])
    cdb.environment(["c"])
    env = db.get(Environment, 1)
    document.write(env, environment.resource(env, "astute"), "", "values", {"lost": True}, "me")
    db.rollback()
    assert (root / "1.git").is_dir()  # objects only, no branch
    cdb.put(1, 1, {"kept": True})
    assert not (root / "deleted").exists()
    assert git(root, "log", "--format=%s").splitlines() == ["values (environment) of astute, version 1"]


def test_a_database_behind_its_repository_wins_and_the_newer_line_is_kept(cdb, written, session):
    first = git(written, "rev-parse", "master").strip()
    cdb.put(1, 1, {"a": 2})
    newer = git(written, "rev-parse", "master").strip()
    session.execute(sa.update(Environment).where(Environment.id == 1).values(storage_head=first))
    session.commit()  # as if the database were restored from a backup taken after the first write
    cdb.put(1, 1, {"a": 3})
    assert git(written, "log", "--format=%s").splitlines() == [
        "values (environment) of astute, version 3", "values (environment) of astute, version 1"]
    assert git(written, "rev-parse", "refs/replaced-heads/" + newer).strip() == newer


def test_deleting_a_cluster_sets_its_environments_repository_aside(cdb, env, root):
    cluster = env.create(nodes_kwargs=[{"roles": ["compute"]}])
    cdb.component("c", ["astute"])
    cdb.environment(["c"], id=cluster["id"])
    cdb.put(cluster["id"], 1, {"a": 1})
    env.app.delete("/api/v1/clusters/{0}/".format(cluster["id"]), status=204)
    assert not (root / "{0}.git".format(cluster["id"])).exists()
    assert [p.name.split("-")[0] for p in (root / "deleted").iterdir()] == ["{0}.git".format(cluster["id"])]


def test_a_misspelt_driver_stops_nailgun_api_at_start(migrated_db, db_url):
    started = subprocess.run(
        [sys.executable, "-c", "from nailgun_host.cmd.api import serve; serve()", "--db-url", db_url,
         "--port", str(free_port()), "--no-migrate"], capture_output=True, text=True, timeout=60,
        env=dict(os.environ, NAILGUN_CONFIGDB_STORAGE="gti"))
    assert started.returncode != 0
    assert "CONFIGDB.storage names no installed storage driver: gti" in started.stderr
    assert set(string.whitespace) & set(started.stderr.strip().splitlines()[-1]) <= {" "}


def test_a_lost_repository_is_a_503_on_every_path_in_a_new_process(cdb, written, monkeypatch):
    """Nothing cached: the reads, a write and a rename find the blobs gone and say which repository to restore."""
    from nailgun_ext_configdb.storage import gitrepo

    cdb.put(1, 1, {"b": 1}, levels="nodes/7/")
    (written / "1.git").rename(written / "elsewhere.git")
    monkeypatch.setattr(gitrepo, "_blobs", gitrepo.LRUSizeCache(max_size=gitrepo.CACHED_BYTES, compute_size=len))
    for answer in (cdb.get(1, 1, status=503), cdb.get(1, 1, levels="nodes/7/", query="effective", status=503),
                   cdb.put(1, 1, {"a": 2}, status=503),
                   cdb.app.put_json(API + "/resource_definitions/1", {"name": "facts"}, status=503)):
        assert str(written / "1.git") in answer.json["message"]
    assert not (written / "1.git").exists()
