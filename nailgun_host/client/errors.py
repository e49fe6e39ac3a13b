"""The one error the client code raises for what the API (or the login before it) answered."""


class APIError(Exception):
    """An HTTP error answer, or no answer; ``str()`` is the message shown to the user."""

    def __init__(self, status, message, body=None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.body = body
