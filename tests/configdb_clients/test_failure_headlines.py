"""Every client names why a server gave no answer, in one line: fuel-ext, fuel2, Hiera 3 (``hiera``) and Hiera 5
(``puppet lookup``), each against real TLS servers (cheroot, as ``nailgun-api`` serves TLS) whose certificate fails
for one cause alone (tests/tls.py), a port nothing listens on, and one that never answers.

The headline names the cause, the server's ``host:port`` and the setting or option to change; no traceback.
"""
import os
import re
import shutil
import socket
import ssl
import subprocess
import threading

import pytest
import requests
import yaml
from cheroot.ssl.builtin import BuiltinSSLAdapter
from hypothesis import given
from hypothesis import strategies as st
from urllib3 import exceptions as urllib3_errors

from nailgun_host import web_server
from nailgun_platform.client import failures
from tests.commands import FUEL_EXT, run_command
from tests.configdb_clients import puppet_env

FUEL2_BIN = os.environ.get("FUEL2_BIN")
RUBY_CLIENTS = pytest.mark.skipif(not (shutil.which("hiera") and shutil.which("puppet")),
                                  reason="hiera and puppet are installed by run_tests.sh (apt)")
#: puppet colours its lines; the sandbox's Facter complains of /proc/1/environ on every run
NOISE = re.compile(r"\x1b\[[0-9;]*m")


def not_found(environ, start_response):
    start_response("404 Not Found", [("Content-Type", "application/json")])
    return [b'{"message": "nothing here", "errors": []}']


class Cheroot:
    """``nailgun-api``'s server (``nailgun_host.web_server``) in a thread, serving TLS with a certificate, key pair."""

    def __init__(self, cert_key=None):
        self.server = web_server.make_server(("127.0.0.1", 0), not_found)
        if cert_key:
            self.server.ssl_adapter = BuiltinSSLAdapter(*cert_key)
        self.server.prepare()
        self.port = self.server.bind_addr[1]
        threading.Thread(target=self.server.serve, daemon=True).start()

    def stop(self):
        self.server.stop()


@pytest.fixture(scope="module")
def servers(tls):
    """cause => (scheme, port, the CA file the client trusts): a server failing the client's check for that cause."""
    started = {cause: Cheroot(tls.faulty[cause]) for cause in ("hostname mismatch", "self-signed", "expired")}
    started.update({"unknown CA": Cheroot((tls.cert_file, tls.key_file)), "not TLS": Cheroot(),
                    "trusted": Cheroot((tls.cert_file, tls.key_file))})
    silent = socket.create_server(("127.0.0.1", 0))  # accepts (the kernel does) and never answers
    with socket.create_server(("127.0.0.1", 0)) as probe:
        refused = probe.getsockname()[1]
    yield {cause: ("https", server.port, tls.wrong_ca_file if cause == "unknown CA" else tls.ca_file)
           for cause, server in started.items()} | {
        "refused": ("https", refused, tls.ca_file), "timeout": ("https", silent.getsockname()[1], tls.ca_file),
        "plain refused": ("http", refused, None), "plain timeout": ("http", silent.getsockname()[1], None)}
    for server in started.values():
        server.stop()
    silent.close()


