"""What ``/ui/`` serves besides the API: the shell page, its static files, sign-in and sign-out.

The shell is one page for every screen (the screens are drawn by ``static/console.js`` from the API's
answers). It is sent with the CSRF token of the session its cookie names, and with a sign-in form whose
hidden field matches the login cookie. Every answer carries a strict Content-Security-Policy: scripts,
styles, images and requests from this server only, no inline script or style, no framing.
"""
import hashlib
import html
import json
import mimetypes
import os
import re
import string
import time
import urllib.parse

from nailgun_host.console import cookies

STATIC = os.path.join(os.path.dirname(__file__), "static")
SHELL = os.path.join(STATIC, "index.html")
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                           "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
SECURITY_HEADERS = [("Content-Security-Policy", CONTENT_SECURITY_POLICY), ("X-Content-Type-Options", "nosniff"),
                    ("Referrer-Policy", "no-referrer"), ("X-Frame-Options", "DENY")]
#: the largest sign-in form read
MAX_FORM = 8 * 1024
#: how long the login cookie lives (seconds) after the last shell: longer than a session (AUTH.token_ttl), so a
#: page whose session ended signs in again from the form it shows
LOGIN_COOKIE_SECONDS = 7 * 24 * 3600
#: where a sign-in sends the browser back to: a page of the console (the hash it was on)
NEXT = re.compile(r"#/[\x21-\x7e]{0,2000}")
METHOD_NAMES = {"none": "off (loopback only)", "local": "local users", "keystone": "Keystone"}


def _load(path):
    with open(path, "rb") as stream:
        return stream.read()


def _static_files():
    """name -> (bytes, content type, ETag) of every file under ``static/`` but the shell, read once."""
    found = {}
    for name in os.listdir(STATIC):
        path = os.path.join(STATIC, name)
        if name != "index.html" and os.path.isfile(path):
            kind = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}.get(
                os.path.splitext(name)[1]) or mimetypes.guess_type(name)[0] or "application/octet-stream"
            body = _load(path)
            found[name] = (body, kind + ("; charset=utf-8" if kind.startswith("text/") else ""),
                           '"{0}"'.format(hashlib.sha256(body).hexdigest()[:32]))
    return found


