"""Which route of the URL map answers a request, found as web.py will find it, once per path.

The layers in front of the application that treat some routes' GETs their own way (``read_cache``,
``shared_runs``) ask the one ``Routes`` of the application: the same few paths come over and over, so
each path's route is remembered (up to ``REMEMBERED`` paths, then forgotten all at once).
"""
import re

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
