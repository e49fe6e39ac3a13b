"""Errors that become JSON responses: each one carries its HTTP status.

The platform raises them and the host answers them; ``nailgun_host.errors`` re-exports them
with the host's own.

Raise them anywhere below a handler; the request processor turns them into
``{"message": ..., "errors": [...]}`` with the status, and rolls back.
"""


def first_line(error):
    """The first line of what ``error`` says (for SQLAlchemy's, of the driver's error it wraps), else its type's
    name: for a log line or an answer, without the statement, parameters and details a driver's message goes on
    with. An empty message has no first line to take."""
    said = getattr(error, "orig", None) or error
    lines = str(said).strip().splitlines()
    return lines[0] if lines else type(said).__name__


class NailgunError(Exception):
    status = 500

    def __init__(self, message, errors=None, headers=None):
        super().__init__(message)
        self.message = message
        self.errors = list(errors or [])
        self.headers = dict(headers or {})


class InvalidData(NailgunError):
    status = 400


class Unauthorized(NailgunError):
    status = 401


class NotAllowed(NailgunError):
    status = 403


class ObjectNotFound(NailgunError):
    status = 404


class MethodNotAllowed(NailgunError):
    status = 405

    def __init__(self, message, allowed, errors=None):
        super().__init__(message, errors, {"Allow": ", ".join(allowed)})


class AlreadyExists(NailgunError):
    status = 409


class Conflict(NailgunError):
    status = 409


class PreconditionFailed(NailgunError):
    status = 412


class RequestTooLarge(NailgunError):
    status = 413


class UnsupportedMediaType(NailgunError):
    status = 415

class ServiceUnavailable(NailgunError):
    """The database cannot be used now (down, or not migrated): the client may retry later."""

    status = 503
    #: seconds a client should wait before retrying, sent as ``Retry-After``
    retry_after = 10

    def __init__(self, message, errors=None):
        super().__init__(message, errors, {"Retry-After": str(self.retry_after)})
