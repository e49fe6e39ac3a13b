"""A real Keystone for the tests: bootstrapped once per session, served by gunicorn on loopback.

Keystone comes from its PyPI package in a venv of its own (tests/tools/make_service_venv.sh keystone),
so its dependencies never meet the test venv's: everything here talks to it over HTTP or runs
its commands. SQLite and fernet keys live in a temporary directory.
"""
import contextlib
import glob
import grp
import hashlib
import json
import os
import pwd
import shutil
import signal
import socket
import sqlite3
import subprocess
import tempfile
import textwrap
import time

import requests

DOMAIN = {"name": "Default"}
#: name -> password of every user; the same in the local users file (tests/auth.py)
USERS = {
    "admin": "admin-pw",
    "member": "member-pw",
    "reader": "reader-pw",
    "puppet": "puppet-pw",
    "nailgun": "nailgun-pw",
    "hiera": "hiera-pw",
}
#: (user, project, roles) given after bootstrap (which makes admin an admin of project admin)
ASSIGNMENTS = [
    ("reader", "admin", ["reader"]),
    ("member", "admin", ["member"]),
    ("puppet", "admin", ["reader", "service"]),
    ("nailgun", "services", ["service", "admin"]),
    # the Puppet master's Hiera backends: read, and see secrets in clear (policy nailgun:read_secrets)
    ("hiera", "admin", ["reader", "hiera"]),
]
SHORT_TOKEN_SECONDS = 3
#: what a bootstrapped Keystone is made of, in its working directory
STATE = ("keystone.db", "fernet-keys", "credential-keys")

# Keystone's oslo.config parses sys.argv: it must not see gunicorn's.
APP_MODULE = """\
import sys
sys.argv = sys.argv[:1]
from keystone.server.wsgi import initialize_public_application
application = initialize_public_application()
"""


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _config(workdir, expiration=3600):
    return textwrap.dedent("""\
        [DEFAULT]
        [database]
        connection = sqlite:///{d}/keystone.db
        [token]
        provider = fernet
        expiration = {expiration}
        [fernet_tokens]
        key_repository = {d}/fernet-keys
        [fernet_receipts]
        key_repository = {d}/fernet-keys
        [credential]
        key_repository = {d}/credential-keys
        [identity]
        # bcrypt's cost: the lowest it takes, so that password checks cost milliseconds
        password_hash_rounds = 4
        """).format(d=workdir, expiration=expiration)


class KeystoneServer:
    """One gunicorn serving Keystone with one config file; stop() and start() keep the port."""

    def __init__(self, venv, workdir, conf, name):
        self.venv, self.workdir, self.conf, self.name = venv, workdir, conf, name
        self.port = _free_port()
        self.url = "http://127.0.0.1:{0}/v3".format(self.port)
        self.log_path = os.path.join(workdir, name + ".log")
        self.process = None

    def start(self, timeout=60):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["OS_KEYSTONE_CONFIG_FILES"] = self.conf
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                [os.path.join(self.venv, "bin", "gunicorn"), "--chdir", self.workdir, "-w", "2", "--preload",
                 "--no-control-socket",
                 "-b", "127.0.0.1:{0}".format(self.port), "keystone_app:application"],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("keystone ({0}) exited: {1}".format(self.name, self._log_tail()))
            with contextlib.suppress(requests.RequestException):
                if requests.get(self.url, timeout=2).status_code == 200:
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("keystone ({0}) did not answer in {1}s: {2}".format(self.name, timeout, self._log_tail()))

    def stop(self):
        if self.process is None:
            return
        # its master and workers at once: a graceful stop costs seconds, and SQLite survives this
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def _log_tail(self):
        with open(self.log_path) as log:
            return log.read()[-3000:]


