"""How a request reaches the API with the user's credentials: a Keystone session, HTTP Basic, or none.

``fuel-ext`` picks one from its settings: with ``OS_AUTH_URL``, a keystoneauth1 v3 password
session gets the token and renews it (on expiry, or once on a 401); with only ``OS_USERNAME``,
HTTP Basic (the server's local mode, or Keystone's password check). The CA file and ``INSECURE``
are given to every request as ``verify=``: requests lets ``REQUESTS_CA_BUNDLE`` beat a session's
own ``verify``, never an explicit one.
"""
import ipaddress
import sys
from urllib.parse import urlsplit

import requests

from nailgun_platform.client import failures
from nailgun_platform.client.errors import APIError


def is_true(value):
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def verify_setting(settings):
    """``verify=`` for requests and keystoneauth1: the CA file, else False when INSECURE, else True."""
    if settings.get("OS_CACERT"):
        return settings["OS_CACERT"]
    return not is_true(settings.get("INSECURE"))


def is_loopback(host):
    if host in (None, "localhost") or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def warn_if_plain_basic(root, stream=None):
    """A password sent as Basic over plain HTTP beyond this machine is readable on the way: say so."""
    parts = urlsplit(root)
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        (stream or sys.stderr).write(
            "WARNING: sending the password as HTTP Basic over plain HTTP to {0}; anyone on the way can "
            "read it. Use SERVER_PROTOCOL=https (with OS_CACERT) or OS_AUTH_URL.\n".format(parts.netloc))


def transport_for(settings, root):
    """The transport ``fuel-ext``'s settings ask for."""
    verify = verify_setting(settings)
    if settings.get("OS_USERNAME") and not settings.get("OS_PASSWORD"):
        raise APIError(None, "OS_USERNAME is set ({0!r}) but OS_PASSWORD is not: give both (or --os-password)".format(
            settings["OS_USERNAME"]))
    proxies = proxies_setting(settings)
    if settings.get("OS_AUTH_URL"):
        return KeystoneTransport(settings, verify, proxies)
    if settings.get("OS_USERNAME"):
        warn_if_plain_basic(root)
        return RequestsTransport(verify, auth=(settings["OS_USERNAME"], settings.get("OS_PASSWORD") or ""),
                                 proxies=proxies)
    return RequestsTransport(verify, proxies=proxies)


def proxies_setting(settings):
    """requests' ``proxies`` for ``HTTP_PROXY`` (for http and https, as fuelclient makes them), or None."""
    proxy = settings.get("HTTP_PROXY")
    return {"http": proxy, "https": proxy} if proxy else None


class RequestsTransport:
    """Plain requests; ``auth`` is a requests auth (a Basic pair, or fuel2's token)."""

    def __init__(self, verify=True, auth=None, proxies=None):
        self.verify = verify
        self.session = requests.Session()
        self.session.auth = auth
        if proxies:
            self.session.proxies.update(proxies)

    def send(self, method, url, **kwargs):
        try:
            return self.session.request(method, url, verify=self.verify, **kwargs)
        except (requests.ConnectionError, requests.Timeout) as exc:  # TLS, refused, no answer within the timeout
            raise unreachable(exc, url, self.verify, kwargs.get("timeout"))


class KeystoneTransport:
    """A keystoneauth1 session with a v3 password plugin: the token is got, sent and renewed by it."""

    def __init__(self, settings, verify, proxies=None):
        from keystoneauth1 import session
        from keystoneauth1.identity import v3
        self.auth_url = settings["OS_AUTH_URL"]
        self.username = settings.get("OS_USERNAME")
        self.verify = verify
        self.timeout = float(settings.get("HTTP_TIMEOUT") or 10)  # a hung Keystone must not hang the login for ever
        auth = v3.Password(
            auth_url=self.auth_url, username=self.username, password=settings.get("OS_PASSWORD"),
            project_name=settings.get("OS_PROJECT_NAME") or settings.get("OS_TENANT_NAME"),
            user_domain_name=settings.get("OS_USER_DOMAIN_NAME") or "Default",
            project_domain_name=settings.get("OS_PROJECT_DOMAIN_NAME") or "Default")
        self.session = session.Session(auth=auth, verify=verify, timeout=self.timeout,
                                       session=RequestsTransport(proxies=proxies).session)

    def send(self, method, url, **kwargs):
        from keystoneauth1 import exceptions
        try:
            self.session.get_token()  # first, so that a Keystone out of reach is named as such
        except exceptions.ConnectionError as exc:  # TLS, refused, or no answer in time
            raise unreachable(exc, self.auth_url, self.verify, self.timeout, failures.KEYSTONE, "Keystone")
        except exceptions.Unauthorized as exc:
            raise APIError(401, "Keystone at {0} refused the login of {1!r}: {2}".format(
                self.auth_url, self.username, exc))
        except exceptions.ClientException as exc:
            raise APIError(None, "Cannot log in with Keystone at {0}: {1}".format(self.auth_url, exc))
        try:
            return self.session.request(url, method, raise_exc=False, verify=self.verify, **kwargs)
        except exceptions.ConnectionError as exc:  # TLS, refused, or no answer in time
            raise unreachable(exc, url, self.verify, kwargs.get("timeout"))
        except exceptions.Unauthorized as exc:
            raise APIError(401, "Keystone at {0} refused the login of {1!r}: {2}".format(
                self.auth_url, self.username, exc))
        except exceptions.ClientException as exc:  # no username, no project, Keystone's other errors
            raise APIError(None, "Cannot log in with Keystone at {0}: {1}".format(self.auth_url, exc))


def unreachable(exc, url, verify, timeout, settings=failures.SERVER, service="the Nailgun API"):
    """The APIError for a request that got no answer: ``failures.classify``'s headline and cause."""
    failure = failures.classify(exc, url, verify, timeout, settings, service)
    return APIError(None, failure.headline, cause=failure.cause)
