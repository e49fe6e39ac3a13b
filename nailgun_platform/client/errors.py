"""The one error the client code raises for what the API (or the login before it) answered."""
from nailgun_platform.client import failures
from nailgun_platform.client.documents import conflict_line, entries


class APIError(Exception):
    """An HTTP error answer, or no answer; ``str()`` is the message shown to the user. ``cause`` names why
    there was no answer (``failures.Failure.cause``: "refused", "timeout", "hostname mismatch", ...);
    ``retry_after`` the seconds of the answer's ``Retry-After``, if it had one (in seconds)."""

    def __init__(self, status, message, body=None, cause=None, retry_after=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = body
        self.cause = cause
        self.retry_after = retry_after


def passes(error):
    """Whether an APIError may pass by itself, so that asking again later makes sense: the server's 5xx, or
    no answer for a cause in ``failures.PASSING`` (refused, timeout); not a 4xx nor a TLS failure."""
    if error.status is not None:
        return error.status >= 500
    return error.cause in failures.PASSING


def details(errors):
    """Lines for the entries of an error's ``errors`` that name what to fix: the documents a deploy
    conflicts with (also inside an invalid session's entry). A patch policy's 403 needs none: its
    message names the operation, the path and the allowed operations."""
    lines = []
    for entry in entries(errors):
        if "document" in entry:
            lines.append(conflict_line(entry))
        elif isinstance(entry.get("conflicts"), list):
            lines += details(entry["conflicts"])
    return lines
