"""AUTH method ``none`` serves clients on this host only, under whatever server runs the application.

The guard lives in the application (``nailgun_host.auth.middleware``), not in a server's options:
the WSGI module under waitress, gunicorn or uwsgi refuses a client off loopback as ``nailgun-api``
does. A client off loopback is simulated in process by its ``REMOTE_ADDR``; no traffic leaves
loopback.
"""
import copy
import ipaddress
import json
import os
import re
import socket
import subprocess
import sys

import pytest
import webtest
import yaml
from hypothesis import given, settings as settings_profile, strategies as st

from nailgun_host.app import build_wsgi
from nailgun_host.auth import middleware
from nailgun_host.settings import DEFAULTS, settings
from tests.host.test_production import recipe_process

LOOPBACK_ADDRESSES = ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1"]
#: "" and "localhost": what some servers say of a Unix-socket client; a name proves nothing
OTHER_ADDRESSES = ["10.0.0.5", "192.168.1.7", "0.0.0.0", "::ffff:10.0.0.5", "fe80::1", "2001:db8::1", "::", "",
                   "localhost", "not an address"]
WARNING = re.compile(r" WARNING nailgun_host\.auth\.middleware \[-\] AUTH\.method is none")


@pytest.fixture
def none_app(migrated_db):
    """The whole application in method none, as ``nailgun_host.wsgi`` builds it; its requests name no client."""
    return webtest.TestApp(build_wsgi())


@pytest.fixture
def restored_settings():
    saved = {key: value for key, value in settings.items()}
    yield settings
    settings.clear()
    settings.update(saved)


def client(address):
    return {} if address is None else {"REMOTE_ADDR": address}


@pytest.mark.parametrize("address", OTHER_ADDRESSES + [None])
def test_a_client_off_loopback_gets_a_json_401_that_says_how_to_configure_authentication(none_app, address):
    for method, path in (("GET", "/api/v1/clusters/"), ("POST", "/api/v1/releases/"), ("GET", "/"),
                         ("DELETE", "/api/v1/clusters/1/"), ("POST", "/keystone/v2.0/tokens"),
                         ("GET", "/metrics"), ("GET", "/api/v1/config/environments")):
        refused = none_app.request(path, method=method, body=b"{}", environ=client(address),
                                   expect_errors=True)
        assert refused.status_int == 401 and refused.content_type == "application/json", (method, path)
        assert refused.json == {"message": middleware.NOT_LOOPBACK, "errors": []}
    assert "AUTH.method local" in middleware.NOT_LOOPBACK and "docs/operator/auth-and-tls.md" in middleware.NOT_LOOPBACK
    assert none_app.get("/api/v1/releases/", extra_environ=client("127.0.0.1")).json == []  # nothing was written


@pytest.mark.parametrize("address", OTHER_ADDRESSES)
def test_the_public_routes_stay_public_off_loopback(none_app, address):
    assert none_app.get("/api/v1/version", extra_environ=client(address)).json["auth_required"] is False
    assert none_app.get("/api/v1/health", extra_environ=client(address)).json["status"] == "ok"


@pytest.mark.parametrize("address", LOOPBACK_ADDRESSES)
def test_a_loopback_client_is_served(none_app, address):
    created = none_app.post_json("/api/v1/releases/", {"name": "r", "version": "v", "operating_system": "Ubuntu"},
                                 extra_environ=client(address), status=201).json
    assert none_app.get("/api/v1/releases/", extra_environ=client(address)).json == [created]


def test_allow_insecure_no_auth_serves_every_client(migrated_db, restored_settings):
    restored_settings.reload(overrides={"DATABASE_URL": settings.database_url,
                                        "AUTH": {"allow_insecure_no_auth": True}})
    app = webtest.TestApp(build_wsgi())
    for address in OTHER_ADDRESSES + [None]:
        assert app.get("/api/v1/clusters/", extra_environ=client(address)).json == []


@pytest.mark.parametrize("value", ["yes", 1, None, "true"])
def test_allow_insecure_no_auth_is_true_or_false(value, restored_settings):
    with pytest.raises(ValueError, match="AUTH.allow_insecure_no_auth must be true or false"):
        restored_settings.reload(overrides={"AUTH": {"allow_insecure_no_auth": value}})


def _served(address):
    """Whether the middleware in method none passes a request of ``address`` on to the application."""
    answers = []
    guarded = middleware.build(lambda environ, start: answers.append(environ) or [],
                               dict(copy.deepcopy(DEFAULTS["AUTH"]), method="none"))
    guarded({"REQUEST_METHOD": "GET", "PATH_INFO": "/api/v1/clusters/", "REMOTE_ADDR": address},
            lambda status, headers: answers.append(status))
    assert len(answers) == 1
    return answers[0] != "401 Unauthorized"