#: cause => what fuel-ext's and fuel2's headline says (``{port}``, ``{ca}`` filled in)
PYTHON = {
    "hostname mismatch": "TLS: the certificate of the Nailgun API at 127.0.0.1:{port} is not valid for the name "
                         "127.0.0.1 (hostname mismatch): connect by a name it holds (SERVER_ADDRESS), or reissue it "
                         "for 127.0.0.1",
    "self-signed": "TLS: the certificate of the Nailgun API at 127.0.0.1:{port} is self-signed and not in the CA file "
                   "{ca} (OS_CACERT) (self-signed certificate): set OS_CACERT to a file holding it or its CA",
    "unknown CA": "TLS: the certificate of the Nailgun API at 127.0.0.1:{port} is signed by a CA not in the CA file "
                  "{ca} (OS_CACERT) (unable to get local issuer certificate): set OS_CACERT to the CA that signed it",
    "expired": "TLS: the certificate of the Nailgun API at 127.0.0.1:{port} has expired: the server needs a renewed "
               "certificate",
    "not TLS": "TLS: the Nailgun API at 127.0.0.1:{port} does not speak TLS there: use SERVER_PROTOCOL with http, or "
               "the port where it serves https",
    "refused": "Connection to the Nailgun API at 127.0.0.1:{port} refused: nothing listens there; check SERVER_ADDRESS "
               "and SERVER_PORT",
    "timeout": "The Nailgun API at 127.0.0.1:{port} did not answer within 1 s: it is hung or overloaded (or raise "
               "HTTP_TIMEOUT)",
    "plain refused": "Connection to the Nailgun API at 127.0.0.1:{port} refused: nothing listens there; check "
                     "SERVER_ADDRESS and SERVER_PORT",
    "plain timeout": "The Nailgun API at 127.0.0.1:{port} did not answer within 1 s: it is hung or overloaded (or "
                     "raise HTTP_TIMEOUT)",
    "trusted": "nothing here (404)",
}
#: cause => what the Hiera backends' headline says
RUBY = {
    "hostname mismatch": "TLS: the certificate of ConfigDB at 127.0.0.1:{port} is not valid for the name 127.0.0.1 "
                         "(hostname mismatch): connect by a name it holds (the url option), or reissue it for "
                         "127.0.0.1",
    "self-signed": "TLS: the certificate of ConfigDB at 127.0.0.1:{port} is self-signed and not in the CA file {ca} "
                   "(ssl_ca_cert) (self-signed certificate): set ssl_ca_cert to a file holding it or its CA",
    "unknown CA": "TLS: the certificate of ConfigDB at 127.0.0.1:{port} is signed by a CA not in the CA file {ca} "
                  "(ssl_ca_cert) (unable to get local issuer certificate): set ssl_ca_cert to the CA that signed it",
    "expired": "TLS: the certificate of ConfigDB at 127.0.0.1:{port} has expired: the server needs a renewed "
               "certificate",
    "not TLS": "TLS: ConfigDB at 127.0.0.1:{port} does not speak TLS there: use an http URL in the url option, or the "
               "port where it serves https",
    "refused": "Connection to ConfigDB at 127.0.0.1:{port} refused: nothing listens there; check the url option",
    "timeout": "No connection to ConfigDB at 127.0.0.1:{port} within 1 s: check the url option and the firewall (or "
               "raise http_connect_timeout)",
}
TLS_CAUSES = ["hostname mismatch", "self-signed", "unknown CA", "expired", "not TLS", "refused", "timeout"]


def the_line(result, prefix=""):
    """The one line a failed command printed on stderr (puppet's noise aside), without ``prefix``."""
    assert result.returncode == 1 and result.stdout == "", (result.stdout, result.stderr)
    lines = [NOISE.sub("", line) for line in result.stderr.splitlines() if "Facter:" not in line]
    assert len(lines) == 1, result.stderr  # no traceback, no backtrace, no second message
    assert lines[0].startswith(prefix), lines[0]
    return lines[0][len(prefix):]


def fuel_command(command, servers, cause, home):
    scheme, port, ca_file = servers[cause]
    (home / "fuel").mkdir(parents=True)
    settings = {"SERVER_ADDRESS": "127.0.0.1", "SERVER_PORT": str(port), "SERVER_PROTOCOL": scheme, "HTTP_TIMEOUT": 1}
    if ca_file:
        settings["OS_CACERT"] = ca_file
    (home / "fuel" / "fuel_client.yaml").write_text(yaml.safe_dump(settings))
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "SERVER_", "HTTP", "REQUESTS_"))}
    environ.update(XDG_CONFIG_HOME=str(home), HOME=str(home))
    result = run_command(command, ["config", "get", "--env", "1", "--resource", "astute"], environ)
    return the_line(result), port, ca_file


@pytest.mark.parametrize("cause", TLS_CAUSES + ["trusted"])
def test_fuel_ext(servers, cause, tmp_path):
    line, port, ca_file = fuel_command(FUEL_EXT, servers, cause, tmp_path)
    assert line == PYTHON[cause].format(port=port, ca=ca_file)


