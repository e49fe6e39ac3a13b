"""RFC 6902 JSON patches checked against a per-path policy and applied all or nothing.

One core for every patchable document (the environment model, ConfigDB values and overrides),
so the same bad patch gets the same answer everywhere. ``jsonpatch`` applies; this module says
what a client's mistake is, never a 500:

- a body that is not a list of operations, an unknown ``op``, a pointer that does not parse,
  ``value`` missing on add/replace/test or ``from`` on move/copy: 400 naming the operation;
- an operation the policy does not allow at its path: 403 naming what is allowed there;
- a ``test`` that fails: 409 (compare-and-swap), never quoting a value (it may be a secret);
- a path (or ``from``) whose target or parent is missing, an index out of range: 404;
- a pointer through a scalar, a non-numeric list index: 409.

Policy: ``{pattern: operations}``; a pattern is a JSON pointer whose segment ``*`` matches one
segment and ``**`` one or more; the most specific pattern (longest literal prefix) decides. A
``move`` needs ``remove`` at ``from`` and ``add`` at ``path``; a ``copy`` needs ``add`` at ``path``.
"""

OPERATIONS = ("add", "remove", "replace", "move", "copy", "test")


def check_operations(patch):
    """400 unless ``patch`` is a well-formed RFC 6902 document (see the module)."""
    raise NotImplementedError


def allowed(policy, pointer, default=OPERATIONS):
    """The operations ``policy`` allows at ``pointer`` (``default`` where no pattern matches)."""
    raise NotImplementedError


def check_policy(patch, policy, default=OPERATIONS):
    """403 listing ``{"op", "path", "allowed"}`` for every operation the policy refuses."""
    raise NotImplementedError


def apply(document, patch):
    """The patched copy of ``document`` (never changed in place), errors mapped as the module says."""
    raise NotImplementedError
