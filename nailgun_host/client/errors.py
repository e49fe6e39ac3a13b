"""The one error the client code raises for what the API (or the login before it) answered."""
from nailgun_host.client.documents import conflict_line, entries


class APIError(Exception):
    """An HTTP error answer, or no answer; ``str()`` is the message shown to the user."""

    def __init__(self, status, message, body=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = body


def details(errors):
    """Lines for the entries of an error's ``errors`` that name what to fix: the documents a deploy
    conflicts with (also inside an invalid session's entry) and the operations a patch policy allows."""
    lines = []
    for entry in entries(errors):
        if "document" in entry:
            lines.append(conflict_line(entry))
        elif isinstance(entry.get("conflicts"), list):
            lines += details(entry["conflicts"])
        elif "op" in entry and isinstance(entry.get("allowed"), list):
            lines.append("{0} {1}: allowed {2}".format(entry["op"], entry.get("path"),
                                                       ", ".join(map(str, entry["allowed"])) or "none"))
    return lines
