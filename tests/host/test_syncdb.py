"""``nailgun-syncdb`` as an operator relies on it: it names the database, one run at a time,
a database newer than the code refused in one line, and a report of every part's revision.

Real processes on a fresh database of the suite's kind (SQLite, or PostgreSQL with
NAILGUN_TEST_DB_URL).
"""
import fcntl
import os
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from nailgun_host.db import make_engine, migration
from nailgun_host.extensions import get_all_extensions

#: the console commands these tests run: (module of nailgun_host.cmd, function)
COMMANDS = {"serve": ("api", "serve"), "syncdb": ("syncdb", "syncdb"), "users": ("users", "users"),
            "secrets_keys": ("secrets", "secrets_keys")}


def _environ(tmp_path):
    environ = {k: v for k, v in os.environ.items() if k not in ("NAILGUN_DB_URL", "NAILGUN_CONFIG")}
    environ["HOME"] = str(tmp_path)
    return environ


def _command(script, url, *args):
    code = "import sys; from nailgun_host.cmd.{0} import {1}; sys.exit({1}())".format(*COMMANDS[script])
    return [sys.executable, "-c", code, "--db-url", url] + list(args)


def _syncdb(url, tmp_path, *args):
    return subprocess.run(_command("syncdb", url, *args), env=_environ(tmp_path), capture_output=True, text=True)


def _parts():
    """What the status names: the core and every extension with migrations, with their heads."""
    parts = {"core": migration._heads(migration.CORE_MIGRATIONS)}
    for extension in get_all_extensions():
        if extension.alembic_migrations_path():
            parts[extension.name] = migration._heads(extension.alembic_migrations_path())
    return parts


def test_syncdb_names_the_database_it_migrates_without_its_password(empty_db_url, tmp_path):
    result = _syncdb(empty_db_url, tmp_path)
    assert result.returncode == 0, result.stderr
    url = sa.make_url(empty_db_url)
    assert result.stdout.splitlines()[0] == "database: " + url.render_as_string(hide_password=True)
    if url.password:
        assert ":{0}@".format(url.password) not in result.stdout + result.stderr


def test_status_reports_each_part_and_whether_it_is_the_head(empty_db_url, tmp_path):
    parts = _parts()
    assert {"core", "cluster_upgrade", "configdb"} <= set(parts)
    if sa.make_url(empty_db_url).get_backend_name() == "sqlite":
        open(sa.make_url(empty_db_url).database, "w").close()  # an empty database (without a file: no database)
    empty = _syncdb(empty_db_url, tmp_path, "--status")
    assert empty.returncode == 1, empty.stderr
    assert empty.stdout.splitlines()[1:] == [
        "{0}: no revision (not the head {1}: run nailgun-syncdb)".format(name, ", ".join(heads))
        for name, heads in parts.items()]
    assert _syncdb(empty_db_url, tmp_path).returncode == 0
    migrated = _syncdb(empty_db_url, tmp_path, "--status")
    assert migrated.returncode == 0, migrated.stderr
    assert migrated.stdout.splitlines()[1:] == [
        "{0}: {1} (head)".format(name, ", ".join(heads)) for name, heads in parts.items()]


def test_status_without_a_sqlite_file_creates_nothing(tmp_path):
    """--status changes nothing: a SQLite file that does not exist is reported, neither it nor its directory made."""
    missing = tmp_path / "var" / "lib" / "nailgun.db"
    result = _syncdb("sqlite:///" + str(missing), tmp_path, "--status")
    assert result.returncode == 1, result.stderr
    assert (result.stdout, result.stderr) == ("", "nailgun-syncdb: error: no database at {0}\n".format(missing))
    assert not (tmp_path / "var").exists()


def test_syncdb_says_in_one_line_which_revisions_it_ran_and_nothing_when_there_is_nothing_to_do(empty_db_url,
                                                                                                 tmp_path):
    """stderr after an RPM upgrade: one line naming each part it moved, from -> to, or nothing at all (issue 26);
    alembic's own lines only with -v."""
    parts = _parts()
    first = _syncdb(empty_db_url, tmp_path)
    assert first.returncode == 0, first.stderr
    assert first.stderr == "migrated {0}\n".format("; ".join(
        "{0}: no revision -> {1}".format(name, ", ".join(heads)) for name, heads in parts.items()))
    again = _syncdb(empty_db_url, tmp_path)
    assert (again.returncode, again.stderr) == (0, "")
    assert again.stdout.splitlines()[1:] == ["{0}: {1} (head)".format(name, ", ".join(heads))
                                             for name, heads in parts.items()]


