"""``nailgun-api`` processes in keystone or local mode, over HTTP or HTTPS, and clients' environments for them.

The client tests (fuel-ext, fuel2) start real servers with an ``AUTH`` section in a settings file
(``NAILGUN_CONFIG``), as an operator does, and run command lines with only the variables a user
would set: nothing of the test process's own ``OS_*``, fuel2 settings or CA bundle leaks in.
The fixtures are imported by the test modules that use them.
"""
import os

import pytest
import yaml

from tests.auth import LOCAL_USERS, auth_server, local_settings
from tests.commands import IN_PROCESS, run_command
from tests.conftest import LiveServer

#: environment variables a client reads; a test names the ones it wants
CLIENT_VARIABLES = ("SERVER_ADDRESS", "SERVER_PORT", "SERVER_PROTOCOL", "FUELCLIENT_CUSTOM_SETTINGS",
                    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "INSECURE", "HTTP_TIMEOUT")


def keystone_settings(keystone):
    """Keystone mode, with keystonemiddleware's cache of validated tokens on (as in production): the
    client tests revoke nothing, and validating every request again would cost seconds per test."""
    return keystone.settings(keystone={"token_cache_time": 300})


def non_loopback_address():
    """An IPv4 address of this machine that is not a loopback one, or None."""
    import ipaddress
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))  # no packet is sent: only the route is looked up
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if ipaddress.ip_address(address).is_loopback else address


# --- fixtures (imported by the test modules) ---------------------------------------------------------

def _serve(request, tmp_path_factory, auth, tls=None):
    server = auth_server(request.getfixturevalue("db_url"), auth, tls=tls,
                         directory=str(tmp_path_factory.mktemp("server")))
    request.addfinalizer(server.stop)
    return server


@pytest.fixture(scope="module")
def keystone_server(request, migrated_db, keystone, tmp_path_factory):
    return _serve(request, tmp_path_factory, keystone_settings(keystone))


@pytest.fixture(scope="module")
def local_server(request, migrated_db, tmp_path_factory):
    return _serve(request, tmp_path_factory, local_settings())


@pytest.fixture(scope="module")
def local_tls_server(request, migrated_db, tls, tmp_path_factory):
    return _serve(request, tmp_path_factory, local_settings(), tls=tls)


@pytest.fixture(scope="module")
def keystone_tls_server(request, migrated_db, keystone, tls, tmp_path_factory):
    return _serve(request, tmp_path_factory, keystone_settings(keystone), tls=tls)


@pytest.fixture(scope="module")
def exposed_keystone_server(request, migrated_db, db_url, keystone, tmp_path_factory):
    """In keystone mode, listening on every address; with this machine's non-loopback address."""
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    config = tmp_path_factory.mktemp("server") / "nailgun.yaml"
    config.write_text(yaml.safe_dump({"AUTH": keystone_settings(keystone)}))
    server = LiveServer(db_url, env={"NAILGUN_CONFIG": str(config)}, extra_args=["--host", "0.0.0.0"])
    request.addfinalizer(server.stop)
    return server, address


# --- clients ----------------------------------------------------------------------------------------

def client_environ(server, extra, home):
    """What a user's shell would have: the server's address (from ``server.url``) and ``extra``."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("OS_") and k not in CLIENT_VARIABLES}
    scheme, _, rest = server.url.partition("://")
    environ.update(SERVER_PROTOCOL=scheme, SERVER_ADDRESS=rest.split(":")[0], SERVER_PORT=str(server.port),
                   XDG_CONFIG_HOME=str(home), HOME=str(home))
    environ.update(extra)
    return environ


def command_runner(command, server, extra, home, ok=True):
    """A function running ``command``'s command lines (fuel-ext, fuel2) against ``server`` with ``extra`` set."""
    environ = client_environ(server, extra, home)

    def run(*args, stdin=None):
        result = run_command(command, args, environ, stdin=stdin)
        if ok:
            assert result.returncode == 0, (args, result.stdout, result.stderr)
        return result
    return run


def fuel_ext_runner(server, extra, home, ok=True):
    return command_runner(IN_PROCESS, server, extra, home, ok)


# --- one server and login per authentication mode, for the parametrized end-to-end tests --------------

#: the server fixture of each AUTH method
SERVER_FIXTURES = {"none": "live_server", "keystone": "keystone_server", "local": "local_server"}


def server_and_login(request, mode, client, user="admin"):
    """The server in ``mode`` and the variables with which ``client`` logs in to it as ``user``.

    ``client`` ``"fuel2"`` logs in as fuelclient does (``OS_USERNAME``/``OS_PASSWORD``: fuelclient's
    own login at ``/keystone/v2.0``); fuel-ext uses a keystoneauth1 session (``OS_AUTH_URL``) in
    keystone mode and HTTP Basic in local mode.
    """
    server = request.getfixturevalue(SERVER_FIXTURES[mode])
    if mode == "none":
        return server, {}
    if mode == "local":
        return server, {"OS_USERNAME": user, "OS_PASSWORD": LOCAL_USERS[user]}
    keystone = request.getfixturevalue("keystone")
    login = {"OS_USERNAME": user, "OS_PASSWORD": keystone.users[user]}
    if client != "fuel2":
        login.update(OS_AUTH_URL=keystone.auth_url, OS_PROJECT_NAME="admin")
    return server, login
