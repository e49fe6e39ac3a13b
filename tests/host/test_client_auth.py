"""``fuel-ext`` logs in the way OpenStack clients do, and trusts only the CA it is told to.

Against real ``nailgun-api`` processes: in keystone mode with the real test Keystone (a
keystoneauth1 session from ``OS_AUTH_URL``, or HTTP Basic that the server checks with
Keystone), in local mode (Basic against the users file), and over HTTPS with a CA made here.
The command lines run through fuel-ext's ``main(argv)`` in this process, with only the
variables a user would set.
"""
import json
import time

import pytest

from nailgun_platform.client.base import APIClient, load_settings
from tests.auth import LOCAL_USERS
from tests.auth_servers import (  # noqa: F401 (fixtures)
    exposed_keystone_server, fuel_ext_runner, keystone_server, keystone_tls_server, local_server, local_tls_server)
from tests.keystone import SHORT_TOKEN_SECONDS

DEMO = ("--env", "1", "--resource", "resource1")
BASIC_WARNING = "WARNING: sending the password as HTTP Basic over plain HTTP to"


@pytest.fixture
def home(tmp_path):
    return tmp_path


def make_demo_env(run):
    """tuning-box's demo: a component, an environment and one version of a resource (writes: member role)."""
    run("config", "comp", "create", "--name", "comp1", "--resources", "resource1")
    run("config", "env", "create", "-i", "comp1", "-l", "nodes")
    run("config", "set", *DEMO, "--format", "json", stdin='{"a": 1}')


def authors(run):
    return [row["author"] for row in json.loads(run("config", "history", *DEMO, "-f", "json").stdout)]


def keystone_login(keystone, user, password=None, **extra):
    return dict({"OS_AUTH_URL": keystone.auth_url, "OS_USERNAME": user,
                 "OS_PASSWORD": password or keystone.users[user], "OS_PROJECT_NAME": "admin"}, **extra)


def basic_login(user, password=None, **extra):
    return dict({"OS_USERNAME": user, "OS_PASSWORD": password or LOCAL_USERS[user]}, **extra)


def refused(run, *args):
    result = run(*args)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result
    return result.stderr.strip()


# --- keystone mode ---------------------------------------------------------------------------------

def test_keystone_session_token_identifies_the_author(keystone_server, keystone, home):
    run = fuel_ext_runner(keystone_server, keystone_login(keystone, "member"), home)
    make_demo_env(run)
    assert authors(run) == ["member"]
    assert json.loads(run("config", "get", *DEMO).stdout) == {"a": 1}


def test_command_line_options_beat_the_environment(keystone_server, keystone, home):
    """fuel-ext takes fuel2's --os-* options (and OpenStack clients' --os-project-name...) over the variables."""
    run = fuel_ext_runner(keystone_server, {"OS_USERNAME": "reader", "OS_PASSWORD": "not-its-password"}, home)
    options = ("--os-auth-url", keystone.auth_url, "--os-username", "member",
               "--os-password", keystone.users["member"], "--os-project-name", "admin")
    make_demo_env(lambda *args, **kwargs: run(*options, *args, **kwargs))
    assert authors(lambda *args: run(*options, *args)) == ["member"]


def test_keystone_project_from_the_tenant_name(keystone_server, keystone, home):
    """OS_TENANT_NAME (fuel2's name for it) is the project when OS_PROJECT_NAME is not set."""
    login = keystone_login(keystone, "member", OS_TENANT_NAME="admin")
    del login["OS_PROJECT_NAME"]
    make_demo_env(fuel_ext_runner(keystone_server, login, home))
    elsewhere = fuel_ext_runner(keystone_server, dict(login, OS_TENANT_NAME="services"), home, ok=False)
    assert "refused the login of 'member'" in refused(elsewhere, "config", "comp", "list")  # no role there


def test_keystone_wrong_password_and_no_credentials(keystone_server, keystone, home):
    wrong = fuel_ext_runner(keystone_server, keystone_login(keystone, "member", "not-its-password"), home, ok=False)
    assert refused(wrong, "config", "comp", "list").startswith(
        "Keystone at {0} refused the login of 'member': ".format(keystone.auth_url))
    anonymous = fuel_ext_runner(keystone_server, {}, home, ok=False)
    assert refused(anonymous, "config", "comp", "list").endswith("(401)")


def test_keystone_reader_cannot_write(keystone_server, keystone, home):
    reader = fuel_ext_runner(keystone_server, keystone_login(keystone, "reader"), home, ok=False)
    message = refused(reader, "config", "comp", "create", "--name", "comp1", "--resources", "resource1")
    assert "nailgun:write" in message and message.endswith("(403)")
    assert reader("config", "comp", "list").returncode == 0


