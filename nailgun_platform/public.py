"""The platform's face: the shared mechanisms an extension's server code may use.

Extensions import this module (and ``nailgun_host.public``, ``nailgun_platform.client``), never a
module below it: the import-linter contract ``extensions-import-faces`` says so, and ``__all__`` is the
list. The host imports the platform's modules directly; the platform imports neither the host nor an
extension (``platform-beneath-host``): what it needs of them is handed in.
"""
from nailgun_platform import notify, patching, secrets, user_schemas
from nailgun_platform.clock import now
from nailgun_platform.etags import none_match
from nailgun_platform.json_equality import type_strict_equal
from nailgun_platform.json_rules import validate_schema
from nailgun_platform.sealed import SealedJSON
from nailgun_platform.session_history import masked_patch
from nailgun_platform.secrets import classify, keys, masking, pointers, sealing

__all__ = [
    # secrets: which leaves are secret, their keys, how they are stored and how they read
    "secrets", "classify", "keys", "masking", "pointers", "sealing", "SealedJSON",
    # JSON: patches, the type-strict equality (a patch's own, RFC 6902's, is ``patching``'s), the schema check,
    # user schemas
    "patching", "type_strict_equal", "validate_schema", "user_schemas",
    # the one clock (naive UTC, as every timestamp column stores it)
    "now",
    # HTTP answers: If-None-Match
    "none_match",
    # configuration sessions: a deploy's history, its secrets masked
    "masked_patch",
    # notifications (the change feed's wake-ups)
    "notify",
]
