"""Who is asking: authentication in the host's one request path (``middleware``).

``AUTH: {method: ...}`` in the settings chooses how a request proves an identity:
``keystone`` (tokens through keystonemiddleware, Basic checked against Keystone),
``local`` (Basic and this server's own tokens against a users file) or ``none`` (no
check: development on loopback only). The identity a request carries is an
``Identity``, found in the WSGI environ under ``ENVIRON_KEY``.
"""
import dataclasses
import json
import math
import re

#: where the middleware puts the request's Identity in the WSGI environ
ENVIRON_KEY = "nailgun.identity"
METHODS = ("none", "local", "keystone")
#: Keystone's tokens (Fernet, JWS, UUID) and this server's are printable ASCII without spaces, Fernet's
#: about 200 characters and JWS's under 1000; the web server in front of Keystone refuses a header of 8 K
_TOKEN = re.compile(r"[\x21-\x7e]{1,4096}")


def plausible_token(token):
    """Whether ``token`` could be a token at all. Anything else is refused (401) without asking Keystone:
    it answers 400 to a token with control or non-ASCII characters, which keystonemiddleware takes for
    an outage (503), and keystoneauth1 cannot even send some (500)."""
    return bool(_TOKEN.fullmatch(token))


@dataclasses.dataclass(frozen=True)
class Identity:
    """An authenticated user (or, with method ``none``, nobody in particular)."""

    name: str
    roles: tuple = ()
    user_id: str = None
    project_id: str = None
    project_name: str = None
    project_domain: str = None
    authenticated: bool = True
    #: keystone mode: the domain of the user (names are unique only within a domain)
    user_domain: str = None

    def __hash__(self):
        """Hashed once: an identity keys the policy's decisions on every request (the fields never change)."""
        try:
            return self.__dict__["_hash"]
        except KeyError:
            value = self.__dict__["_hash"] = hash(dataclasses.astuple(self))
            return value

    def credentials(self):
        """What oslo.policy checks rules against."""
        return {"roles": list(self.roles), "user_id": self.user_id, "user_name": self.name,
                "project_id": self.project_id}


#: the identity of every request when authentication is off: may do anything
ANONYMOUS = Identity("anonymous", ("admin",), authenticated=False)


class AuthenticationFailed(Exception):
    """The credentials are wrong, expired or unknown: 401."""


class AuthenticationUnavailable(Exception):
    """The identity service cannot be asked now (Keystone down): 503, never a pass."""


class TryLater(Exception):
    """The credentials are not checked now (a lockout, no check slot free): ``status``, ``Retry-After``."""

    status = "503 Service Unavailable"

    def __init__(self, message, retry_after):
        super().__init__(message)
        self.retry_after = max(1, math.ceil(retry_after))


def json_response(start_response, status, message, headers=()):
    body = json.dumps({"message": message, "errors": []}).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
                   + list(headers))
    return [body]
