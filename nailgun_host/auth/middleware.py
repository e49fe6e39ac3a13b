"""The one place a request's identity is established, before any route is matched.

Public without credentials: ``GET``/``HEAD`` of ``version`` and ``health`` under the API
prefixes, and ``POST /keystone/v2.0/tokens`` (the login of fuel2). Everything else needs
``X-Auth-Token`` or ``Authorization: Basic`` when a method other than ``none`` is in force:
401 (JSON, ``WWW-Authenticate``) without valid ones, 503 when the identity service
cannot be asked. A password is checked in one of a few slots (``check_slots``: 503 when none
frees soon) unless it was found right lately, and names and addresses that keep failing are
locked out for a while (``lockout``: 429); tokens are checked without either. A request that
passes carries its ``Identity`` in the environ (and its name in ``REMOTE_USER``, for access
logs); what it may do is the policy's business.

With method ``none`` nobody is asked, so only clients on this host are served: a request whose
``REMOTE_ADDR`` is not a loopback address gets 401 (public routes aside), under whatever server
runs the application, unless ``AUTH.allow_insecure_no_auth`` says otherwise. Behind a proxy on
the same host every client comes from loopback: ``none`` there serves the proxy's clients.
"""
import base64
import ipaddress
import logging
import re
import threading
import time

from nailgun_host.auth import (ANONYMOUS, ENVIRON_KEY, AuthenticationFailed, AuthenticationUnavailable, TryLater,
                               check_slots, credential_cache, json_response, keystone_v2, lockout,
                               plausible_token)
from nailgun_host.console import cookies, pages

LOG = logging.getLogger(__name__)
PUBLIC_PATH = re.compile(r"/api(/v1)?/(version|health)/?")  # matched whole (fullmatch)
#: the console's mount of the API: ``/ui/api/v1/x`` is ``/api/v1/x`` for the console's cookie
CONSOLE_API = "/ui/api/"
#: headers only the middleware may set; a client's are dropped before anything reads them
_IDENTITY_HEADERS = frozenset(("HTTP_X_ROLES", "HTTP_X_USER_NAME", "HTTP_X_USER_ID", "HTTP_X_USER_DOMAIN_NAME",
                               "HTTP_X_PROJECT_ID", "HTTP_X_PROJECT_NAME", "HTTP_X_PROJECT_DOMAIN_NAME",
                               "HTTP_X_IDENTITY_STATUS", "REMOTE_USER"))
#: paths whose kind (``_kind``) is remembered (then forgotten all at once), if at most REMEMBERED_LENGTH long
REMEMBERED_PATHS, REMEMBERED_LENGTH = 4096, 2048
#: how long a request waits for the check of the same Basic header that another one started, in seconds
CHECK_WAIT = 5.0
#: the answer of method none to a client off loopback
NOT_LOOPBACK = ("Authentication required: this server runs with AUTH.method none, which serves clients on its own "
                "host only. Configure authentication: AUTH.method local (with AUTH.users_file and nailgun-users) "
                "or keystone in the settings file (docs/operator/auth-and-tls.md)")


def is_loopback(address):
    """Whether a client's address (``REMOTE_ADDR``) is a loopback one, IPv4-mapped IPv6 included;
    an absent, empty or unparsable one (a host name) is not."""
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return False
    return (getattr(ip, "ipv4_mapped", None) or ip).is_loopback


def warn_at_start(auth_settings):
    """Log, once as a server starts, what method ``none`` leaves open."""
    if auth_settings.get("method", "none") != "none":
        return
    if auth_settings.get("allow_insecure_no_auth"):
        LOG.warning("AUTH.method is none and AUTH.allow_insecure_no_auth is true: every client that reaches this "
                    "server may read and change everything, secrets included")
    else:
        LOG.warning("AUTH.method is none: clients on this host may read and change everything, secrets included; "
                    "clients off loopback are refused (401). Set AUTH.method to local or keystone")


def decode_basic(header):
    """(user, password) of an ``Authorization: Basic`` value; AuthenticationFailed if malformed."""
    try:
        decoded = base64.b64decode(header.split(None, 1)[1].strip(), validate=True)
        try:
            text = decoded.decode("utf-8")
        except UnicodeDecodeError:
            text = decoded.decode("latin-1")
        user, password = text.split(":", 1)
    except (IndexError, ValueError):
        raise AuthenticationFailed("the Basic credentials are malformed")
    if not user:
        raise AuthenticationFailed("the Basic credentials name no user")
    return user, password


def _kind(path):
    """(whether ``path`` is public for GET and HEAD, whether it is the token login's)."""
    return bool(PUBLIC_PATH.fullmatch(path)), bool(keystone_v2.TOKENS_PATH.fullmatch(path))


