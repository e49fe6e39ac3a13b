"""Why a request got no answer, in one line: the cause, the server's ``host:port`` and the setting to change.

requests wraps the cause two or three times (its own error, urllib3's ``MaxRetryError`` and urllib3's
error, then the ``ssl`` or socket error), and keystoneauth1 once more; their messages repeat each other in
300 characters and name a certificate for another host as "certificate verify failed" like one no trusted
CA signed. The cause is the innermost error: an ``ssl.SSLCertVerificationError``'s ``verify_code`` (OpenSSL's
``X509_V_ERR_*``) tells the certificate's faults apart, an ``ssl.SSLError``'s ``reason`` a server that does
not speak TLS, the socket's error a refusal or a timeout. ``classify`` is the one place that reads them.
"""
import socket
import ssl
from collections import namedtuple
from urllib.parse import urlsplit

from urllib3 import exceptions as urllib3_errors

#: OpenSSL's X509_V_ERR_* codes, by the cause they mean to an operator
HOSTNAME_CODES = {62, 64}  # HOSTNAME_MISMATCH, IP_ADDRESS_MISMATCH
SELF_SIGNED_CODES = {18, 19}  # DEPTH_ZERO_SELF_SIGNED_CERT, SELF_SIGNED_CERT_IN_CHAIN
UNKNOWN_CA_CODES = {2, 20, 21}  # UNABLE_TO_GET_ISSUER_CERT(_LOCALLY), UNABLE_TO_VERIFY_LEAF_SIGNATURE
EXPIRED_CODES = {10}  # CERT_HAS_EXPIRED
NOT_YET_VALID_CODES = {9}  # CERT_NOT_YET_VALID

#: what failed (``cause``: a short name tests and scripts can match) and the line shown to the user
Failure = namedtuple("Failure", "cause headline")
#: causes that may pass by themselves (a server restarting, a network hiccup), worth a retry; a certificate
#: or a protocol that does not fit stays so until someone changes a setting
PASSING = frozenset(["refused", "timeout", "unknown host", "connection"])


#: the names of the settings a user changes for each cause, as the command that failed spells them
Settings = namedtuple("Settings", "host address protocol trust timeout")
#: fuel-ext's (and the settings file's) names for the Nailgun API
SERVER = Settings("SERVER_ADDRESS", "SERVER_ADDRESS and SERVER_PORT", "SERVER_PROTOCOL", "OS_CACERT", "HTTP_TIMEOUT")
#: fuel-ext's names for Keystone (OS_AUTH_URL holds its address and its scheme)
KEYSTONE = Settings("OS_AUTH_URL", "OS_AUTH_URL", "OS_AUTH_URL", "OS_CACERT", "HTTP_TIMEOUT")


def causes(exc):
    """``exc`` and the errors inside it, the outermost first: Python's chain, and what requests and urllib3
    keep in ``args[0]`` and ``reason`` rather than there."""
    seen = set()
    while isinstance(exc, BaseException) and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        inner = getattr(exc, "reason", None)
        if not isinstance(inner, BaseException):
            inner = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else None
        exc = exc.__cause__ or inner or exc.__context__


def _trusted(verify, settings):
    if isinstance(verify, str):
        return "the CA file {0} ({1})".format(verify, settings.trust)
    return "the default CAs (REQUESTS_CA_BUNDLE or the system's)"


def _certificate(error, host, where, verify, settings):
    """The Failure for a certificate that did not verify."""
    code, why = error.verify_code, error.verify_message
    if code in HOSTNAME_CODES:
        return Failure("hostname mismatch", "TLS: the certificate of {0} is not valid for the name {1} (hostname "
                       "mismatch): connect by a name it holds ({2}), or reissue it for {1}".format(
                           where, host, settings.host))
    if code in SELF_SIGNED_CODES:
        return Failure("self-signed", "TLS: the certificate of {0} is self-signed and not in {1} ({2}): set {3} to "
                       "a file holding it or its CA".format(where, _trusted(verify, settings), why, settings.trust))
    if code in UNKNOWN_CA_CODES:
        return Failure("unknown CA", "TLS: the certificate of {0} is signed by a CA not in {1} ({2}): set {3} to the "
                       "CA that signed it".format(where, _trusted(verify, settings), why, settings.trust))
    if code in EXPIRED_CODES:
        return Failure("expired", "TLS: the certificate of {0} has expired: the server needs a renewed "
                       "certificate".format(where))
    if code in NOT_YET_VALID_CODES:
        return Failure("not yet valid", "TLS: the certificate of {0} is not valid yet: check the clocks of both "
                       "machines".format(where))
    return Failure("certificate", "TLS: the certificate of {0} does not verify against {1}: {2}".format(
        where, _trusted(verify, settings), why))


