"""The HTTP client and cliff plumbing shared by the extensions' ``fuel2`` commands.

It needs only ``requests``, ``keystoneauth1``, ``cliff`` and ``PyYAML``: the commands run on an operator's
machine without the server's dependencies. Settings are found the way fuel2 finds
them: the defaults, ``~/.config/fuel/fuel_client.yaml``, the file named by
``$FUELCLIENT_CUSTOM_SETTINGS``, then environment variables of the same names.
``HTTP_PROXY`` sends every request through that proxy, as fuel2 does.
"""
import json
import os

import yaml

from nailgun_platform.client import fuel2, transports
from nailgun_platform.client.errors import APIError, details

#: the server's answer masks at least one secret for this identity (nailgun_host.api.base.MASKED_HEADER)
MASKED_HEADER = "X-Secrets-Masked"
DEFAULTS = {
    "SERVER_ADDRESS": "127.0.0.1",
    "SERVER_PORT": "8000",
    "SERVER_PROTOCOL": "http",
    "OS_USERNAME": None,
    "OS_PASSWORD": None,
    "OS_TENANT_NAME": "admin",
    "OS_PROJECT_NAME": None,
    "OS_AUTH_URL": None,
    "OS_USER_DOMAIN_NAME": "Default",
    "OS_PROJECT_DOMAIN_NAME": "Default",
    "OS_CACERT": None,
    "INSECURE": False,
    "HTTP_TIMEOUT": 10,
    "HTTP_PROXY": None,
}


def load_settings(environ=None):
    environ = os.environ if environ is None else environ
    values = dict(DEFAULTS)
    config_home = environ.get("XDG_CONFIG_HOME", os.path.expanduser("~/.config"))
    for path in (os.path.join(config_home, "fuel", "fuel_client.yaml"),
                 environ.get("FUELCLIENT_CUSTOM_SETTINGS")):
        if path and os.access(path, os.R_OK):
            with open(path) as stream:
                values.update(yaml.safe_load(stream) or {})
    for key in list(values):
        if key in environ:
            values[key] = environ[key]
    return values


class APIClient:
    """JSON over HTTP to the Nailgun API (``/api/v1`` of the configured server).

    ``transport`` sends the requests with the user's credentials; by default the one the
    settings ask for (``transports.transport_for``).
    """

    def __init__(self, root=None, settings=None, transport=None, timeout=None):
        self.settings = settings or load_settings()
        self.root = (root or "{0}://{1}:{2}".format(
            self.settings["SERVER_PROTOCOL"], self.settings["SERVER_ADDRESS"],
            self.settings["SERVER_PORT"])).rstrip("/")
        self.api_root = self.root + "/api/v1/"
        self.transport = transport or transports.transport_for(self.settings, self.root)
        self.timeout = float(timeout or self.settings.get("HTTP_TIMEOUT") or 10)

    @classmethod
    def default(cls):
        return cls()

    @classmethod
    def for_app(cls, app):
        """The client for a cliff app: fuelclient's login and token inside fuel2; elsewhere the app's
        settings (fuel-ext's, with its ``--os-*`` options), or the settings files' and environment's."""
        if fuel2.is_fuel2(app):
            root, transport, timeout = fuel2.root_transport_timeout()
            return cls(root=root, transport=transport, timeout=timeout)
        settings = getattr(app, "client_settings", None)
        return cls(settings=settings()) if settings else cls.default()

    def request(self, method, path, data=None, params=None, headers=None, raw=False, timeout=None):
        """The answer's JSON (None for an empty one), or with ``raw`` the response; ``timeout`` (seconds)
        replaces the client's for this request (a long poll waits longer than ``HTTP_TIMEOUT``). ``data`` as
        ``bytes`` is JSON encoded already (a caller that sized its body), sent as it is."""
        url = path if path.startswith("http") else self.api_root + path.lstrip("/")
        body = None if data is None else data if isinstance(data, bytes) else json.dumps(data)
        all_headers = {"Content-Type": "application/json", "Accept": "application/json"}
        all_headers.update(headers or {})
        response = self.transport.send(method, url, data=body, params=params, headers=all_headers,
                                       timeout=self.timeout if timeout is None else timeout)
        if response.status_code >= 400:
            raise APIError(response.status_code, _error_message(response), response.text,
                           retry_after=_retry_after(response))
        if raw:
            return response
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise APIError(response.status_code, "The server answered with a body that is not JSON")

    def get(self, path, **kwargs):
        return self.request("GET", path, **kwargs)

    def get_with_headers(self, path, **kwargs):
        """(the JSON body, the answer's headers)."""
        response = self.request("GET", path, raw=True, **kwargs)
        try:
            return response.json(), response.headers
        except ValueError:
            raise APIError(response.status_code, "The server answered with a body that is not JSON")

    def post(self, path, data=None, **kwargs):
        return self.request("POST", path, data, **kwargs)

    def put(self, path, data=None, **kwargs):
        return self.request("PUT", path, data, **kwargs)

    def patch(self, path, data=None, **kwargs):
        return self.request("PATCH", path, data, **kwargs)

    def delete(self, path, **kwargs):
        return self.request("DELETE", path, **kwargs)


def is_masked(headers):
    return headers.get(MASKED_HEADER, "").strip().lower() == "true"


def _retry_after(response):
    """The seconds of the answer's ``Retry-After`` (the API sends seconds, never a date), or None."""
    value = response.headers.get("Retry-After", "").strip()
    return int(value) if value.isascii() and value.isdigit() else None


def _error_message(response):
    """The server's message and status, then one line for each entry of ``errors`` the user can act on
    (the documents a deploy conflicts with, the operations a patch policy allows)."""
    try:
        body = response.json()
    except ValueError:
        return "{0} {1}".format(response.status_code, response.reason)
    if isinstance(body, dict) and body.get("message"):
        lines = ["{0} ({1})".format(body["message"], response.status_code)]
        lines += ["  " + line for line in details(body.get("errors"))]
        return "\n".join(lines)
    return "{0} {1}".format(response.status_code, response.reason)


class ClientMixin:
    """Gives a cliff command ``self.client``: the app's, if it has one, else a new one."""

    @property
    def client(self):
        client = getattr(self.app, "nailgun_client", None)
        if client is None:
            client = APIClient.for_app(self.app)
            try:
                self.app.nailgun_client = client
            except AttributeError:
                pass
        return client
