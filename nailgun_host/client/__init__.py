"""The HTTP client and cliff plumbing shared by the extensions' ``fuel2`` commands.

It needs only ``requests``, ``cliff`` and ``PyYAML``: the commands run on an operator's
machine without the server's dependencies. Settings are found the way fuel2 finds
them: the defaults, ``~/.config/fuel/fuel_client.yaml``, the file named by
``$FUELCLIENT_CUSTOM_SETTINGS``, then environment variables of the same names.
"""
import json
import os

import requests
import yaml

DEFAULTS = {
    "SERVER_ADDRESS": "127.0.0.1",
    "SERVER_PORT": "8000",
    "SERVER_PROTOCOL": "http",
    "OS_USERNAME": None,
    "OS_PASSWORD": None,
    "OS_TENANT_NAME": "admin",
    "OS_CACERT": None,
    "INSECURE": False,
    "HTTP_TIMEOUT": 10,
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


class APIError(Exception):
    """An HTTP error answer; ``str()`` is the server's own message."""

    def __init__(self, status, message, body=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = body


class APIClient:
    """JSON over HTTP to the Nailgun API (``/api/v1`` of the configured server)."""

    def __init__(self, root=None, settings=None):
        self.settings = settings or load_settings()
        self.root = (root or "{0}://{1}:{2}".format(
            self.settings["SERVER_PROTOCOL"], self.settings["SERVER_ADDRESS"],
            self.settings["SERVER_PORT"])).rstrip("/")
        self.api_root = self.root + "/api/v1/"
        self.session = requests.Session()
        if self.settings.get("OS_USERNAME"):
            self.session.auth = (self.settings["OS_USERNAME"], self.settings.get("OS_PASSWORD") or "")
        if self.settings.get("OS_CACERT"):
            self.session.verify = self.settings["OS_CACERT"]
        elif str(self.settings.get("INSECURE")).lower() in ("1", "true", "yes"):
            self.session.verify = False
        self.timeout = float(self.settings.get("HTTP_TIMEOUT") or 10)

    @classmethod
    def default(cls):
        return cls()

    def request(self, method, path, data=None, params=None, headers=None, raw=False):
        url = path if path.startswith("http") else self.api_root + path.lstrip("/")
        body = None if data is None else json.dumps(data)
        all_headers = {"Content-Type": "application/json", "Accept": "application/json"}
        all_headers.update(headers or {})
        try:
            response = self.session.request(method, url, data=body, params=params,
                                            headers=all_headers, timeout=self.timeout)
        except requests.ConnectionError as exc:
            raise APIError(None, "Cannot connect to the Nailgun API at {0}: {1}".format(self.root, exc))
        if response.status_code >= 400:
            raise APIError(response.status_code, _error_message(response), response.text)
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

    def post(self, path, data=None, **kwargs):
        return self.request("POST", path, data, **kwargs)

    def put(self, path, data=None, **kwargs):
        return self.request("PUT", path, data, **kwargs)

    def patch(self, path, data=None, **kwargs):
        return self.request("PATCH", path, data, **kwargs)

    def delete(self, path, **kwargs):
        return self.request("DELETE", path, **kwargs)


def _error_message(response):
    try:
        body = response.json()
    except ValueError:
        return "{0} {1}".format(response.status_code, response.reason)
    if isinstance(body, dict) and body.get("message"):
        return "{0} ({1})".format(body["message"], response.status_code)
    return "{0} {1}".format(response.status_code, response.reason)


class ClientMixin:
    """Gives a cliff command ``self.client``: the app's, if it has one, else a new one."""

    @property
    def client(self):
        client = getattr(self.app, "nailgun_client", None)
        if client is None:
            client = APIClient.default()
            try:
                self.app.nailgun_client = client
            except AttributeError:
                pass
        return client