#: a request that went through a proxy: the proxy's ``host`` and its ``label`` (``host:port``, without its
#: credentials), and whether the failure is the proxy's (``its_fault``)
Proxy = namedtuple("Proxy", "host label its_fault")


def _proxy(chain):
    """The Proxy a request went through (``HTTP_PROXY``, or requests' environment), or None. urllib3 raises its
    ProxyError for a failure on the way to the proxy, before the server was reached."""
    its_fault = any(isinstance(error, urllib3_errors.ProxyError) for error in chain)
    url = next((error.pool.proxy for error in chain  # MaxRetryError, ReadTimeoutError: the pool it was sent from
                if isinstance(error, urllib3_errors.PoolError) and getattr(error.pool, "proxy", None) is not None),
               None)
    if url is None:
        return Proxy("", "the proxy (HTTP_PROXY)", True) if its_fault else None
    port = url.port or (443 if url.scheme == "https" else 80)
    return Proxy(url.host, "the proxy at {0}:{1} (HTTP_PROXY)".format(url.host, port), its_fault)


def classify(exc, url, verify=True, timeout=None, settings=SERVER, service="the Nailgun API"):
    """The Failure of a request to ``url`` that raised ``exc`` (requests', urllib3's or keystoneauth1's
    error for a connection, TLS or timeout failure); ``verify`` is what the request was given, ``timeout``
    its seconds, ``settings`` the names the user changes, ``service`` what the headline calls the server.
    Through a proxy, the headline names it: as the one that failed, or as the way the request went."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    where = "{0} at {1}".format(service, parts.netloc.rpartition("@")[2])
    chain = list(causes(exc))
    proxy = _proxy(chain)
    if proxy is not None and proxy.its_fault:  # the one to reach, and HTTP_PROXY the setting to change
        host, where = proxy.host, "{0} on the way to {1}".format(proxy.label, where)
        settings = settings._replace(host="HTTP_PROXY", address="HTTP_PROXY")
    elif proxy is not None:
        where = "{0} through {1}".format(where, proxy.label)
    for error in chain:
        if isinstance(error, ssl.SSLCertVerificationError):
            return _certificate(error, host, where, verify, settings)
        if isinstance(error, ssl.SSLError) and error.reason == "WRONG_VERSION_NUMBER":
            return Failure("not TLS", "TLS: {0} does not speak TLS there: use {1} with http, or the port where "
                           "it serves https".format(where, settings.protocol))
        if isinstance(error, ssl.SSLError):
            return Failure("handshake", "TLS: the handshake with {0} failed: {1}".format(
                where, error.reason or error.strerror or error))
        if isinstance(error, ConnectionRefusedError):
            return Failure("refused", "Connection to {0} refused: nothing listens there; check {1}".format(
                where, settings.address))
        if isinstance(error, socket.gaierror):
            return Failure("unknown host", "Cannot resolve the name {0} ({1}): {2}; check {3}".format(
                host, where, error.strerror, settings.host))
    seconds = " {0:g} s".format(timeout) if timeout else ""
    if any(isinstance(error, urllib3_errors.ConnectTimeoutError) for error in chain):
        return Failure("timeout", "No connection to {0} within{1}: check {2} and the firewall (or raise {3})".format(
            where, seconds, settings.address, settings.timeout))
    if any(isinstance(error, (urllib3_errors.ReadTimeoutError, TimeoutError)) for error in chain):
        return Failure("timeout", "{0} did not answer within{1}: it is hung or overloaded (or raise {2})".format(
            where[:1].upper() + where[1:], seconds, settings.timeout))
    return Failure("connection", "Cannot connect to {0}: {1}".format(where, chain[-1]))
