"""What a session's deploy changed, kept and shown without letting a secret out: the mechanics every
extension's staged documents share (the host's ``objects.config_session`` keeps the sessions themselves).

An entry is ``{"document": descriptor, "changed_keys", "patch": RFC 6902 old->new, "secrets": pointers of the
new document's secret leaves}``; its op values at secret leaves are sealed at rest and masked for whoever
may not see them.
"""
from nailgun_platform import secrets
from nailgun_platform.secrets import masking, sealing
from nailgun_platform.secrets.patches import patch_secrets


def _history_entry(entry):
    return {"document": entry.get("document") or {}, "changed_keys": list(entry.get("changed_keys") or []),
            "patch": list(entry.get("patch") or []), "secrets": sorted(entry.get("secrets") or [])}


def seal_history(entries):
    """What a deploy changed, as stored: each op value at a secret leaf of its document a Fernet token."""
    entries = [_history_entry(entry) for entry in entries]
    secret = {"/{0}/patch{1}".format(index, pointer) for index, entry in enumerate(entries)
              for pointer in patch_secrets(entry["patch"], set(entry["secrets"]))}
    return sealing.seal(entries, secret, secrets.keyset())


def masked_patch(patch, secret):
    """``(patch, hidden)``: ``patch`` with its op values at the ``secret`` leaves of its document masked."""
    pointers = patch_secrets(patch, set(secret))
    return (masking.mask(patch, pointers), True) if pointers else (patch, False)
