"""The one error the client code raises for what the API (or the login before it) answered."""
from nailgun_platform.client.documents import conflict_line, entries


class APIError(Exception):
    """An HTTP error answer, or no answer; ``str()`` is the message shown to the user."""

    def __init__(self, status, message, body=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = body


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
