"""Errors that become JSON responses: the platform's (``nailgun_platform.errors``), and the host's own.

Raise them anywhere below a handler; the request processor turns them into
``{"message": ..., "errors": [...]}`` with the status, and rolls back.
"""
from nailgun_platform.errors import (  # noqa: F401 (re-exported)
    AlreadyExists, Conflict, InvalidData, MethodNotAllowed, NailgunError, NotAllowed, ObjectNotFound,
    PreconditionFailed, RequestTooLarge, ServiceUnavailable, Unauthorized, UnsupportedMediaType, first_line)


class CannotAssignIP(InvalidData):
    """No free address is left in a network, or a given address lies outside it."""


class RunningTaskExists(Conflict):
    """Another provisioning or deployment task is still running for the cluster."""
