"""The client toolkit's face: what the extensions' client commands (their ``cli`` modules) import.

Client code runs on an operator's machine with ``requests``, ``keystoneauth1``, ``cliff`` and
``PyYAML`` only: it must never import server code (the ``clients-without-server`` contract), so the
toolkit is a face of its own rather than a part of ``nailgun_platform.public``, whose modules need
SQLAlchemy and the web framework. Extensions import this package and nothing below it (the
``extensions-import-faces`` contract); ``__all__`` is the list.
"""
from nailgun_platform.client.base import ClientMixin, is_masked
from nailgun_platform.client.documents import JSONValue, entries
from nailgun_platform.client.errors import APIError, passes
from nailgun_platform.client.patches import MEDIA_TYPE, PatchFileError, read_patch
from nailgun_platform.client.sessions import (Deployments, SessionAbandon, SessionDeploy, SessionDiff, SessionList,
                                              SessionOpen, SessionOption, SessionShow)

__all__ = [
    # talking to the API
    "APIError", "ClientMixin", "is_masked", "passes",
    # showing answers
    "JSONValue", "entries",
    # patch files
    "MEDIA_TYPE", "PatchFileError", "read_patch",
    # configuration sessions: the option of every writing command, and the session commands
    "SessionOption", "SessionOpen", "SessionList", "SessionShow", "SessionDiff", "SessionDeploy", "SessionAbandon",
    "Deployments",
]