def test_syncdb_verbose_shows_what_alembic_does(tmp_path):
    url = "sqlite:///" + str(tmp_path / "verbose.db")
    result = _syncdb(url, tmp_path, "-v")
    assert result.returncode == 0, result.stderr
    assert "Running upgrade" in result.stderr and "Context impl" in result.stderr
    again = _syncdb(url, tmp_path, "--verbose")
    assert "Context impl" in again.stderr and "Running upgrade" not in again.stderr


@pytest.mark.parametrize("part", ["core", "configdb"])
def test_a_database_newer_than_the_code_is_refused_in_one_line(empty_db_url, tmp_path, part):
    assert _syncdb(empty_db_url, tmp_path).returncode == 0
    version_table = "alembic_version" if part == "core" else "{0}_alembic_version".format(part)
    engine = make_engine(empty_db_url)
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE {0} SET version_num = 'x999'".format(version_table)))
    engine.dispose()
    for script, args in [("syncdb", []), ("serve", ["--port", "1"]), ("serve", ["--no-migrate", "--port", "1"])]:
        result = subprocess.run(_command(script, empty_db_url, *args), env=_environ(tmp_path),
                                capture_output=True, text=True)
        assert result.returncode == 1, (script, args, result.stderr)
        errors = [line for line in result.stderr.splitlines() if "error" in line]
        assert errors == [
            "nailgun-{0}: error: cannot use the database {1}: the database is newer than this code: {2} is at "
            "x999, which fuel-nailgun-extensions 1.0.0 does not know; install the version that migrated it (or "
            "restore the backup taken before)".format(
                "syncdb" if script == "syncdb" else "api",
                sa.make_url(empty_db_url).render_as_string(hide_password=True), part)], result.stderr
        assert "Traceback" not in result.stderr
    status = _syncdb(empty_db_url, tmp_path, "--status")
    assert status.returncode == 1
    assert "{0}: x999 (unknown to this code: the database is newer)".format(part) in status.stdout.splitlines()
    engine = make_engine(empty_db_url)
    with engine.connect() as connection:  # nothing was migrated over it
        assert connection.execute(sa.text("SELECT version_num FROM " + version_table)).scalar() == "x999"
    engine.dispose()


def test_the_health_route_names_the_newer_parts(empty_db_url):
    migration.syncdb(empty_db_url)
    engine = make_engine(empty_db_url)
    with engine.begin() as connection:
        connection.execute(sa.text("UPDATE configdb_alembic_version SET version_num = 'x999'"))
    try:
        fault, state = migration.check_database(engine)
    finally:
        engine.dispose()
    assert state["configdb"]["unknown"] == ["x999"] and state["core"]["unknown"] == []
    assert (fault.status, fault.message) == (503, migration.NEWER_MESSAGE)
    assert fault.errors == ["configdb is at x999"]


class _HeldLock:
    """The migration lock, held by this test the way a running nailgun-syncdb holds it."""

    def __init__(self, url):
        self.url = sa.make_url(url)

    def __enter__(self):
        if self.url.get_backend_name() == "postgresql":
            self.engine = make_engine(self.url)
            self.connection = self.engine.connect()
            self.connection.execute(sa.text("SELECT pg_advisory_lock(:key)"), {"key": migration.LOCK_KEY})
            self.connection.commit()
        else:
            self.file = open(self.url.database + ".lock", "a")
            fcntl.flock(self.file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc_info):
        if self.url.get_backend_name() == "postgresql":
            self.connection.close()
            self.engine.dispose()
        else:
            self.file.close()


def test_two_syncdbs_at_once_wait_for_each_other(empty_db_url, tmp_path):
    """Both wait while the lock is held; released, they run one after the other and both succeed
    on an empty database (at the same time, one would fail creating the tables the other creates)."""
    logs = [tmp_path / "syncdb-{0}.log".format(n) for n in (1, 2)]
    with _HeldLock(empty_db_url):
        processes = []
        for log in logs:
            with open(log, "w") as stream:
                processes.append(subprocess.Popen(_command("syncdb", empty_db_url), env=_environ(tmp_path),
                                                  stdout=stream, stderr=subprocess.STDOUT, text=True))
        deadline = time.monotonic() + 60
        while not all("Waiting for another nailgun-syncdb" in log.read_text() for log in logs):
            assert time.monotonic() < deadline, [log.read_text() for log in logs]
            assert all(p.poll() is None for p in processes), [log.read_text() for log in logs]
            time.sleep(0.1)
        assert not any("migrated core:" in log.read_text() for log in logs)
    for process, log in zip(processes, logs):
        assert process.wait(120) == 0, log.read_text()
    outputs = [log.read_text() for log in logs]
    # exactly one of them migrated; the other found the database at head
    assert sorted("migrated core:" in output for output in outputs) == [False, True], outputs
    assert migration.behind(migration.read_status(empty_db_url)) == []
