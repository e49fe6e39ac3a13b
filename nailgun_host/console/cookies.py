"""The console's cookie: the API token a browser carries under ``/ui/``, and the CSRF token bound to it.

The session cookie holds the token the sign-in obtained (this server's own in local mode, Keystone's in
keystone mode), so checking it is checking that token: it ends when the token does, on every host, and no
session is kept on the server. It is ``HttpOnly`` (page scripts cannot read it), ``SameSite=Strict`` (another
site's pages do not send it), ``Secure`` behind TLS, and its ``Path`` is ``/ui/``: the plain API never takes it.

A write through the console must also carry ``X-CSRF-Token``, a digest of the session token that the shell
gives its own page: another site can make a browser send the cookie in some cases, never read the digest,
and a digest of one user's token does nothing with another's cookie. The sign-in form, which has no session
yet, carries the value of a second cookie (``LOGIN_COOKIE``, double submit).
"""
import base64
import hashlib
import hmac
import http.cookies
import secrets

SESSION_COOKIE = "nailgun_console"
LOGIN_COOKIE = "nailgun_console_login"
CSRF_HEADER = "HTTP_X_CSRF_TOKEN"
PATH = "/ui/"
#: methods that change nothing: they need no CSRF token
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def read(environ, name):
    """The value of the cookie ``name`` the request carries, or None (a malformed header carries none)."""
    header = environ.get("HTTP_COOKIE")
    if not header or name not in header:
        return None
    jar = http.cookies.SimpleCookie()
    try:
        jar.load(header)
    except http.cookies.CookieError:
        return None
    morsel = jar.get(name)
    return morsel.value if morsel is not None and morsel.value else None


def csrf_token(session_token):
    """The CSRF token of a session: a digest of its token, which only the token's holder can compute."""
    digest = hashlib.sha256(b"nailgun console csrf\0" + session_token.encode("utf-8", "replace")).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def same(sent, expected):
    """Whether a token sent is the one expected (compared in constant time; an empty one never is)."""
    return bool(sent) and hmac.compare_digest(sent.encode("utf-8", "replace"), expected.encode("utf-8", "replace"))


def csrf_holds(environ, session_token):
    """Whether the request's ``X-CSRF-Token`` is the session's."""
    return same(environ.get(CSRF_HEADER, ""), csrf_token(session_token))


def new_login_value():
    return secrets.token_urlsafe(32)


def behind_tls(environ):
    """Whether the browser reached the server over TLS: served so, or through a proxy that says so."""
    return environ.get("wsgi.url_scheme") == "https" or \
        environ.get("HTTP_X_FORWARDED_PROTO", "").lower() == "https"


def set_cookie(environ, name, value, max_age):
    """A ``Set-Cookie`` header: ``HttpOnly``, ``SameSite=Strict``, ``Path=/ui/``, ``Secure`` behind TLS;
    ``max_age`` 0 removes the cookie."""
    parts = ["{0}={1}".format(name, value), "Path=" + PATH, "Max-Age={0}".format(max(0, int(max_age))),
             "HttpOnly", "SameSite=Strict"]
    if behind_tls(environ):
        parts.append("Secure")
    return ("Set-Cookie", "; ".join(parts))