@settings_profile(max_examples=300, deadline=None)
@given(number=st.integers(0, 2 ** 32 - 1))
def test_an_ipv4_client_is_served_exactly_when_it_is_in_127_0_0_0_8(number):
    address = ipaddress.IPv4Address(number)
    expected = address in ipaddress.ip_network("127.0.0.0/8")
    assert _served(str(address)) is expected
    assert _served("::ffff:" + str(address)) is expected  # a dual-stack socket's IPv4 client


@settings_profile(max_examples=300, deadline=None)
@given(number=st.integers(0, 2 ** 128 - 1))
def test_an_ipv6_client_is_served_exactly_when_it_is_1(number):
    address = ipaddress.IPv6Address(number)
    if address.ipv4_mapped is None:
        assert _served(str(address)) is (number == 1)


# -- the WSGI module, as a server imports it ------------------------------------------------------

def _import_wsgi(db_url, tmp_path, content):
    config = tmp_path / "settings.yaml"
    config.write_text(content if isinstance(content, str) else yaml.safe_dump(content))
    environ = dict(os.environ, NAILGUN_DB_URL=db_url, NAILGUN_CONFIG=str(config))
    return subprocess.run([sys.executable, "-c", "import nailgun_host.wsgi"], env=environ, capture_output=True,
                          text=True, timeout=120)


def test_the_wsgi_module_warns_once_in_method_none(migrated_db, db_url, tmp_path):
    imported = _import_wsgi(db_url, tmp_path, {"LOG": {"level": "INFO"}})
    assert imported.returncode == 0, imported.stderr
    warnings = [line for line in imported.stderr.splitlines() if WARNING.search(line)]
    assert len(warnings) == 1, imported.stderr
    assert "clients off loopback are refused (401)" in warnings[0]

    imported = _import_wsgi(db_url, tmp_path, {"AUTH": {"allow_insecure_no_auth": True}})
    warnings = [line for line in imported.stderr.splitlines() if WARNING.search(line)]
    assert len(warnings) == 1 and "every client that reaches this server" in warnings[0], imported.stderr


def test_the_wsgi_module_is_silent_with_authentication(migrated_db, db_url, tmp_path):
    from tests.auth import write_users_file

    users_file = write_users_file(str(tmp_path / "users.yaml"), {"admin": ("pw", ["admin"])})
    imported = _import_wsgi(db_url, tmp_path, {"AUTH": {"method": "local", "users_file": users_file}})
    assert imported.returncode == 0, imported.stderr
    assert "AUTH.method" not in imported.stderr and " WARNING " not in imported.stderr, imported.stderr


# -- under a real server --------------------------------------------------------------------------

def test_waitress_serves_its_loopback_clients_over_ipv4_and_ipv6(migrated_db, db_url):
    """The recipe's waitress in method none, also listening on ``[::1]``: clients from 127.0.0.1, from another
    address of 127.0.0.0/8 and from ::1 are served (REMOTE_ADDR as waitress gives it)."""
    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))
        v6_port = probe.getsockname()[1]
    with recipe_process(db_url, "--listen=[::1]:{0}".format(v6_port)) as (port, _process):
        for source, target in ((None, ("127.0.0.1", port)), (("127.0.0.2", 0), ("127.0.0.1", port)),
                               (None, ("::1", v6_port))):
            with socket.create_connection(target, timeout=20, source_address=source) as sock:
                sock.sendall(b"GET /api/v1/clusters/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                received = b""
                while chunk := sock.recv(65536):
                    received += chunk
            head, _, body = received.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ") and json.loads(body) == [], (source, target, received)


def test_the_allow_insecure_no_auth_flag_is_the_setting(restored_settings, tmp_path):
    """``nailgun-api --allow-insecure-no-auth`` (and nailgun-feed's) sets AUTH.allow_insecure_no_auth, which a
    settings file may set as well: one decision, in the application and at the server's start."""
    import argparse

    from nailgun_host.cmd import startup


    listening_everywhere = argparse.Namespace(host="0.0.0.0", cert_file=None, key_file=None)
    startup.load_settings(argparse.Namespace(config=None, db_url=None, allow_insecure_no_auth=False))
    assert restored_settings["AUTH"]["allow_insecure_no_auth"] is False
    with pytest.raises(startup.StartupError, match="--allow-insecure-no-auth"):
        startup.check_exposure(listening_everywhere)
    startup.load_settings(argparse.Namespace(config=None, db_url=None, allow_insecure_no_auth=True))
    assert restored_settings["AUTH"]["allow_insecure_no_auth"] is True
    startup.check_exposure(listening_everywhere)
    config = tmp_path / "settings.yaml"
    config.write_text("AUTH: {allow_insecure_no_auth: true}\n")
    startup.load_settings(argparse.Namespace(config=str(config), db_url=None, allow_insecure_no_auth=False))
    assert restored_settings["AUTH"]["allow_insecure_no_auth"] is True
    startup.check_exposure(listening_everywhere)
