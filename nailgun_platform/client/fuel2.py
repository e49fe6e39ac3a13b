"""Inside ``fuel2``: our commands use fuelclient's own client and its token.

So ``fuel2 --os-username/--os-password``, ``fuel_client.yaml`` and the ``OS_*`` variables log
our commands in exactly as they log in fuelclient's own (a Keystone v2.0 login at
``<server>/keystone/v2.0``, only when ``/api/v1/version`` says ``auth_required``). Imported only
when the cliff app is fuelclient's: ``fuel-ext`` never needs python-fuelclient.
"""
import requests

from nailgun_platform.client.errors import APIError
from nailgun_platform.client.transports import RequestsTransport


def is_fuel2(app):
    """True when ``app`` is fuelclient's cliff app (told by its module, without importing fuelclient)."""
    return type(app).__module__.split(".")[0] == "fuelclient"


class FuelclientToken(requests.auth.AuthBase):
    """Puts fuelclient's current token (empty when no auth is required) in X-Auth-Token of each request.

    keystoneclient logs in on first use and again when the token is about to expire."""

    def __init__(self, fuelclient_api):
        self.api = fuelclient_api

    def __call__(self, request):
        from fuelclient.cli import error
        from keystoneauth1 import exceptions
        try:
            token = self.api.auth_token
        except (exceptions.ClientException, error.FuelClientException) as exc:
            who = self.api._os_username
            hint = ("as {0!r}".format(who) if who
                    else "(no user: set --os-username/--os-password or OS_USERNAME/OS_PASSWORD)")
            raise APIError(getattr(exc, "http_status", None), "fuel2 could not log in at {0} {1}: {2}".format(
                self.api.keystone_base, hint, exc))
        if token:
            request.headers["X-Auth-Token"] = token
        return request


def ask_auth_required(api, timeout):
    """Ask ``/version`` whether to log in, as fuelclient would, but within the HTTP timeout and through
    ``HTTP_PROXY``: fuelclient asks with neither, so a server that accepts and never answers would hang
    fuel2 for ever instead of failing with the one-line message of any other request."""
    if api._auth_required is not None:
        return
    response = RequestsTransport(proxies=api._make_proxies()).send("GET", api.api_root + "version", timeout=timeout)
    if response.status_code == 401:
        api._auth_required = True
    elif response.ok:
        try:
            api._auth_required = bool(response.json().get("auth_required", False))
        except (ValueError, AttributeError):
            pass  # fuelclient asks again and reports the answer its way


def root_transport_timeout():
    """fuelclient's server root, a transport carrying its token through its ``HTTP_PROXY``, and its HTTP timeout."""
    from fuelclient import client
    api = client.DefaultAPIClient  # made from the settings fuel2 updated with its command-line options
    timeout = float(api._http_timeout or 10)
    ask_auth_required(api, timeout)
    return api.root, RequestsTransport(auth=FuelclientToken(api), proxies=api._make_proxies()), timeout
