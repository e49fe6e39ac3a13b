"""Where the secrets' keys are when the settings do not say: next to the SQLite file in use, one repository per
database; a database other than a SQLite file must name its own. ``nailgun-secrets`` says which database and
which repository it uses, and refuses a database that is not there or not migrated.

The commands run with no settings file and no ``NAILGUN_KEY_REPOSITORY``, most in this process (their ``main``).
"""
import os
import subprocess
import sys

import pytest

from nailgun_host import db as host_db
from nailgun_host.cmd import api, secrets, syncdb, users

from nailgun_host.app import build_wsgi
from nailgun_host.db import sealed
from nailgun_host.settings import settings
from nailgun_platform.secrets import keys


@pytest.fixture
def no_configured_keys(monkeypatch, migrated_db):
    """No settings file, no key repository named; the suite's engine bound again afterwards (the commands
    bind the shared session to their own database)."""
    monkeypatch.setenv("NAILGUN_CONFIG", "")
    monkeypatch.delenv("NAILGUN_KEY_REPOSITORY", raising=False)
    monkeypatch.delenv("NAILGUN_DB_URL", raising=False)
    engine = host_db.get_engine()
    yield
    host_db.db.remove()
    host_db.get_engine().dispose()
    host_db._engine = engine
    host_db.db.configure(bind=engine)


def secrets_command(url, *args):
    return secrets.secrets_keys(["--db-url", url, *args])


def starts(url):
    """Whether a server of ``url`` starts (the WSGI module's steps)."""
    settings.reload(overrides={"DATABASE_URL": url})
    host_db.configure(url)
    try:
        build_wsgi()
    except keys.KeyRepositoryError:
        return False
    return True


def test_two_sqlite_databases_of_one_directory_have_their_own_keys(no_configured_keys, tmp_path):
    one, two = ("sqlite:///{0}/{1}.db".format(tmp_path, name) for name in ("one", "two"))
    for url in (one, two):
        assert syncdb.syncdb(["--db-url", url]) == 0
        assert starts(url)
    assert {"one.db.fernet-keys", "two.db.fernet-keys"} <= set(os.listdir(tmp_path))
    for step in ("rotate", "reencrypt", "retire"):  # each its own process, as an operator runs them
        done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "nailgun-secrets"), "--db-url", one,
                               step], env=dict(os.environ), capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[:2] == ["database: " + one, "key repository: {0}/one.db.fernet-keys".format(tmp_path)]
    assert out[-1] == "retired key(s): 1"
    assert sorted(os.listdir(tmp_path / "one.db.fernet-keys")) == ["0", "2"]
    assert sorted(os.listdir(tmp_path / "two.db.fernet-keys")) == ["0", "1"]
    assert starts(two) and starts(one)


def test_the_repository_of_earlier_versions_is_named_in_the_refusal(no_configured_keys, tmp_path):
    url = "sqlite:///{0}/old.db".format(tmp_path)
    assert syncdb.syncdb(["--db-url", url]) == 0
    assert starts(url)
    os.rename(tmp_path / "old.db.fernet-keys", tmp_path / "fernet-keys")
    with pytest.raises(keys.KeyRepositoryError, match="{0}, the default of earlier versions, is there: if it is "
                                                      "this database's, move it to {1}".format(
                                                          tmp_path / "fernet-keys", tmp_path / "old.db.fernet-keys")):
        sealed.check_keys(host_db.get_engine())


@pytest.mark.parametrize("command", [api.serve, syncdb.syncdb, secrets.secrets_keys, users.users])
def test_a_postgresql_database_without_a_key_repository_is_refused_in_one_line(no_configured_keys, command, capsys):
    url = "postgresql+psycopg://nailgun:pw-not-shown@127.0.0.1:1/nailgun"
    args = ["--db-url", url] + (["status"] if command is secrets.secrets_keys else
                                ["list"] if command is users.users else [])
    with pytest.raises(SystemExit) as exited:
        command(args)
    err = capsys.readouterr().err
    assert exited.value.code == 1 and len(err.splitlines()) == 1, err
    assert "SECRETS.key_repository must name the directory of the secrets' keys when the database is not a " \
           "SQLite file" in err and "pw-not-shown" not in err


def test_nailgun_secrets_refuses_a_database_that_is_missing_or_not_migrated(no_configured_keys, tmp_path, capsys):
    missing = tmp_path / "missing.db"
    with pytest.raises(SystemExit):
        secrets_command("sqlite:///" + str(missing), "rotate")
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["database: sqlite:///" + str(missing),
                                         "key repository: {0}.fernet-keys".format(missing)]
    assert "no database at {0}".format(missing) in captured.err
    (tmp_path / "empty.db").write_bytes(b"")
    with pytest.raises(SystemExit):
        secrets_command("sqlite:///{0}/empty.db".format(tmp_path), "status")
    assert "is not migrated (cluster_upgrade, configdb, core not at the head): run nailgun-syncdb" in \
        capsys.readouterr().err
    made = [name for name in os.listdir(tmp_path) if name.startswith("missing") or name.endswith("fernet-keys")]
    assert made == []  # no database made, and no keys for nothing