class SignInRefused(Exception):
    """A sign-in that did not get a token: the status and the message the form shows."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


class Console:
    """The WSGI answer of ``/ui/`` paths other than ``/ui/api/``. ``sign_in(address, user, password)`` gives
    ``(token, expiry as a Unix time)`` or raises ``SignInRefused``; None: authentication is off, nobody signs in.
    """

    def __init__(self, method, sign_in):
        self.method = method
        self.sign_in = sign_in
        self.shell = string.Template(_load(SHELL).decode())
        self.static = _static_files()

    @staticmethod
    def _answer(start_response, status, body, content_type="text/html; charset=utf-8", headers=()):
        body = body if isinstance(body, bytes) else body.encode()
        start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body))),
                                ("Cache-Control", "no-store")] + SECURITY_HEADERS + list(headers))
        return [body]

    def _error(self, start_response, status, message, headers=()):
        body = json.dumps({"message": message, "errors": []})
        return self._answer(start_response, status, body, "application/json", headers)

    def _redirect(self, start_response, location, headers=()):
        return self._answer(start_response, "303 See Other", b"", headers=[("Location", location)] + list(headers))

    def _page(self, environ, start_response, status="200 OK", error=""):
        """The shell: the session's CSRF token if a cookie names one, and the sign-in form."""
        # the login cookie is renewed with every shell: a page left open until its session ends still signs in
        login_value = cookies.read(environ, cookies.LOGIN_COOKIE) or cookies.new_login_value()
        headers = [cookies.set_cookie(environ, cookies.LOGIN_COOKIE, login_value, LOGIN_COOKIE_SECONDS)]
        # with authentication off there is no session: the login cookie's value stands in for its token
        session = cookies.read(environ, cookies.SESSION_COOKIE) if self.sign_in else login_value
        signed_in = session is not None
        body = self.shell.substitute(
            csrf=html.escape(cookies.csrf_token(session) if session else ""),
            login_csrf=html.escape(login_value),
            auth=html.escape(self.method),
            auth_name=html.escape(METHOD_NAMES.get(self.method, self.method)),
            error=html.escape(error),
            signin_hidden="" if not signed_in or error else "hidden",
            app_hidden="hidden" if not signed_in or error else "")
        return self._answer(start_response, status, body, headers=headers)

    def _form(self, environ):
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length <= 0 or length > MAX_FORM:
            return {}
        try:
            text = environ["wsgi.input"].read(length).decode("utf-8")
            return {key: values[0] for key, values in urllib.parse.parse_qs(text, max_num_fields=10).items()}
        except (UnicodeDecodeError, ValueError):
            return {}

    def _sign_in(self, environ, start_response):
        if self.sign_in is None:
            return self._redirect(start_response, cookies.PATH)
        form = self._form(environ)
        login_value = cookies.read(environ, cookies.LOGIN_COOKIE)
        if not login_value or not cookies.same(form.get("csrf", ""), login_value):
            return self._page(environ, start_response, "403 Forbidden",
                              "The sign-in form has expired or was not sent from this console: sign in again")
        user, password = form.get("username", ""), form.get("password", "")
        if not user:
            return self._page(environ, start_response, "400 Bad Request", "Give a user name")
        try:
            token, expires = self.sign_in(environ.get("REMOTE_ADDR"), user, password)
        except SignInRefused as exc:
            return self._page(environ, start_response, exc.status, exc.message)
        back = form.get("next", "")
        return self._redirect(start_response, cookies.PATH + (back if NEXT.fullmatch(back) else ""), [
            cookies.set_cookie(environ, cookies.SESSION_COOKIE, token, expires - time.time()),
            cookies.set_cookie(environ, cookies.LOGIN_COOKIE, "", 0)])

    def _sign_out(self, environ, start_response):
        """Remove the session cookie, for a form that carries its CSRF token. A post without the cookie (another
        site's form: the browser does not send a SameSite=Strict cookie along) changes nothing."""
        form = self._form(environ)
        session = cookies.read(environ, cookies.SESSION_COOKIE)
        if session is None:
            return self._redirect(start_response, cookies.PATH)
        if not cookies.same(form.get("csrf", ""), cookies.csrf_token(session)):
            return self._page(environ, start_response, "403 Forbidden",
                              "The sign-out form was not sent from this console")
        return self._redirect(start_response, cookies.PATH,
                              [cookies.set_cookie(environ, cookies.SESSION_COOKIE, "", 0)])

    def __call__(self, environ, start_response):
        path, method = environ.get("PATH_INFO", ""), environ.get("REQUEST_METHOD", "")
        if path == "/ui":
            return self._redirect(start_response, cookies.PATH)
        name = path[len(cookies.PATH):]
        if name in ("", "sign-in", "sign-out"):
            if name and method == "POST":
                return (self._sign_in if name == "sign-in" else self._sign_out)(environ, start_response)
            if method in ("GET", "HEAD") and not name:
                return self._page(environ, start_response)
            return self._error(start_response, "405 Method Not Allowed", "Method {0} is not allowed".format(method),
                               [("Allow", "POST" if name else "GET, HEAD")])
        found = self.static.get(name[7:]) if name.startswith("static/") else None
        if found is None:
            return self._error(start_response, "404 Not Found", "Resource not found: {0}".format(path))
        if method not in ("GET", "HEAD"):
            return self._error(start_response, "405 Method Not Allowed", "Method {0} is not allowed".format(method),
                               [("Allow", "GET, HEAD")])
        body, kind, etag = found
        if etag in environ.get("HTTP_IF_NONE_MATCH", ""):
            start_response("304 Not Modified", [("ETag", etag), ("Cache-Control", "no-cache")] + SECURITY_HEADERS)
            return []
        start_response("200 OK", [("Content-Type", kind), ("Content-Length", str(len(body))), ("ETag", etag),
                                  ("Cache-Control", "no-cache")] + SECURITY_HEADERS)
        return [body]
