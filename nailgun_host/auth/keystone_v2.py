"""``POST /keystone/v2.0/tokens``: the login python-fuelclient 11 does, answered in Keystone v2.0's shape.

The Fuel master's nginx sent ``/keystone`` to Keystone, and fuelclient still logs in with
keystoneclient's v2.0 API, which no Keystone of today serves. So the host answers it:
the user name and password are checked against Keystone v3 (the token returned is a real
Keystone token, scoped to the tenant asked for) or, in local mode, the users file (the
token is this server's own). The answer carries what keystoneclient reads: the token's id
and expiry, the tenant, the user and its roles, and an empty service catalog.
"""
import datetime
import json
import re

from nailgun_host import errors, validation
from nailgun_host.auth import AuthenticationFailed, AuthenticationUnavailable, TryLater, json_response, plausible_token

TOKENS_PATH = re.compile(r"/keystone/v2\.0/tokens/?")  # matched whole (fullmatch)
MAX_BODY = 64 * 1024


class BadRequest(Exception):
    pass


def _credentials(environ):
    """``("password", user, password, tenant)`` or ``("token", token, None, tenant)`` of a v2.0 login.

    keystoneclient logs in with the password, then again with the token it was given.
    """
    try:
        length = validation.content_length(environ) or 0
    except errors.InvalidData as exc:
        raise BadRequest(exc.message)
    if not length and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        length = MAX_BODY + 1  # the server de-chunks; read up to the cap
    body = environ["wsgi.input"].read(min(length, MAX_BODY + 1)) if length else b""
    if len(body) > MAX_BODY:
        raise BadRequest("the body is larger than {0} bytes".format(MAX_BODY))
    try:
        request = json.loads(body or b"null")
        auth = request["auth"]
        tenant = auth.get("tenantName")
        tenant_id = auth.get("tenantId")  # keystoneclient's re-login names the tenant by id
        if "token" in auth:
            kind, user, secret = "token", auth["token"]["id"], ""
        else:
            kind, user, secret = "password", auth["passwordCredentials"]["username"], \
                auth["passwordCredentials"]["password"]
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        raise BadRequest('expected {"auth": {"passwordCredentials": {"username": ..., "password": ...}, '
                         '"tenantName": ...}} or {"auth": {"token": {"id": ...}, "tenantName": ...}}')
    values = (user, secret) + tuple(value for value in (tenant, tenant_id) if value is not None)
    if not all(isinstance(value, str) for value in values) or not user:
        raise BadRequest("username, password, token id, tenantName and tenantId must be strings")
    try:
        for value in values:
            value.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest("username, password, token id, tenantName and tenantId must be valid Unicode")
    return kind, user, secret, tenant, tenant_id


def _iso(moment):
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def v2_access(token, expires, identity, tenant_name):
    now = datetime.datetime.now(datetime.timezone.utc)
    tenant_id = identity.project_id or tenant_name
    return {"access": {
        "token": {"id": token, "issued_at": _iso(now), "expires": _iso(expires), "audit_ids": [],
                  "tenant": {"id": tenant_id, "name": tenant_name, "enabled": True, "description": None}},
        "serviceCatalog": [],
        "user": {"id": identity.user_id or identity.name, "name": identity.name, "username": identity.name,
                 "roles": [{"name": role} for role in identity.roles], "roles_links": []},
        "metadata": {"is_admin": 0, "roles": list(identity.roles)},
    }}


class TokenIssuer:
    """The WSGI answer of ``/keystone/v2.0/tokens`` for an ``AuthMiddleware``."""

    def __init__(self, middleware):
        self.middleware = middleware

    def _issue(self, address, kind, user, password, tenant, tenant_id):
        keystone = self.middleware.keystone
        if kind == "token" and not plausible_token(user):
            raise AuthenticationFailed("the token is invalid or expired")
        if keystone and kind == "token":
            identity, access = keystone.check_token(user, tenant, tenant_id)
            return v2_access(access.auth_token, access.expires, identity, access.project_name)
        if kind == "token":  # the same login again: the token keeps the expiry of the first
            users = self.middleware.local_users
            content = users.content()
            identity, expires = users.check_token(user, content)
            token, expires = users.issue_token(identity, content, expires)
            return v2_access(token, datetime.datetime.fromtimestamp(expires, datetime.timezone.utc), identity,
                             tenant or "admin")
        token, expires, identity, project = self.password_token(address, user, password, tenant)
        return v2_access(token, expires, identity, project or tenant or "admin")

    def password_token(self, address, user, password, tenant=None):
        """``(token, expiry (an aware datetime), identity, project name)`` for a user name and password, checked
        as every password is (slots, lockout): a Keystone token scoped to ``tenant`` (default: the basic
        project), or in local mode this server's own (project None)."""
        middleware = self.middleware
        if middleware.keystone:
            identity, access = middleware.password_check(
                user, address, lambda: middleware.keystone.check_password(user, password, tenant))
            return access.auth_token, access.expires, identity, access.project_name
        users = middleware.local_users
        content = users.content()  # the one file the login is checked against and its token carries
        identity = middleware.check_password(user, password, address, content)
        token, expires = users.issue_token(identity, content)
        return token, datetime.datetime.fromtimestamp(expires, datetime.timezone.utc), identity, None

    def __call__(self, environ, start_response):
        if environ.get("REQUEST_METHOD") != "POST":
            return json_response(start_response, "405 Method Not Allowed",
                                 "Only POST logs in here", [("Allow", "POST")])
        try:
            answer = self._issue(environ.get("REMOTE_ADDR"), *_credentials(environ))
        except BadRequest as exc:
            return json_response(start_response, "400 Bad Request", "Invalid login request: {0}".format(exc))
        except AuthenticationFailed as exc:
            return self.middleware.unauthorized(start_response, str(exc))
        except AuthenticationUnavailable as exc:
            return self.middleware.unavailable(start_response, str(exc))
        except TryLater as exc:
            return self.middleware.try_later(start_response, exc)
        body = json.dumps(answer).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]