class AuthMiddleware:
    """Authenticates every non-public request with the configured method (see the package docstring)."""

    def __init__(self, app, method, slots, failures, realm="nailgun", credential_cache_ttl=60, local_users=None,
                 keystone=None, allow_insecure_no_auth=False):
        self.app = app
        self.method = method
        self.allow_insecure_no_auth = allow_insecure_no_auth
        self.realm = realm
        self.local_users = local_users
        self.keystone = keystone
        self.cache = credential_cache.CredentialCache(credential_cache_ttl)
        #: local mode: Basic headers found right, with the users file they were checked against
        self.basic_headers = credential_cache.CredentialCache(credential_cache_ttl)
        #: the Basic headers being checked now (by digest): the same header sent meanwhile waits for the outcome
        self._checking = {}
        self._checking_lock = threading.Lock()
        #: password checks run in these few slots (``check_slots``), counted by ``failures`` (``lockout``)
        self.slots = slots
        self.failures = failures
        self.token_app = keystone.token_filter(self._token_confirmed) if keystone else None
        self.login = keystone_v2.TokenIssuer(self) if method != "none" else None
        #: path -> ``_kind(path)``: the same few paths come on every request
        self._kinds = {}
        #: the console's pages, sign-in and sign-out (``nailgun_host.console``)
        self.console = pages.Console(method, self._console_sign_in if self.login else None)

    # -- the answers of refusal -------------------------------------------------------------

    @property
    def challenges(self):
        headers = [("WWW-Authenticate", 'Basic realm="{0}"'.format(self.realm))]
        if self.keystone:
            headers.append(("WWW-Authenticate", 'Keystone uri="{0}"'.format(self.keystone.www_authenticate_uri)))
        return headers

    def unauthorized(self, start_response, reason):
        return json_response(start_response, "401 Unauthorized",
                             "Authentication required: {0}".format(reason), self.challenges)

    @staticmethod
    def unavailable(start_response, reason):
        LOG.error("Authentication unavailable: %s", reason)
        return json_response(start_response, "503 Service Unavailable",
                             "Credentials cannot be checked now (the identity service or the users file "
                             "is unavailable); try again later",
                             [("Retry-After", "10")])

    @staticmethod
    def try_later(start_response, exc):
        return json_response(start_response, exc.status, str(exc), [("Retry-After", str(exc.retry_after))])

    # -- checking credentials ---------------------------------------------------------------

    def password_check(self, user, address, check):
        """``check()``, a bcrypt check or a Keystone password authentication, in a check slot and counted
        as a failure of ``user`` and ``address`` if wrong (``TryLater`` when locked out or no slot is free)."""
        with self.failures.attempt(user, address), self.slots.slot():
            return check()

    def check_password(self, user, password, address=None, users=None):
        """The identity of a user name and password: at once when checked lately (unless the name or
        address is locked), else checked in a slot (Keystone's answers are then remembered briefly). In
        local mode against ``users``, the users file's content the caller holds (else the file now)."""
        self.failures.refuse_if_locked(user, address)
        if self.local_users:
            users = users or self.local_users.content()
            identity = self.local_users.remembered(user, password, users)
            return identity or self.password_check(
                user, address, lambda: self.local_users.check_password(user, password, users))
        identity = self.cache.get(user, password, renew=lambda found: self._renew_password(user, password, address))
        if identity is None:
            checked_at = time.monotonic()
            identity, _access = self.password_check(user, address,
                                                    lambda: self.keystone.check_password(user, password))
            self.cache.put(identity, user, password, checked_at=checked_at)
        return identity

    def _renew_password(self, user, password, address):
        """Check a remembered Keystone user name and password again, in the background (``credential_cache``):
        what Keystone says now counts for the next ``credential_cache_ttl`` seconds from this check."""
        def check():
            checked_at = time.monotonic()
            identity, _access = self.password_check(user, address,
                                                    lambda: self.keystone.check_password(user, password))
            self.cache.put(identity, user, password, checked_at=checked_at)

        credential_cache.renewal(lambda: self._renewing(check, lambda: self.cache.forget(user, password)))

    @staticmethod
    def _renewing(check, forget):
        """Run a renewal's ``check``: a credential found wrong is forgotten at once; one that cannot be checked
        now (the identity service down, the check slots busy) is kept until its time is up, as without renewal."""
        try:
            check()
        except AuthenticationFailed:
            forget()
        except (AuthenticationUnavailable, TryLater) as exc:
            LOG.info("A remembered credential could not be checked again ahead of its expiry: %s", exc)
        except Exception:
            LOG.exception("A remembered credential could not be checked again ahead of its expiry")

    def basic_identity(self, authorization, address):
        """The identity of an ``Authorization: Basic`` value. In local mode the same value found right against
        the password hash the users file holds now for its user is not decoded or checked again (its name's
        lockout still is; its roles are the file's now); a new password (or the user's removal) checks it anew."""
        users = self.local_users.content() if self.local_users else None
        if users is None:
            return self.check_password(*decode_basic(authorization), address)
        identity = self._remembered(authorization, users, address)
        if identity is not None:
            return identity
        # one check per header at a time: when the header's time is up, the clients sending it at once (a
        # server's threads) would all want a check slot, and all but a few get 503
        key = self.basic_headers.digest(authorization)
        with self._checking_lock:
            checking = self._checking.get(key)
            if checking is None:
                self._checking[key] = threading.Event()
        if checking is not None:
            checking.wait(CHECK_WAIT)
            return self._remembered(authorization, users, address) or self.check_password(
                *decode_basic(authorization), address, users)
        try:
            checked_at = time.monotonic()
            user, password = decode_basic(authorization)
            identity = self.check_password(user, password, address, users)
            self.basic_headers.put((user, self.local_users.password_hash(user, users)), authorization,
                                   checked_at=checked_at)
            return identity
        finally:
            with self._checking_lock:
                self._checking.pop(key).set()

    def _remembered(self, authorization, users, address):
        """The identity of a Basic header found right against the password hash ``users`` holds for its user
        (``(user, hash)`` remembered), else None. One in use is renewed: the verdict of a password against a
        hash cannot change, so it is kept for another ``credential_cache_ttl`` without a bcrypt check."""
        def holds(found):
            return self.local_users.password_hash(found[0], users) == found[1]

        remembered = self.basic_headers.get(authorization, renew=lambda found: holds(found) and self.basic_headers.put(
            found, authorization))
        if remembered is None:
            return None
        if not holds(remembered):  # a new password, or the user removed: forgotten, whatever the file becomes
            self.basic_headers.forget(authorization)
            return None
        self.failures.refuse_if_locked(remembered[0], address)
        return self.local_users.identity(remembered[0], users)

    def _pass(self, identity, environ, start_response):
        environ[ENVIRON_KEY] = identity
        environ["REMOTE_USER"] = identity.name
        return self.app(environ, start_response)

    def _token_confirmed(self, environ, start_response):
        from nailgun_host.auth.keystone import identity_from_environ

        try:
            identity = self.keystone.check_project(identity_from_environ(environ))
        except AuthenticationFailed as exc:  # a valid token, but of a project that gives no rights here
            return json_response(start_response, "403 Forbidden", "Not allowed: {0}".format(exc))
        return self._pass(identity, environ, start_response)

    def _keystone_token(self, environ, start_response):
        """Through ``auth_token``; its own refusals (401, 503) are given this API's JSON shape."""
        service = environ.get("HTTP_X_SERVICE_TOKEN", "").strip()  # auth_token validates it too
        if service and not plausible_token(service):
            return self.unauthorized(start_response, "the service token is invalid or expired")
        if service:
            environ["HTTP_X_SERVICE_TOKEN"] = service
        refused = []

        def start(status, headers, exc_info=None):
            if ENVIRON_KEY not in environ and status[:3] in ("401", "503"):
                refused.append(status[:3])
                return lambda data: None
            return start_response(status, headers, exc_info)

        try:
            body = self.token_app(environ, start)
        except self.keystone.unreachable as exc:  # raised past auth_token (e.g. its own login timing out)
            return self.unavailable(start_response, "keystonemiddleware: {0}".format(type(exc).__name__))
        if not refused:
            return body
        if hasattr(body, "close"):
            body.close()
        if refused[0] == "503":
            return self.unavailable(start_response, "keystonemiddleware could not validate a token")
        return self.unauthorized(start_response, "the token is invalid or expired")

    def _kind(self, path):
        kind = self._kinds.get(path)
        if kind is None:
            kind = _kind(path)
            if len(path) <= REMEMBERED_LENGTH:
                if len(self._kinds) >= REMEMBERED_PATHS:
                    self._kinds.clear()
                self._kinds[path] = kind
        return kind

    def _console_sign_in(self, address, user, password):
        """The console's sign-in: the token fuel2's login would get, and its expiry (``pages.Console``)."""
        try:
            token, expires, _identity, _project = self.login.password_token(address, user, password)
        except AuthenticationFailed:
            raise pages.SignInRefused("401 Unauthorized", "Wrong user name or password")
        except TryLater as exc:
            raise pages.SignInRefused(exc.status, "Not checked now: {0}".format(exc))
        except AuthenticationUnavailable:
            raise pages.SignInRefused("503 Service Unavailable", "Credentials cannot be checked now; try again later")
        return token, expires.timestamp()

    def _console_api(self, environ, start_response):
        """A request of the console for the API (``/ui/api/...``): its identity is the cookie's token, and a
        write needs the CSRF token bound to it (``nailgun_host.console.cookies``). It goes on as a request of
        the API with that token, and its refusals challenge nobody (a browser would prompt for a password).
        With method ``none`` the login cookie stands in for a session, so a write still needs its CSRF token."""
        environ["PATH_INFO"] = environ["PATH_INFO"][3:]
        environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + "/ui"
        environ.pop("HTTP_AUTHORIZATION", None)
        environ.pop("HTTP_X_AUTH_TOKEN", None)
        token = cookies.read(environ, cookies.SESSION_COOKIE if self.login else cookies.LOGIN_COOKIE)
        public = self._kind(environ["PATH_INFO"])[0] and environ.get("REQUEST_METHOD") in ("GET", "HEAD")
        if not token and self.login and not public:
            return json_response(start_response, "401 Unauthorized", "Authentication required: sign in")
        if environ.get("REQUEST_METHOD") not in cookies.SAFE_METHODS and not (token and cookies.csrf_holds(
                environ, token)):
            return json_response(start_response, "403 Forbidden",
                                 "The console's CSRF token is missing or is not this session's: reload the page")
        if self.login:
            environ["HTTP_X_AUTH_TOKEN"] = token

        def unchallenged(status, headers, exc_info=None):
            return start_response(status, [h for h in headers if h[0].lower() != "www-authenticate"], exc_info)

        return self(environ, unchallenged, console=True)

    def __call__(self, environ, start_response, console=False):
        if not environ.keys().isdisjoint(_IDENTITY_HEADERS):
            for name in _IDENTITY_HEADERS:
                environ.pop(name, None)
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD")
        if not console and path[:3] == "/ui" and path[3:4] in ("", "/"):
            if path.startswith(CONSOLE_API):
                return self._console_api(environ, start_response)
            return self.console(environ, start_response)
        kind = self._kind(path)
        public = kind[0] and method in ("GET", "HEAD")
        if self.method == "none":
            if public or self.allow_insecure_no_auth or is_loopback(environ.get("REMOTE_ADDR")):
                environ[ENVIRON_KEY] = ANONYMOUS
                return self.app(environ, start_response)
            return json_response(start_response, "401 Unauthorized", NOT_LOOPBACK)
        if kind[1]:
            return self.login(environ, start_response)
        if public:
            return self.app(environ, start_response)
        authorization = environ.get("HTTP_AUTHORIZATION", "")
        token = environ.get("HTTP_X_AUTH_TOKEN", "").strip()
        if token and not plausible_token(token):  # never worth asking Keystone about
            return self.unauthorized(start_response, "the token is invalid or expired")
        if token:
            environ["HTTP_X_AUTH_TOKEN"] = token  # what auth_token reads: the value checked here
        try:
            if authorization[:6].lower() == "basic ":
                identity = self.basic_identity(authorization, environ.get("REMOTE_ADDR"))
            elif token and self.keystone:
                return self._keystone_token(environ, start_response)
            elif token:
                identity, _expires = self.local_users.check_token(token)
            else:
                return self.unauthorized(start_response, "send X-Auth-Token or HTTP Basic credentials")
        except AuthenticationFailed as exc:
            return self.unauthorized(start_response, str(exc))
        except AuthenticationUnavailable as exc:
            return self.unavailable(start_response, str(exc))
        except TryLater as exc:
            return self.try_later(start_response, exc)
        return self._pass(identity, environ, start_response)


