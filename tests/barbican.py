"""A real Barbican for the tests: its PyPI package, its simple crypto plugin, behind the test Keystone.

Barbican comes from a venv of its own (tests/tools/make_service_venv.sh barbican), served by gunicorn on loopback with
its database (SQLite) and its master key (the simple crypto plugin's KEK) in a temporary directory. It checks
tokens with the test Keystone (keystonemiddleware, as the nailgun service user); the objects it stores belong to
the project of the user that stored them (our key manager user: nailgun, in project services).
"""
import base64
import contextlib
import http.server
import os
import shutil
import signal
import socket
import struct
import subprocess
import textwrap
import threading
import time

import requests

from tests.keystone import _free_port

APP_MODULE = """\
import sys
sys.argv = sys.argv[:1]
from paste import deploy
application = deploy.loadapp("config:{paste}")
"""


class Barbican:
    """One gunicorn serving Barbican's API; ``stopped()`` takes it down for a block, on the same port."""

    def __init__(self, venv, workdir, keystone):
        self.venv, self.workdir, self.keystone = venv, workdir, keystone
        self.port = _free_port()
        self.url = "http://127.0.0.1:{0}".format(self.port)
        self.log_path = os.path.join(workdir, "barbican.log")
        self.process = None
        # oslo.config finds Barbican's configuration under $HOME/.barbican (its app reads no command line); one
        # worker, one thread: Barbican on SQLite fails writes that meet (a 500, "Secret creation failure seen")
        os.makedirs(os.path.join(workdir, ".barbican"))
        with open(os.path.join(workdir, ".barbican", "barbican.conf"), "w") as conf:
            conf.write(textwrap.dedent("""\
                [DEFAULT]
                sql_connection = sqlite:///{d}/barbican.db
                db_auto_create = True
                host_href = {url}
                [keystone_authtoken]
                www_authenticate_uri = {auth_url}
                auth_url = {auth_url}
                auth_type = password
                username = nailgun
                password = {password}
                project_name = services
                user_domain_name = Default
                project_domain_name = Default
                [secretstore]
                enabled_secretstore_plugins = store_crypto
                [crypto]
                enabled_crypto_plugins = simple_crypto
                [simple_crypto_plugin]
                kek = {kek}
                """).format(d=workdir, url=self.url, auth_url=keystone.auth_url, password=keystone.users["nailgun"],
                            kek=base64.urlsafe_b64encode(os.urandom(32)).decode()))
        paste = os.path.join(workdir, "barbican-api-paste.ini")
        shutil.copy(os.path.join(venv, "etc", "barbican", "barbican-api-paste.ini"), paste)
        with open(os.path.join(workdir, "barbican_app.py"), "w") as app:
            app.write(APP_MODULE.format(paste=paste))
        self.start()

    def start(self, timeout=60):
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["HOME"] = self.workdir
        with open(self.log_path, "a") as log:
            self.process = subprocess.Popen(
                [os.path.join(self.venv, "bin", "gunicorn"), "--chdir", self.workdir, "-w", "1",
                 "--no-control-socket", "-b", "127.0.0.1:{0}".format(self.port), "barbican_app:application"],
                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("barbican exited: " + self._log_tail())
            with contextlib.suppress(requests.RequestException):
                if requests.get(self.url, timeout=2).status_code < 500:
                    return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("barbican did not answer in {0}s: {1}".format(timeout, self._log_tail()))

    def stop(self):
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.process = None

    @contextlib.contextmanager
    def stopped(self):
        """Barbican down for the block (nothing listens on its port); up again after it."""
        self.stop()
        try:
            yield
        finally:
            self.start()

    def _log_tail(self):
        with open(self.log_path) as log:
            return log.read()[-3000:]

    def secrets(self):
        """``{object id: payload bytes}`` of every object our key manager user's project holds."""
        headers = {"X-Auth-Token": self.keystone.token("nailgun", "services")}
        found, offset = {}, 0
        while True:
            page = requests.get(self.url + "/v1/secrets", headers=headers, timeout=30,
                                params={"limit": 100, "offset": offset}).json()
            for secret in page["secrets"]:
                payload = requests.get(secret["secret_ref"] + "/payload", timeout=30,
                                       headers=dict(headers, Accept="application/octet-stream"))
                found[secret["secret_ref"].rsplit("/", 1)[1]] = payload.content
            offset += len(page["secrets"])
            if not page["secrets"] or offset >= page["total"]:
                return found

    def settings(self, **castellan):
        """The ``SECRETS`` and ``AUTH.keystone`` settings of a server keeping its keys here."""
        options = {"barbican_endpoint": self.url, "keys_seconds": 60, "timeout": 5}
        options.update(castellan)
        return {"SECRETS": {"key_manager": "castellan", "castellan": options},
                "AUTH": {"keystone": {"auth_url": self.keystone.auth_url, "username": "nailgun",
                                      "password": self.keystone.users["nailgun"], "project_name": "services"}}}

    def close(self):
        self.stop()


class FaultyBarbican:
    """A proxy to ``barbican`` that answers Barbican's version document but, for its secrets, as ``mode`` says:
    ``pass`` (forwarded), ``reset`` (the connection closed unanswered), ``hang`` (never answered), ``garbage``
    (a 200 that is not JSON) or ``trickle`` (a 200 whose body comes a byte every half second): the failures
    castellan lets through as they come, and the slow answer no per-read timeout ends."""

    def __init__(self, barbican):
        self.barbican, self.mode = barbican, "pass"
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self._answer()

            def do_POST(self):
                self._answer()

            def do_DELETE(self):
                self._answer()

            def _answer(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.startswith("/v1/secrets") and proxy.mode != "pass":
                    if proxy.mode == "reset":
                        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                        self.close_connection = True
                        return
                    if proxy.mode == "hang":
                        time.sleep(30)
                        return
                    if proxy.mode == "trickle":
                        self.send_response(200)
                        self.send_header("Content-Type", "application/json")
                        self.send_header("Content-Length", "60")
                        self.end_headers()
                        with contextlib.suppress(OSError):
                            for _ in range(60):
                                self.wfile.write(b" ")
                                self.wfile.flush()
                                time.sleep(0.5)
                        return
                    self._send(200, {"Content-Type": "application/json"}, b"<html>not Barbican</html>")
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                answer = requests.request(self.command, proxy.barbican.url + self.path, headers=headers, data=body,
                                          timeout=30)
                self._send(answer.status_code, {"Content-Type": answer.headers.get("Content-Type", "")},
                           answer.content.replace(proxy.barbican.url.encode(), proxy.url.encode()))

            def _send(self, status, headers, content):
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(content)))
                self.end_headers()
                self.wfile.write(content)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:{0}".format(self.server.server_address[1])
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