def test_basic_checked_by_the_server_with_keystone(keystone_server, keystone, home):
    run = fuel_ext_runner(keystone_server, basic_login("member", keystone.users["member"]), home)
    make_demo_env(run)
    assert authors(run) == ["member"]


def test_session_renews_an_expired_token(keystone_server, keystone):
    """A token that expires while the client lives is replaced by the keystoneauth1 session, unasked."""
    keystone.short_lived_token("reader")  # starts the Keystone whose tokens live SHORT_TOKEN_SECONDS
    settings = dict(load_settings({}), SERVER_PORT=str(keystone_server.port),
                    **keystone_login(keystone, "reader", OS_AUTH_URL=keystone._short.url))
    client = APIClient(settings=settings)
    assert client.get("config/components") == []
    first = client.transport.session.get_token()
    time.sleep(SHORT_TOKEN_SECONDS + 1)
    assert keystone.validate(first).status_code == 404  # expired
    assert client.get("config/components") == []
    assert client.transport.session.get_token() != first


# --- local mode -------------------------------------------------------------------------------------

def test_local_mode_basic(local_server, home):
    run = fuel_ext_runner(local_server, basic_login("member"), home)
    make_demo_env(run)
    assert authors(run) == ["member"]
    wrong = fuel_ext_runner(local_server, basic_login("member", "not-its-password"), home, ok=False)
    assert refused(wrong, "config", "comp", "list").endswith("(401)")


# --- TLS --------------------------------------------------------------------------------------------

def test_https_with_the_ca_file(local_tls_server, tls, home):
    run = fuel_ext_runner(local_tls_server, basic_login("admin", OS_CACERT=tls.ca_file), home)
    make_demo_env(run)
    assert authors(run) == ["admin"]


@pytest.mark.parametrize("trust", ["other CA", "system CAs"])
def test_https_refuses_a_certificate_its_ca_did_not_sign(local_tls_server, tls, home, trust):
    extra = {"OS_CACERT": tls.wrong_ca_file} if trust == "other CA" else {}
    run = fuel_ext_runner(local_tls_server, basic_login("admin", **extra), home, ok=False)
    trusted = "the CA file {0} (OS_CACERT)".format(tls.wrong_ca_file) if extra else "the default CAs"
    assert refused(run, "config", "comp", "list").startswith(
        "TLS: the certificate of the Nailgun API at 127.0.0.1:{0} is signed by a CA not in {1} ".format(
            local_tls_server.port, trusted))


def test_ca_file_beats_requests_ca_bundle(local_tls_server, tls, home):
    """requests lets REQUESTS_CA_BUNDLE override a session's ``verify``; OS_CACERT goes with each request, so it
    wins, and so does INSECURE."""
    login = basic_login("admin", REQUESTS_CA_BUNDLE=tls.wrong_ca_file)
    assert fuel_ext_runner(local_tls_server, login, home, ok=False)("config", "comp", "list").returncode == 1
    fuel_ext_runner(local_tls_server, dict(login, OS_CACERT=tls.ca_file), home)("config", "comp", "list")
    fuel_ext_runner(local_tls_server, dict(login, INSECURE="1"), home)("config", "comp", "list")


def test_keystone_session_over_https(keystone_tls_server, keystone, tls, home):
    """The session's token goes to the HTTPS server, checked with OS_CACERT (Keystone is loopback HTTP here)."""
    run = fuel_ext_runner(keystone_tls_server, keystone_login(
        keystone, "member", OS_CACERT=tls.ca_file, REQUESTS_CA_BUNDLE=tls.wrong_ca_file), home)
    make_demo_env(run)
    assert authors(run) == ["member"]


# --- the warning for Basic over plain HTTP ------------------------------------------------------------

def test_basic_over_plain_http_beyond_loopback_warns_once(exposed_keystone_server, keystone, home):
    server, address = exposed_keystone_server
    basic = basic_login("member", keystone.users["member"])
    run = fuel_ext_runner(server, dict(basic, SERVER_ADDRESS=address), home)
    make_demo_env(run)
    result = run("config", "get", *DEMO, "--level", "nodes=1")  # several requests, one warning
    assert result.stderr.count(BASIC_WARNING) == 1, result.stderr
    assert "{0} {1}:{2};".format(BASIC_WARNING, address, server.port) in result.stderr
    assert BASIC_WARNING not in fuel_ext_runner(server, basic, home)("config", "get", *DEMO).stderr  # loopback
    token = fuel_ext_runner(server, keystone_login(keystone, "member", SERVER_ADDRESS=address), home)
    assert BASIC_WARNING not in token("config", "get", *DEMO).stderr  # no password goes to the server
