"""The git storage driver as an operator meets it: a real ``nailgun-api`` on ``CONFIGDB.storage: git``,
the spec's upload and override, a configuration session, then ``git log`` and ``git show`` in the
environment's repository (the real git reads what dulwich wrote)."""
import json
import subprocess

import pytest
import yaml

from tests.auth import LOCAL_USERS, auth_server, local_settings
from tests.commands import IN_PROCESS
from tests.configdb_clients.conftest import HIERA_TREE, Runner, tree_sources


@pytest.fixture
def git_server(migrated_db, db_url, tmp_path, monkeypatch):
    """A local-auth ``nailgun-api`` on the git driver (the variables reach it as they would from systemd)."""
    root = tmp_path / "git"
    monkeypatch.setenv("NAILGUN_CONFIGDB_STORAGE", "git")
    monkeypatch.setenv("NAILGUN_CONFIGDB_GIT_ROOT", str(root))
    server = auth_server(db_url, local_settings(), directory=str(tmp_path))
    yield server, root
    server.stop()


def git(root, environment_id, *args):
    return subprocess.run(["git", "--git-dir", str(root / "{0}.git".format(environment_id))] + list(args),
                          check=True, capture_output=True, text=True).stdout


def as_user(server, tmp_path, user):
    home = tmp_path / "home-{0}".format(user)
    home.mkdir()
    return Runner(IN_PROCESS, server, home, {"OS_USERNAME": user, "OS_PASSWORD": LOCAL_USERS[user]})


def test_upload_override_and_a_session_are_commits_by_their_authors(git_server, env, tmp_path):
    server, root = git_server
    env.create(nodes_kwargs=[{"roles": ["controller"]}, {"roles": ["compute"]}])
    admin, member = as_user(server, tmp_path, "admin"), as_user(server, tmp_path, "member")
    admin("config", "upload", "--env", "1", "--node", "node-1.domain.tld", "--dir", HIERA_TREE)
    sources = tree_sources()
    node = ("--env", "1", "--level", "node=node-1.domain.tld", "--resource", "astute")
    assert json.loads(admin("config", "get", *node).stdout) == sources["astute"]
    member("config", "override", *node, "--key", "deployment_id", "--value", "2")
    assert json.loads(admin("config", "get", *node, "--key", "deployment_id").stdout) == {"deployment_id": 2}
    # a session's deploy: one more commit per document it writes, by the deployer
    session = json.loads(admin("config", "session", "open", "--env", "1", "-f", "json").stdout)["id"]
    admin("config", "set", *node, "--key", "staged", "--value", "true", "--session", session)
    assert "staged" not in json.loads(admin("config", "get", *node).stdout)
    admin("config", "session", "deploy", session, "--env", "1")
    assert json.loads(admin("config", "get", *node, "--key", "staged").stdout) == {"staged": True}

    log = [line.split("\x00") for line in git(root, 1, "log", "--format=%an%x00%s").splitlines()]
    uploaded = len(sources)
    assert len(log) == uploaded + 2  # one commit per stored version
    assert log[0] == ["admin", "values nodes/1 of astute, version 2"]
    assert log[1] == ["member", "overrides nodes/1 of astute, version 1"]
    assert {author for author, _ in log[2:]} == {"admin"}
    assert sorted(message.split(" of ")[1].split(",")[0] for _, message in log[2:]) == sorted(sources)
    # laid out like /etc/hiera, and what git holds is what the API serves
    assert yaml.safe_load(git(root, 1, "show", "master:override/nodes/1/astute.yaml")) == {"deployment_id": 2}
    text = git(root, 1, "show", "master:nodes/1/astute.yaml")
    stored = yaml.safe_load(text)
    assert set(stored) == set(sources["astute"]) | {"staged"} and stored["staged"] is True
    assert stored["mysql"]["root_password"]["$fernet"]  # secrets are sealed in git as in the database
    assert sources["astute"]["mysql"]["root_password"] not in text
    assert git(root, 1, "diff", "--stat", "HEAD~1", "HEAD").strip().startswith("nodes/1/astute.yaml")
    subprocess.run(["git", "--git-dir", str(root / "1.git"), "fsck", "--strict"], check=True, capture_output=True)


def test_a_deleted_environment_keeps_its_history_aside(git_server, tmp_path):
    server, root = git_server
    admin = as_user(server, tmp_path, "admin")
    comp = json.loads(admin("config", "comp", "create", "--name", "c", "--resources", "nova", "-f", "json").stdout)
    admin("config", "env", "create", "-i", str(comp["id"]), "-l", "nodes", "-f", "json")
    admin("config", "set", "--env", "1", "--resource", "nova", "--format", "json", stdin='{"workers": 2}')
    assert (root / "1.git").is_dir()
    admin("config", "env", "delete", "1")
    assert not (root / "1.git").exists()
    [kept] = (root / "deleted").iterdir()
    assert kept.name.startswith("1.git-")
    assert "nova" in subprocess.run(["git", "--git-dir", str(kept), "log", "--format=%s"], check=True,
                                    capture_output=True, text=True).stdout
