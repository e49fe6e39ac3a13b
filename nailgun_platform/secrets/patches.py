"""Secrets inside RFC 6902 patches: which op values are a document's secret leaves.

A deployment's history keeps each document's patch (old -> new). A secret set by the deploy is
in an op's ``value``, so the patch must be sealed at rest and masked for readers exactly where
the new document's secrets are. ``patch_secrets`` maps the document's secret pointers onto the
patch; ``sealing.seal`` and ``masking.mask`` then work on the patch as on any document.
"""
from nailgun_platform.secrets import pointers


def patch_secrets(patch, secret):
    """The pointers, into ``patch`` (a list of operations), of the leaves of op values that sit at a
    pointer of ``secret`` (the secret leaves of the document the patch produces).

    An op value that lands in a list through ``-`` (append) cannot be placed exactly: every leaf of it
    counts as secret when the list holds any secret. A value that is itself under a secret leaf's
    pointer (a secret replaced whole) is secret whole.
    """
    found = set()
    for index, op in enumerate(patch if isinstance(patch, list) else []):
        if not isinstance(op, dict) or "value" not in op or not isinstance(op.get("path"), str):
            continue
        path, value = op["path"], op["value"]
        base = "/{0}/value".format(index)
        if path.endswith("/-"):
            parent = path[:-2]
            if any(s.startswith(parent + "/") for s in secret):
                found.update(base + leaf for leaf in pointers.leaves(value))
            continue
        for leaf in pointers.leaves(value):
            full = path + leaf
            if full in secret or any(full.startswith(s + "/") for s in secret):
                found.add(base + leaf)
    return found