def build(app, auth_settings):
    """``app`` behind the authentication ``auth_settings`` (the ``AUTH`` section) asks for."""
    from nailgun_host.auth import local, token_keys

    method = auth_settings.get("method", "none")
    options = dict(realm=auth_settings.get("realm", "nailgun"),
                   credential_cache_ttl=float(auth_settings.get("credential_cache_ttl", 60)),
                   slots=check_slots.CheckSlots(auth_settings["password_checks"] or check_slots.cores(),
                                                auth_settings["password_check_wait_ms"]),
                   failures=lockout.FailedLogins(auth_settings["lockout_failure_attempts"],
                                                 auth_settings["lockout_duration"],
                                                 auth_settings["lockout_address_failure_attempts"]))
    if method == "keystone":
        from nailgun_host.auth.keystone import Keystone

        return AuthMiddleware(app, method, keystone=Keystone(auth_settings.get("keystone") or {}), **options)
    if method == "local":
        users = local.LocalUsers(auth_settings["users_file"], float(auth_settings.get("token_ttl", 3600)),
                                 credential_cache.CredentialCache(options["credential_cache_ttl"]),
                                 token_keys.TokenKeys())
        return AuthMiddleware(app, method, local_users=users, **options)
    return AuthMiddleware(app, "none", allow_insecure_no_auth=bool(auth_settings.get("allow_insecure_no_auth")),
                          **options)