#: proxy => fuel-ext's headline for a request to the trusted server through HTTP_PROXY (``{port}``, ``{proxy}``)
THROUGH_PROXY = {
    "refused": "Connection to the proxy at 127.0.0.1:{proxy} (HTTP_PROXY) on the way to the Nailgun API at "
               "127.0.0.1:{port} refused: nothing listens there; check HTTP_PROXY",
    "timeout": "The Nailgun API at 127.0.0.1:{port} through the proxy at 127.0.0.1:{proxy} (HTTP_PROXY) did not answer "
               "within 1 s: it is hung or overloaded (or raise HTTP_TIMEOUT)",
}


@pytest.mark.parametrize("proxy", sorted(THROUGH_PROXY))
@pytest.mark.parametrize("scheme", ["http", "https"])
def test_fuel_ext_through_a_proxy_names_it_and_not_its_password(servers, proxy, scheme, tmp_path):
    """A refusal by the proxy is not the server's, and the proxy's credentials stay out of the line."""
    _scheme, port, ca_file = servers["trusted" if scheme == "https" else "not TLS"]
    proxy_port = servers[proxy][1]
    (tmp_path / "fuel").mkdir()
    (tmp_path / "fuel" / "fuel_client.yaml").write_text(yaml.safe_dump({
        "SERVER_ADDRESS": "127.0.0.1", "SERVER_PORT": str(port), "SERVER_PROTOCOL": scheme, "HTTP_TIMEOUT": 1,
        "OS_CACERT": ca_file, "HTTP_PROXY": "http://squid:pr0xy-pw@127.0.0.1:{0}".format(proxy_port)}))
    environ = {k: v for k, v in os.environ.items()
               if not k.lower().startswith(("os_", "server_", "http", "requests_", "no_proxy"))}
    environ.update(XDG_CONFIG_HOME=str(tmp_path), HOME=str(tmp_path))
    line = the_line(run_command(FUEL_EXT, ["config", "get", "--env", "1", "--resource", "astute"], environ))
    assert line == THROUGH_PROXY[proxy].format(port=port, proxy=proxy_port)


#: cause => fuel-ext's headline when Keystone (OS_AUTH_URL) is the server that gave no answer
KEYSTONE = {
    "hostname mismatch": "TLS: the certificate of Keystone at 127.0.0.1:{port} is not valid for the name 127.0.0.1 "
                         "(hostname mismatch): connect by a name it holds (OS_AUTH_URL), or reissue it for 127.0.0.1",
    "refused": "Connection to Keystone at 127.0.0.1:{port} refused: nothing listens there; check OS_AUTH_URL",
    "timeout": "Keystone at 127.0.0.1:{port} did not answer within 1 s: it is hung or overloaded (or raise "
               "HTTP_TIMEOUT)",
}


@pytest.mark.parametrize("cause", sorted(KEYSTONE))
def test_fuel_ext_logging_in_at_keystone(servers, cause, tmp_path):
    """The login comes first and names Keystone; a hung Keystone ends at HTTP_TIMEOUT, not never."""
    _scheme, port, ca_file = servers[cause]
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "SERVER_", "HTTP", "REQUESTS_"))}
    environ.update(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path), HTTP_TIMEOUT="1", OS_CACERT=ca_file,
                   OS_AUTH_URL="https://127.0.0.1:{0}/v3".format(port), OS_USERNAME="admin", OS_PASSWORD="pw")
    result = run_command(FUEL_EXT, ["config", "comp", "list"], environ, timeout=60)
    assert the_line(result) == KEYSTONE[cause].format(port=port)


@pytest.mark.skipif(not FUEL2_BIN, reason="FUEL2_BIN is not set (tests/tools/make_fuel2_venv.sh builds fuel2)")
@pytest.mark.parametrize("cause", ["plain refused", "plain timeout"])
def test_fuel2_speaks_plain_http_and_shows_the_same_lines(servers, cause, tmp_path):
    """python-fuelclient 11 has no https: what reaches fuel2 are a refusal and a silence."""
    line, port, _ca = fuel_command(FUEL2_BIN, servers, cause, tmp_path)
    assert line == PYTHON[cause].format(port=port)


def ruby_case(servers, cause):
    _scheme, port, ca_file = servers[cause]
    url = "https://127.0.0.1:{0}/api/v1/config".format(port)
    options = {"ssl_ca_cert": ca_file, "http_connect_timeout": 1, "http_read_timeout": 1}
    return url, options, RUBY[cause].format(port=port, ca=ca_file)


