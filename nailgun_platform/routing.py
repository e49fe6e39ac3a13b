"""Which route of the URL map answers a request, found as web.py will find it, once per path.

The layers in front of the application that treat some routes' GETs their own way (``read_cache``,
``shared_runs``) ask the one ``Routes`` of the application: the same few paths come over and over, so
each path's route is remembered (up to ``REMEMBERED`` paths, then forgotten all at once). Both key such a
GET the same way (``Routes.read_key``): its path, its query and whether its identity sees secrets.
"""
import re

#: the header that puts a request in a configuration session: its GETs read the session's staged changes
SESSION_HEADER = "HTTP_X_CONFIGURATION_SESSION"
#: paths whose route is remembered (then forgotten all at once), if at most REMEMBERED_LENGTH long
REMEMBERED, REMEMBERED_LENGTH = 4096, 2048


def web_path(environ):
    """The path web.py routes (``web.application.load``), or None where it would take another one."""
    if environ.get("SERVER_SOFTWARE", "").startswith(("lighttpd/", "nginx/")):
        return None
    path = environ.get("PATH_INFO", "")
    try:
        return path.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return path


class Routes:
    """The URL map's entries (``routes``, as web.py takes them: under each prefix in turn, the first that
    matches the whole path); ``index(path)`` is the position in ``routes`` of the one that answers ``path``."""

    def __init__(self, routes, prefixes):
        self.routes = list(routes)
        self._patterns = [(re.compile(prefix + entry["uri"] + r"\Z"), index)
                          for prefix in prefixes for index, entry in enumerate(self.routes)]
        self._found = {}

    def index(self, path):
        """The position of the route that answers ``path`` (a ``web_path``), or None when none does."""
        found = self._found.get(path, self)
        if found is self:
            found = next((index for pattern, index in self._patterns if pattern.match(path)), None)
            if len(path) <= REMEMBERED_LENGTH:
                if len(self._found) >= REMEMBERED:
                    self._found.clear()
                self._found[path] = found
        return found

    def read_key(self, environ, rules, access):
        """``(route's position, (path, query string, whether secrets are shown))`` of a GET outside a configuration
        session whose route has a read rule in ``rules`` (by position; None: not one of those) and whose identity
        ``access(environ, rule)`` lets read (None when no identity or the rule refuses it, else whether it sees
        secrets); else None, and the application answers."""
        if environ.get("REQUEST_METHOD") != "GET" or SESSION_HEADER in environ:
            return None
        path = web_path(environ)
        index = self.index(path) if path is not None else None
        rule = rules[index] if index is not None else None
        if rule is None:
            return None
        try:
            shown = access(environ, rule)
        except Exception:  # a policy file that cannot be used: the application answers 503
            return None
        if shown is None:
            return None
        return index, (path, environ.get("QUERY_STRING", ""), shown)
