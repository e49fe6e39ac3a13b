"""Fixtures shared by every test: a migrated database, the app, an environment factory.

The suite runs on a SQLite file by default and on PostgreSQL when
``NAILGUN_TEST_DB_URL`` is set. The schema is migrated once per session with the
real migrations (core and every extension); each test then starts from empty tables.
"""
import base64
import json
import contextlib
import logging
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import pytest
import sqlalchemy as sa
import webtest

from nailgun_host import db as host_db
from nailgun_host.auth import token_keys
from nailgun_host.db import migration
from nailgun_host.extensions import get_all_extensions, set_extensions
from nailgun_host.settings import settings
from tests.factories import EnvironmentManager

VERSION_TABLE_SUFFIX = "alembic_version"

# No settings file of the machine's: an installed package's /etc/fuel-nailgun-extensions/settings.yaml (read when
# NAILGUN_CONFIG is unset) would give every test and every server it starts that installation's database,
# authentication and log. Empty reads no file; a test that needs one names it.
os.environ["NAILGUN_CONFIG"] = ""

# One key repository for the whole run, servers started by tests included (they inherit the
# environment); created at its first use, like a first start's.
os.environ.setdefault("NAILGUN_KEY_REPOSITORY", os.path.join(tempfile.mkdtemp(prefix="nailgun-keys-"), "keys"))


def _reset_schema(url):
    engine = host_db.make_engine(url)
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            connection.execute(sa.text("DROP SCHEMA public CASCADE"))
            connection.execute(sa.text("CREATE SCHEMA public"))
        else:
            meta = sa.MetaData()
            meta.reflect(connection)
            connection.execute(sa.text("PRAGMA foreign_keys=OFF"))
            for table in reversed(meta.sorted_tables):
                connection.execute(sa.text('DROP TABLE "{0}"'.format(table.name)))
    engine.dispose()


@pytest.fixture(scope="session")
def db_url(tmp_path_factory):
    url = os.environ.get("NAILGUN_TEST_DB_URL")
    if not url:
        url = "sqlite:///" + str(tmp_path_factory.mktemp("db") / "nailgun.db")
    return url


@pytest.fixture(scope="session")
def packaged_rpm(tmp_path_factory):
    """The RPM, built once per run by the spec header's steps (tests/packaging/rpmbuild.py) with the spec's
    defaults: the RPM's tests and the packaged Hiera's share it (a build takes minutes)."""
    from pathlib import Path

    from tests.packaging.rpmbuild import build_by_the_header
    return build_by_the_header(tmp_path_factory.mktemp("rpm"), Path(sys.executable).parent)


@pytest.fixture(scope="session")
def migrated_db(db_url):
    """Every table, created by running the real migrations from empty."""
    set_extensions(None)
    _reset_schema(db_url)
    migration.syncdb(db_url)
    engine = host_db.configure(db_url)
    schema = sa.MetaData()
    schema.reflect(engine)
    # dependents first: the order in which rows can be deleted
    tables = [t.name for t in reversed(schema.sorted_tables) if not t.name.endswith(VERSION_TABLE_SUFFIX)]
    yield engine, tables
    host_db.db.remove()


def _empty_tables(engine, tables):
    """Every row deleted, the identities restarted. On PostgreSQL ``DELETE`` (``tables`` are in the
    foreign keys' order) and ``setval`` rather than ``TRUNCATE … RESTART IDENTITY``: a test leaves a few
    rows, and TRUNCATE makes new files for every table, index and sequence (48 ms against 2 ms a test)."""
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            # A live server's connection left inside a transaction would make the deletes wait for
            # ever: fail the test's set-up instead.
            connection.execute(sa.text("SET LOCAL lock_timeout = '30s'"))
            for table in tables:
                connection.execute(sa.text('DELETE FROM "{0}"'.format(table)))
            connection.execute(sa.text(
                "SELECT setval(c.oid, s.seqstart, false) FROM pg_class c JOIN pg_sequence s ON s.seqrelid = c.oid "
                "WHERE c.relnamespace = current_schema()::regnamespace"))
        else:
            connection.execute(sa.text("PRAGMA foreign_keys=OFF"))
            for table in tables:
                connection.execute(sa.text('DELETE FROM "{0}"'.format(table)))
            if connection.execute(sa.text(
                    "SELECT name FROM sqlite_master WHERE name='sqlite_sequence'")).first():
                connection.execute(sa.text("DELETE FROM sqlite_sequence"))
    if engine.dialect.name == "sqlite":
        # PRAGMA foreign_keys is a no-op inside the transaction above, so the pooled
        # connection would keep foreign keys (and ON DELETE CASCADE) off: reconnect.
        engine.dispose()


