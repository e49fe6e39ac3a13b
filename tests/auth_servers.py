"""``nailgun-api`` processes in keystone or local mode, over HTTP or HTTPS, and clients' environments for them.

The client tests (fuel-ext, fuel2) start real servers with an ``AUTH`` section in a settings file
(``NAILGUN_CONFIG``), as an operator does, and run command lines with only the variables a user
would set: nothing of the test process's own ``OS_*``, fuel2 settings or CA bundle leaks in.
The fixtures are imported by the test modules that use them.
"""
import datetime
import ipaddress
import os

import pytest
import yaml

from tests.commands import IN_PROCESS, run_command
from tests.conftest import LiveServer

#: environment variables a client reads; a test names the ones it wants
CLIENT_VARIABLES = ("SERVER_ADDRESS", "SERVER_PORT", "SERVER_PROTOCOL", "FUELCLIENT_CUSTOM_SETTINGS",
                    "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "INSECURE", "HTTP_TIMEOUT")
#: local mode's users: name -> (password, roles); the names and passwords of the test Keystone's
LOCAL_USERS = {"admin": ("admin-pw", ["admin"]), "member": ("member-pw", ["member"]),
               "reader": ("reader-pw", ["reader"])}


def write_users_file(path, users=LOCAL_USERS):
    """A users file of local mode, written with the server's own code (as ``nailgun-users`` does), but
    with bcrypt's lowest cost, so that the many logins of the client tests cost milliseconds."""
    import bcrypt

    from nailgun_host.auth import local

    content = local.new_users_file()
    for name, (password, roles) in users.items():
        hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()
        content["users"][name] = {"password": hashed, "roles": list(roles)}
    local.save(str(path), content)
    return str(path)


class AuthServer(LiveServer):
    """A ``nailgun-api`` with ``auth`` as its AUTH settings; HTTPS with ``tls``; listening on ``host``."""

    def __init__(self, db_url, workdir, auth, tls=None, host="127.0.0.1"):
        config = os.path.join(str(workdir), "nailgun.yaml")
        with open(config, "w") as stream:
            yaml.safe_dump({"AUTH": auth}, stream)
        args = ["--host", host] + (["--cert-file", tls.cert_file, "--key-file", tls.key_file] if tls else [])
        super().__init__(db_url, env={"NAILGUN_CONFIG": config}, args=args)
        if tls:
            self.url = "https://127.0.0.1:{0}".format(self.port)


class TLS:
    """A CA made for the test, a server certificate it signed (127.0.0.1, localhost), and an unrelated CA."""

    def __init__(self, directory):
        from cryptography.hazmat.primitives.asymmetric import ec

        self.directory = str(directory)
        ca_key, ca_cert = self._ca("nailgun test CA")
        self.ca_file = self._write("ca.pem", ca_cert)
        self.other_ca_file = self._write("other-ca.pem", self._ca("another CA")[1])
        key = ec.generate_private_key(ec.SECP256R1())
        self.cert_file = self._write("server.pem", self._certificate(
            "127.0.0.1", key.public_key(), ca_key, ca_cert.subject, ca=False))
        self.key_file = self._write("server.key", key)

    def _ca(self, name):
        from cryptography import x509
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID

        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        return key, self._certificate(name, key.public_key(), key, subject, ca=True)

    @staticmethod
    def _certificate(name, public_key, signer, issuer, ca):
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes
        from cryptography.x509.oid import NameOID

        now = datetime.datetime.now(datetime.timezone.utc)
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
                   .issuer_name(issuer).public_key(public_key).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if ca:
            builder = builder.add_extension(x509.KeyUsage(
                digital_signature=True, content_commitment=False, key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True, encipher_only=False, decipher_only=False),
                critical=True)
            builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        else:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
            builder = builder.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()), critical=False)
        return builder.sign(signer, hashes.SHA256())

    def _write(self, name, item):
        from cryptography.hazmat.primitives import serialization

        if hasattr(item, "public_bytes"):
            data = item.public_bytes(serialization.Encoding.PEM)
        else:
            data = item.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption())
        path = os.path.join(self.directory, name)
        with open(path, "wb") as stream:
            stream.write(data)
        return path


def non_loopback_address():
    """An address of this machine that is not a loopback one, or None."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.254", 9))  # no packet is sent: only the route is looked up
            address = probe.getsockname()[0]
        except OSError:
            return None
    return None if ipaddress.ip_address(address).is_loopback else address


# --- fixtures (imported by the test modules) ---------------------------------------------------------

@pytest.fixture(scope="module")
def users_file(tmp_path_factory):
    return write_users_file(tmp_path_factory.mktemp("users") / "users.yaml")


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    return TLS(tmp_path_factory.mktemp("tls"))


def _serve(request, tmp_path_factory, auth, **kwargs):
    server = AuthServer(request.getfixturevalue("db_url"), tmp_path_factory.mktemp("server"), auth, **kwargs)
    request.addfinalizer(server.stop)
    return server


def keystone_settings(keystone):
    """Keystone mode, with keystonemiddleware's cache of validated tokens on (as in production): the
    client tests revoke nothing, and validating every request again would cost seconds per test."""
    return keystone.settings(keystone={"token_cache_time": 300})


@pytest.fixture(scope="module")
def keystone_server(request, migrated_db, keystone, tmp_path_factory):
    return _serve(request, tmp_path_factory, keystone_settings(keystone))


@pytest.fixture(scope="module")
def local_server(request, migrated_db, users_file, tmp_path_factory):
    return _serve(request, tmp_path_factory, {"method": "local", "users_file": users_file})


@pytest.fixture(scope="module")
def local_tls_server(request, migrated_db, users_file, tls, tmp_path_factory):
    return _serve(request, tmp_path_factory, {"method": "local", "users_file": users_file}, tls=tls)


@pytest.fixture(scope="module")
def keystone_tls_server(request, migrated_db, keystone, tls, tmp_path_factory):
    return _serve(request, tmp_path_factory, keystone_settings(keystone), tls=tls)


@pytest.fixture(scope="module")
def exposed_keystone_server(request, migrated_db, keystone, tmp_path_factory):
    """In keystone mode, listening on every address; with this machine's non-loopback address."""
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    return _serve(request, tmp_path_factory, keystone_settings(keystone), host="0.0.0.0"), address


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
        return server, {"OS_USERNAME": user, "OS_PASSWORD": LOCAL_USERS[user][0]}
    keystone = request.getfixturevalue("keystone")
    login = {"OS_USERNAME": user, "OS_PASSWORD": keystone.users[user]}
    if client != "fuel2":
        login.update(OS_AUTH_URL=keystone.auth_url, OS_PROJECT_NAME="admin")
    return server, login
