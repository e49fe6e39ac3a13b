"""Keystone mode: tokens validated by keystonemiddleware's ``auth_token``, passwords by Keystone v3.

Tokens go through ``auth_token`` the way Nailgun's own middleware used it; it strips any
identity headers a client sent and sets Keystone's (``X-Roles``, ``X-User-Name``...) only
when the token is valid. A user name and password (HTTP Basic, or fuel2's login at
``/keystone/v2.0/tokens``) are checked with a v3 password authentication scoped to a
project. Keystone out of reach is ``AuthenticationUnavailable`` (503), never a pass.
"""
import dataclasses
import logging

import keystoneauth1.exceptions as ksa_exceptions
from keystoneauth1 import session as ksa_session
from keystoneauth1.identity import v3
from keystonemiddleware import auth_token

from nailgun_host.auth import AuthenticationFailed, AuthenticationUnavailable, Identity

#: keystoneauth1's errors for "Keystone cannot be asked now": refused, timed out (ConnectTimeout is
#: a ConnectionError, not a ConnectFailure), TLS failures, no answer in time, or Keystone's own 5xx
UNREACHABLE = (ksa_exceptions.ConnectionError, ksa_exceptions.DiscoveryFailure,
               ksa_exceptions.RequestTimeout, ksa_exceptions.HttpServerError)


def _identity_from_access(access):
    return Identity(access.username, tuple(access.role_names), user_id=access.user_id,
                    project_id=access.project_id, project_name=access.project_name,
                    project_domain=access.project_domain_name, user_domain=access.user_domain_name)


def identity_from_environ(environ):
    """The identity ``auth_token`` confirmed, from the headers it set."""
    roles = [role.strip() for role in environ.get("HTTP_X_ROLES", "").split(",") if role.strip()]
    return Identity(environ.get("HTTP_X_USER_NAME") or environ.get("HTTP_X_USER_ID"), tuple(roles),
                    user_id=environ.get("HTTP_X_USER_ID"), project_id=environ.get("HTTP_X_PROJECT_ID"),
                    project_name=environ.get("HTTP_X_PROJECT_NAME"),
                    project_domain=environ.get("HTTP_X_PROJECT_DOMAIN_NAME"),
                    user_domain=environ.get("HTTP_X_USER_DOMAIN_NAME"))


class Keystone:
    """One Keystone: ``token_filter(app)`` for tokens, ``check_password`` for user names and passwords."""

    unreachable = UNREACHABLE

    def __init__(self, options):
        self.options = options
        self.auth_url = options["auth_url"].rstrip("/")
        self.domain = options.get("project_domain_name", "Default")
        #: Keystone is often shared with the cloud: only roles in these projects count here
        self.projects = tuple(options.get("projects") or [options.get("basic_project", "admin")])
        self.www_authenticate_uri = options.get("www_authenticate_uri") or self.auth_url
        self.verify = options.get("cafile") or True

    def check_project(self, identity):
        """``identity`` as this API knows it; AuthenticationFailed unless its roles were given in a project
        this API accepts.

        A user of another domain than ``user_domain_name`` is named ``name@domain``: Keystone's names are
        unique only within a domain, and the name is what records an author and owns a session.
        """
        if identity.project_name not in self.projects or (identity.project_domain or "").lower() != \
                self.domain.lower():
            raise AuthenticationFailed("tokens scoped to project {0!r} carry no rights here; scope them to {1}".format(
                identity.project_name, " or ".join(self.projects)))
        home = self.options.get("user_domain_name", "Default")
        if identity.user_domain and identity.user_domain.lower() != home.lower():
            identity = dataclasses.replace(identity, name="{0}@{1}".format(identity.name, identity.user_domain))
        return identity

    def token_filter(self, app):
        """``app`` behind ``auth_token``: it sees only requests whose token Keystone confirmed."""
        conf = {
            "www_authenticate_uri": self.www_authenticate_uri,
            "auth_type": "password",
            "auth_url": self.auth_url,
            "username": self.options.get("username"),
            "password": self.options.get("password"),
            "project_name": self.options.get("project_name"),
            "user_domain_name": self.options.get("user_domain_name", "Default"),
            "project_domain_name": self.options.get("project_domain_name", "Default"),
            "interface": self.options.get("interface", "public"),
            "token_cache_time": self.options.get("token_cache_time", 300),
            # a Keystone that does not answer costs a request at most this long, once: then 503
            "http_connect_timeout": float(self.options.get("timeout", 10)),
            "http_request_max_retries": 0,
            "delay_auth_decision": False,
            "include_service_catalog": False,
            "service_token_roles_required": True,
            "log_name": "nailgun_host.auth.keystone",
        }
        if self.options.get("cafile"):
            conf["cafile"] = self.options["cafile"]
        # The password plugin's options (auth_url, username...) are registered only once the plugin
        # loads, so keystonemiddleware warns at start that each is "not known"; they are, and the
        # options here are fixed by this code, so those warnings are only noise for an operator.
        logging.getLogger("keystonemiddleware._common.config").setLevel(logging.ERROR)
        return auth_token.AuthProtocol(app, conf)

    def check_password(self, user, password, project=None):
        """The identity of ``user`` scoped to ``project`` (default ``basic_project``), and the token obtained."""
        return self._authenticate(v3.Password(
            auth_url=self.auth_url, username=user, password=password,
            user_domain_name=self.options.get("user_domain_name", "Default"),
            project_name=project or self.options.get("basic_project", "admin"),
            project_domain_name=self.options.get("project_domain_name", "Default")))

    def check_token(self, token, project=None, project_id=None):
        """A token of the same user scoped to a project (by name or id), and its identity (keystoneclient's
        re-login names the project by the id the first login answered)."""
        if project_id:
            plugin = v3.Token(auth_url=self.auth_url, token=token, project_id=project_id)
        else:
            plugin = v3.Token(auth_url=self.auth_url, token=token,
                              project_name=project or self.options.get("basic_project", "admin"),
                              project_domain_name=self.domain)
        return self._authenticate(plugin)

    def _authenticate(self, plugin):
        session = ksa_session.Session(auth=plugin, verify=self.verify,
                                      timeout=float(self.options.get("timeout", 10)))
        try:
            access = plugin.get_access(session)
        except ksa_exceptions.Unauthorized:
            raise AuthenticationFailed("Keystone refused the user name, password or project")
        except UNREACHABLE as exc:
            raise AuthenticationUnavailable("Keystone at {0} cannot be reached: {1}".format(
                self.auth_url, type(exc).__name__))
        except ksa_exceptions.ClientException as exc:
            # 400 (a malformed name, an unknown project...) and 403 are the client's
            raise AuthenticationFailed("Keystone refused the credentials: {0}".format(type(exc).__name__))
        return self.check_project(_identity_from_access(access)), access