@pytest.fixture
def empty_db_url(db_url, tmp_path):
    """A brand-new, empty database of the suite's kind; its URL, with the password on PostgreSQL."""
    url = sa.make_url(db_url)
    if url.get_backend_name() == "sqlite":
        yield "sqlite:///" + str(tmp_path / "fresh.db")
        return
    name = "nailgun_empty_" + uuid.uuid4().hex[:8]
    admin = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(sa.text('CREATE DATABASE "{0}"'.format(name)))
    yield url.set(database=name).render_as_string(hide_password=False)
    _drop_database(admin, name)
    admin.dispose()


def _drop_database(admin, name, tries=20):
    """DROP DATABASE ... WITH (FORCE), again for a while when it meets a backend it may not end (an autovacuum
    worker that the new tables woke: it finishes soon)."""
    for attempt in range(tries):
        try:
            with admin.connect() as connection:
                connection.execute(sa.text('DROP DATABASE "{0}" WITH (FORCE)'.format(name)))
            return
        except sa.exc.ProgrammingError as exc:
            if "InsufficientPrivilege" not in type(exc.orig).__name__ or attempt == tries - 1:
                raise
            time.sleep(0.5)


@pytest.fixture(autouse=True)
def restored_logging():
    """The logging of the process as it was before the test: a test that configures it as a server does
    (``request_log.configure``) leaves no handler on a stream pytest has closed since."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    held = {name: logging.getLogger(name).level for name in logging.root.manager.loggerDict}
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
        handler.close()
    root.setLevel(level)
    for name, held_level in held.items():
        logging.getLogger(name).setLevel(held_level)


@pytest.fixture(autouse=True)
def clean_db(request, db_url):
    """Empty tables and default settings for every test that touches the database."""
    settings.reload(overrides={"DATABASE_URL": db_url})
    if "migrated_db" not in request.fixturenames and not any(
            name in request.fixturenames for name in ("app", "env", "session", "live_server", "gunicorn")):
        yield
        return
    engine, tables = request.getfixturevalue("migrated_db")
    host_db.db.remove()
    _empty_tables(engine, tables)
    for server in LiveServer.keeping_token_keys:
        server.forget_token_keys()
    yield
    host_db.db.remove()
    set_extensions(None)


@pytest.fixture
def session(migrated_db):
    """The shared session, for assertions straight on the database."""
    yield host_db.db
    host_db.db.remove()


#: the environ of a client on this host: AUTH method none serves no other (``nailgun_host.auth.middleware``)
LOOPBACK = {"REMOTE_ADDR": "127.0.0.1"}


@pytest.fixture
def app(migrated_db):
    from nailgun_host.app import build_wsgi

    return webtest.TestApp(build_wsgi(), extra_environ=LOOPBACK)


@pytest.fixture
def env(app):
    return EnvironmentManager(app)


class QueryCounter:
    """Counts the SQL statements the engine executes while active, and those of ``host_db.statement_reader`` (the
    read cache's fingerprints, a ConfigDB read's ``read_rows``), which runs them outside the engine's events."""

    def __init__(self, engine):
        self.engine = engine
        self.statements = []

    def _record(self, _conn, _cursor, statement, *_args):
        self.statements.append(statement)

    @property
    def count(self):
        return len(self.statements)

    @contextlib.contextmanager
    def counting(self):
        self.statements = []
        reader = host_db.statement_reader
        run = reader.run

        def recorded(statement, params):
            self.statements.append(str(statement.compile(dialect=host_db.get_engine().dialect)))
            return run(statement, params)

        sa.event.listen(self.engine, "before_cursor_execute", self._record)
        reader.run = recorded
        try:
            yield self
        finally:
            del reader.run
            sa.event.remove(self.engine, "before_cursor_execute", self._record)