class Keystone:
    """A bootstrapped Keystone with the test users and their roles.

    ``short_lived_token`` comes from a second server on the same database and keys whose
    tokens expire after SHORT_TOKEN_SECONDS: the main server validates them.
    """

    def __init__(self, venv, workdir, cache_dir=None):
        """``cache_dir``: where a bootstrapped state is kept between runs (bootstrapping costs ~15 s)."""
        self.venv, self.workdir = venv, workdir
        self.users = dict(USERS)
        with open(os.path.join(workdir, "keystone_app.py"), "w") as f:
            f.write(APP_MODULE)
        self.conf = self._write_config("keystone.conf", 3600)
        self.server = KeystoneServer(venv, workdir, self.conf, "keystone")
        self.auth_url = self.server.url
        self._short = None
        template = os.path.join(cache_dir, self._state_key()) if cache_dir else None
        self.from_saved_state = bool(template and os.path.isdir(template))
        if self.from_saved_state:
            for name in STATE:
                copy = shutil.copytree if os.path.isdir(os.path.join(template, name)) else shutil.copy2
                copy(os.path.join(template, name), os.path.join(workdir, name))
        else:
            self._bootstrap()
        self.server.start()
        try:
            if self.from_saved_state:
                self._move_endpoints_here()
            else:
                self._create_users()
                if template:
                    self._save_state(template)
        except BaseException:
            self.close()
            raise

    def _state_key(self):
        """Changes with this module, the users and roles it gives, and the Keystone installed.

        A saved state never gets new assignments: a user or role added here (the hiera role of
        issue 11) makes a new key, so the next run bootstraps a state that has it.
        """
        digest = hashlib.sha256(open(__file__, "rb").read())
        digest.update(json.dumps([USERS, ASSIGNMENTS], sort_keys=True).encode())
        digest.update(os.path.realpath(self.venv).encode())
        digest.update(" ".join(sorted(glob.glob(os.path.join(self.venv, "lib", "*", "site-packages",
                                                             "keystone-*.dist-info")))).encode())
        return "state-" + digest.hexdigest()[:16]

    def _save_state(self, template):
        """The database (SQLite's backup, the server being up) and the keys, renamed into place at once."""
        building = tempfile.mkdtemp(dir=os.path.dirname(template))
        for name in STATE[1:]:
            shutil.copytree(os.path.join(self.workdir, name), os.path.join(building, name))
        with contextlib.closing(sqlite3.connect(os.path.join(self.workdir, STATE[0]))) as source, \
                contextlib.closing(sqlite3.connect(os.path.join(building, STATE[0]))) as target:
            source.backup(target)
        try:
            os.rename(building, template)
        except OSError:  # another run saved it first
            shutil.rmtree(building)
        for stale in glob.glob(os.path.join(os.path.dirname(template), "state-*")):
            if stale != template:
                shutil.rmtree(stale, ignore_errors=True)

    def _move_endpoints_here(self):
        """A saved state's catalog names the port of the run that saved it."""
        admin = {"X-Auth-Token": self.token("admin")}
        for endpoint in requests.get(self.auth_url + "/endpoints", headers=admin, timeout=30).json()["endpoints"]:
            requests.patch(self.auth_url + "/endpoints/" + endpoint["id"], headers=admin, timeout=30,
                           json={"endpoint": {"url": self.auth_url}}).raise_for_status()

    def _write_config(self, name, expiration):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(_config(self.workdir, expiration))
        return path

    def _manage(self, *args):
        return subprocess.Popen(
            [os.path.join(self.venv, "bin", "keystone-manage"), "--config-file", self.conf] + list(args),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def _bootstrap(self):
        """db_sync then bootstrap, while the key repositories are set up beside them (~4 s per command)."""
        user, group = pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name
        owner = ["--keystone-user", user, "--keystone-group", group]
        steps = [[("fernet_setup", *owner)], [("credential_setup", *owner)],
                 [("db_sync",), ("bootstrap", "--bootstrap-password", self.users["admin"],
                                 "--bootstrap-admin-url", self.auth_url, "--bootstrap-public-url", self.auth_url,
                                 "--bootstrap-internal-url", self.auth_url, "--bootstrap-region-id", "RegionOne")]]
        running = [(chain, self._manage(*chain[0])) for chain in steps]
        while running:
            chain, process = running.pop(0)
            output = process.communicate()[0]
            if process.returncode:
                raise RuntimeError("keystone-manage {0} failed: {1}".format(chain[0][0], output[-3000:]))
            if chain[1:]:
                running.append((chain[1:], self._manage(*chain[1])))

    def _token(self, url, user, project):
        body = {"auth": {
            "identity": {"methods": ["password"],
                         "password": {"user": {"name": user, "domain": DOMAIN, "password": self.users[user]}}},
            "scope": {"project": {"name": project, "domain": DOMAIN}}}}
        answer = requests.post(url + "/auth/tokens", json=body, timeout=30)
        answer.raise_for_status()
        return answer.headers["X-Subject-Token"]

    def token(self, user, project="admin"):
        """A v3 token of ``user`` scoped to ``project``."""
        return self._token(self.auth_url, user, project)

    def _create_users(self):
        admin = requests.Session()
        admin.headers["X-Auth-Token"] = self.token("admin")

        def call(method, path, **kwargs):
            answer = admin.request(method, self.auth_url + path, timeout=30, **kwargs)
            answer.raise_for_status()
            return answer.json() if answer.content else None

        def ensure(kind, name, body):
            found = call("GET", "/{0}s".format(kind), params={"name": name})[kind + "s"]
            if found:
                return found[0]["id"]
            return call("POST", "/{0}s".format(kind), json={kind: dict(body, name=name)})[kind]["id"]

        projects = {"admin": ensure("project", "admin", {}),
                    "services": ensure("project", "services", {"domain_id": "default"})}
        roles = {name: ensure("role", name, {}) for name in sorted({r for _, _, rs in ASSIGNMENTS for r in rs})}
        for user, project, user_roles in ASSIGNMENTS:
            user_id = ensure("user", user, {"domain_id": "default", "password": self.users[user]})
            for role in user_roles:
                call("PUT", "/projects/{0}/users/{1}/roles/{2}".format(projects[project], user_id, roles[role]))

    def _admin_call(self, method, path, **kwargs):
        answer = requests.request(method, self.auth_url + path, timeout=30,
                                  headers={"X-Auth-Token": self.token("admin")}, **kwargs)
        answer.raise_for_status()
        return answer.json() if answer.content else None

    def add_user(self, name, password, role="member", project="admin"):
        """A user of the default domain with ``role`` in ``project``; its id."""
        user_id = self._admin_call("POST", "/users", json={"user": {
            "name": name, "domain_id": "default", "password": password}})["user"]["id"]
        project_id = self._admin_call("GET", "/projects", params={"name": project})["projects"][0]["id"]
        role_id = self._admin_call("GET", "/roles", params={"name": role})["roles"][0]["id"]
        self._admin_call("PUT", "/projects/{0}/users/{1}/roles/{2}".format(project_id, user_id, role_id))
        return user_id

    def set_password(self, user_id, password):
        """Give the user another password, as an administrator does."""
        self._admin_call("PATCH", "/users/{0}".format(user_id), json={"user": {"password": password}})

    def short_lived_token(self, user, project="admin"):
        """A token of ``user`` that expires SHORT_TOKEN_SECONDS after it is issued."""
        if self._short is None:
            conf = self._write_config("keystone-short.conf", SHORT_TOKEN_SECONDS)
            self._short = KeystoneServer(self.venv, self.workdir, conf, "keystone-short")
            self._short.start()
        return self._token(self._short.url, user, project)

    def revoke(self, token):
        """Revoke ``token`` (DELETE /v3/auth/tokens, as the admin)."""
        answer = requests.delete(self.auth_url + "/auth/tokens", timeout=30,
                                 headers={"X-Auth-Token": self.token("admin"), "X-Subject-Token": token})
        answer.raise_for_status()

    def validate(self, token):
        """Keystone's answer to validating ``token`` with the nailgun service user's token."""
        return requests.get(self.auth_url + "/auth/tokens", timeout=30,
                            headers={"X-Auth-Token": self.token("nailgun", "services"), "X-Subject-Token": token})

    @contextlib.contextmanager
    def stopped(self):
        """Keystone down for the block (nothing listens on its port); up again after it."""
        self.server.stop()
        try:
            yield
        finally:
            self.server.start()

    def settings(self, **extra):
        """The ``AUTH`` settings of a server in keystone mode; ``keystone={...}`` updates the Keystone part."""
        keystone = {
            "auth_url": self.auth_url,
            "username": "nailgun",
            "password": self.users["nailgun"],
            "project_name": "services",
            "user_domain_name": "Default",
            "project_domain_name": "Default",
            "basic_project": "admin",
            # the nailgun service user acts for others from its own project
            "projects": ["admin", "services"],
            # validated tokens are not cached: a revoked token is refused at once
            "token_cache_time": -1,
        }
        keystone.update(extra.pop("keystone", {}))
        return dict({"method": "keystone", "realm": "nailgun", "keystone": keystone}, **extra)

    def close(self):
        for server in (self._short, self.server):
            if server is not None:
                server.stop()