@RUBY_CLIENTS
@pytest.mark.parametrize("cause", TLS_CAUSES)
def test_hiera_3(servers, cause, tmp_path):
    url, options, headline = ruby_case(servers, cause)
    config = puppet_env.write_hiera3(tmp_path, url, **options)
    result = subprocess.run(["hiera", "-c", str(config), "--yaml", str(puppet_env.write_scope(tmp_path)),
                             "deployment_id"], capture_output=True, text=True, env=puppet_env.ruby_environ(),
                            timeout=60)
    error_class = "ConfigDB::Unavailable" if cause in ("refused", "timeout") else "ConfigDB::Error"
    assert the_line(result, shutil.which("hiera") + ": ") == "{0} ({1})".format(headline, error_class)


@RUBY_CLIENTS
@pytest.mark.parametrize("cause", TLS_CAUSES)
def test_puppet_lookup_hiera_5(servers, cause, tmp_path):
    url, options, headline = ruby_case(servers, cause)
    codedir = puppet_env.write_puppet_code(tmp_path / "code", url, **options)
    result = puppet_env.puppet_lookup(codedir, tmp_path, "deployment_id")
    assert the_line(result, "Error: Could not run: ") == headline


def test_follow_ends_at_a_tls_failure_which_no_retry_cures(servers, tmp_path):
    """``config changes --follow`` retries a refusal or a silence ("retrying in N s", test_cli_sessions_live), not a
    certificate: it ends with the headline, once."""
    _scheme, port, ca_file = servers["hostname mismatch"]
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("OS_", "SERVER_", "HTTP", "REQUESTS_"))}
    environ.update(SERVER_ADDRESS="127.0.0.1", SERVER_PORT=str(port), SERVER_PROTOCOL="https", OS_CACERT=ca_file,
                   HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path))
    result = run_command(FUEL_EXT, ["config", "changes", "--env", "1", "--since", "0", "--follow"], environ, timeout=60)
    assert the_line(result) == PYTHON["hostname mismatch"].format(port=port)


def _verify_error(code):
    error = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    error.verify_code, error.verify_message = code, "OpenSSL's words"
    return error


#: a root error and the cause it means, whatever wraps it
ROOTS = [(_verify_error(62), "hostname mismatch"), (_verify_error(64), "hostname mismatch"),
         (_verify_error(18), "self-signed"), (_verify_error(20), "unknown CA"), (_verify_error(10), "expired"),
         (_verify_error(9), "not yet valid"), (_verify_error(50), "certificate"),
         (ConnectionRefusedError(111, "Connection refused"), "refused"),
         (socket.gaierror(-2, "Name or service not known"), "unknown host"),
         (urllib3_errors.ReadTimeoutError(None, "/", "Read timed out."), "timeout"),
         (urllib3_errors.ConnectTimeoutError(None, "Connect timed out."), "timeout"),
         (ConnectionResetError(104, "Connection reset by peer"), "connection")]
#: how requests, urllib3 and keystoneauth1 wrap an error: in args[0], in reason, raised from or during it
WRAPS = [lambda inner: requests.exceptions.ConnectionError(inner),
         lambda inner: urllib3_errors.MaxRetryError(None, "/api/v1/version", reason=inner),
         lambda inner: urllib3_errors.SSLError(inner)]


def _raised_during(outer, inner):
    try:
        try:
            raise inner
        except BaseException:
            raise outer
    except BaseException as error:
        return error


@given(st.sampled_from(ROOTS), st.lists(st.tuples(st.sampled_from(range(len(WRAPS))), st.booleans()), max_size=4))
def test_the_cause_is_the_innermost_error_however_it_is_wrapped(root, wraps):
    """requests' chain, keystoneauth1's ``raise ... from``/during, in any order and depth: the same cause."""
    error, cause = root
    for index, during in wraps:
        outer = WRAPS[index](error)
        error = _raised_during(requests.exceptions.RequestException("wrapped"), outer) if during else outer
    failure = failures.classify(error, "https://127.0.0.1:8443/api/v1/version", "/ca.pem", 10)
    assert failure.cause == cause
    assert "127.0.0.1:8443" in failure.headline and "\n" not in failure.headline