@pytest.fixture
def query_counter(migrated_db):
    return QueryCounter(migrated_db[0])


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LiveServer:
    """A real ``nailgun-api`` process on a free loopback port, sharing the test database.

    ``migrate``: start it as an operator does, migrating (a no-op on the test schema) and
    creating the admin network; by default it starts with ``--no-migrate``. ``extra_args`` go to
    ``nailgun-api`` (with ``--cert-file`` the url is https); ``log``: a file for its output.
    """

    def __init__(self, db_url, env=None, migrate=False, extra_args=(), log=os.devnull):
        self.port = free_port()
        scheme = "https" if "--cert-file" in extra_args else "http"
        self.url = "{0}://127.0.0.1:{1}".format(scheme, self.port)
        self.log_path = log
        self.log = open(log, "w")
        environ = dict(os.environ, **(env or {}))
        self.process = subprocess.Popen(
            [sys.executable, "-c", "from nailgun_host.cmd.api import serve; serve()",
             "--db-url", db_url, "--port", str(self.port)] + ([] if migrate else ["--no-migrate"]) + list(extra_args),
            stdout=self.log, stderr=subprocess.STDOUT, env=environ)
        self._wait()

    def _wait(self):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("nailgun-api exited with {0}{1}".format(self.process.returncode, self._log_tail()))
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.2):
                return
            time.sleep(0.1)
        raise RuntimeError("nailgun-api did not start listening")

    def _log_tail(self):
        if self.log_path == os.devnull:
            return ""
        with open(self.log_path) as log:
            return ": " + log.read()[-3000:]

    #: the running servers in local mode: each keeps a copy of the token keys for up to a second
    keeping_token_keys = []

    def forget_token_keys(self):
        """Make this local-mode server read the token keys again now that the tables were emptied.

        Its copy (``nailgun_host.auth.token_keys``) is trusted for a second: a token it signed in that
        second under the deleted key would stop opening at its next reload. A token no known key opens
        makes it reload at once (after ``FORCED_REFRESH``), which makes the test's first key.
        """
        time.sleep(token_keys.FORCED_REFRESH)
        bogus = base64.urlsafe_b64encode(b"\x80" + bytes(56)).decode()
        request = urllib.request.Request(self.url + "/api/v1/clusters/", headers={"X-Auth-Token": bogus})
        with contextlib.suppress(urllib.error.HTTPError):
            urllib.request.urlopen(request, timeout=30, context=ssl._create_unverified_context())

    def stop(self):
        if self in self.keeping_token_keys:
            self.keeping_token_keys.remove(self)
        stop_process(self.process)
        self.log.close()


@pytest.fixture(scope="module")
def live_server(migrated_db, db_url):
    """One ``nailgun-api`` for a whole module: starting one costs about a second.

    Tests still start from empty tables: ``clean_db`` empties them while the server is idle, and
    between requests the server holds no transaction (each request commits or rolls back and
    gives its connection back), so neither SQLite's DELETEs nor PostgreSQL's TRUNCATE wait for
    it. Its settings come from the environment at start, and it keeps nothing else in memory
    from one request to the next. A test that needs other settings starts its own ``LiveServer``.
    """
    server = LiveServer(db_url)
    yield server
    server.stop()


@pytest.fixture
def gunicorn(migrated_db, db_url):
    """``gunicorn -w 2`` serving the app on a free loopback port, sharing the test database."""
    if shutil.which("gunicorn", path=os.path.dirname(sys.executable)) is None:
        pytest.fail("gunicorn is a test dependency: pip install -e '.[test]'")
    port = free_port()
    process = subprocess.Popen(
        [os.path.join(os.path.dirname(sys.executable), "gunicorn"), "-w", "2", "--no-control-socket",
         "--graceful-timeout", "5", "-b", "127.0.0.1:{0}".format(port),
         "nailgun_host.wsgi:application"],
        env=dict(os.environ, NAILGUN_DB_URL=db_url), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            break
        time.sleep(0.1)
    yield "http://127.0.0.1:{0}/api/v1/".format(port)
    stop_process(process)


def stop_process(process, grace=10):
    """Stop a server: SIGTERM, then SIGKILL if it is still draining requests after ``grace`` s."""
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _service_venv(service, needed):
    """The venv of a real Keystone or Barbican (``$NAILGUN_TEST_<SERVICE>_VENV``, built by run_tests.sh with
    tests/tools/make_service_venv.sh) holding ``needed``: the test skips without one, except in CI
    (``CI=true``), where it fails: CI must run them."""
    variable = "NAILGUN_TEST_{0}_VENV".format(service.upper())
    venv = os.environ.get(variable)
    if not venv or not os.path.isfile(os.path.join(venv, needed)):
        reason = "{0} does not name a {1} venv (tests/tools/make_service_venv.sh {1})".format(variable, service)
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return venv


@pytest.fixture(scope="session")
def keystone(tmp_path_factory, pytestconfig):
    """A real Keystone (``$NAILGUN_TEST_KEYSTONE_VENV``, built by run_tests.sh) with the test users.

    Without one the test skips, except in CI (``CI=true``), where it fails: CI must run them.
    Its bootstrapped state is kept in pytest's cache for the next runs.
    """
    from tests.keystone import Keystone

    venv = _service_venv("keystone", "bin/keystone-manage")
    start = time.monotonic()
    cache = getattr(pytestconfig, "cache", None)  # None with -p no:cacheprovider
    server = Keystone(venv, str(tmp_path_factory.mktemp("keystone")), cache and str(cache.mkdir("keystone")))
    SUMMARY_LINES.append("keystone: serving in {0:.1f}s ({1})".format(
        time.monotonic() - start, "saved state" if server.from_saved_state else "bootstrapped"))
    yield server
    server.close()


@pytest.fixture(scope="session")
def barbican(keystone, tmp_path_factory):
    """A real Barbican (``$NAILGUN_TEST_BARBICAN_VENV``, built by run_tests.sh) behind the test Keystone; skips
    without one, but in CI (``CI=true``), where it fails."""
    from tests.barbican import Barbican

    venv = _service_venv("barbican", "etc/barbican/barbican-api-paste.ini")
    start = time.monotonic()
    server = Barbican(venv, str(tmp_path_factory.mktemp("barbican")), keystone)
    SUMMARY_LINES.append("barbican: serving in {0:.1f}s".format(time.monotonic() - start))
    yield server
    server.close()


#: where ``each_key_manager`` keeps the keys: the git storage pass runs the secrets suites again for the driver,
#: which the key manager does not meet
KEY_MANAGERS = ["local"] if os.environ.get("NAILGUN_CONFIGDB_STORAGE") == "git" else ["local", "castellan"]


@pytest.fixture(params=KEY_MANAGERS)
def each_key_manager(request, monkeypatch, tmp_path, db_url):
    """The test once with the secrets' keys in the key repository, once in the test Barbican (issue 28): a
    settings file every reload in the test (and every server it starts) reads."""
    if request.param == "castellan":
        path = tmp_path / "castellan.yaml"
        path.write_text(json.dumps(request.getfixturevalue("barbican").settings()))
        monkeypatch.setenv("NAILGUN_CONFIG", str(path))
        settings.reload(overrides={"DATABASE_URL": db_url})
    return request.param


def over_the_settings_file(sections):
    """``sections`` over the settings file the test's processes read (``NAILGUN_CONFIG``, as ``each_key_manager``
    sets it), for a test writing a settings file of its own: a section of both is merged key by key."""
    given = os.environ.get("NAILGUN_CONFIG")
    merged = json.loads(open(given).read()) if given else {}
    for name, section in sections.items():
        merged[name] = dict(merged.get(name, {}), **section) if isinstance(section, dict) else section
    return merged


@pytest.fixture(scope="session")
def tls(tmp_path_factory):
    """A test CA, a server and a client certificate it signed, and a wrong CA (tests/tls.py)."""
    from tests.tls import TLS

    return TLS(str(tmp_path_factory.mktemp("tls")))


@pytest.fixture
def extensions():
    return get_all_extensions()


#: lines a test wants in the run's closing summary (the fuzz run's counts), shown without ``-s``
SUMMARY_LINES = []


def pytest_terminal_summary(terminalreporter):
    for line in SUMMARY_LINES:
        terminalreporter.write_line(line)
