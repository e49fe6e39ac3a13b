"""The environment model in configuration sessions (seed 000: "saves changes to environment model in
the specified session").

A session of a cluster stages the model as one document (key ``model``): the parts a patch may
change (name, editable attribute values, networking parameters, node groups), as the client left
them. A secret value the client did not change is kept as the mask, so the secret is not copied
into the session and resolves to what is stored; one it changed is sealed. Every staged read
shows the staged parts over the current model, whose other parts (status, nodes, generated
values) are always the current ones.

``base``, taken at the first staging, tells whether the model changed under the session: a
digest of the masked editable parts (nothing secret to guess from) and the secret values then,
sealed. A deploy re-applies the difference current -> staged through ``environment_model``
with every check of a direct PATCH (policy with today's cluster status, schema, network rules),
so a change that is no longer allowed is refused then, and nothing lands.
"""
import copy
import hashlib
import json

from nailgun_host.public import config_session_obj as config_session, db
from nailgun_platform.public import keys, masking, pointers, sealing, secrets
from nailgun_ext_upgrade.objects import environment_model

EXTENSION = "cluster_upgrade"
KEY = "model"
DESCRIPTOR = {"type": "model"}


def editable(model):
    """The parts of the model a patch may change: what a session stages."""
    return {"name": model["name"], "attributes": {"editable": model["attributes"]["editable"]},
            "networking_parameters": model["networking_parameters"], "node_groups": model["node_groups"]}


def _with(model, part):
    result = dict(model, **{key: value for key, value in part.items() if key != "attributes"})
    result["attributes"] = dict(model["attributes"], editable=part["attributes"]["editable"])
    return result


def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def diff(before, after, path=""):
    """RFC 6902 ``before`` -> ``after``: members added or removed, values and whole lists replaced, which
    is what the model's policy allows where a patch may go (never a move from elsewhere)."""
    if isinstance(before, dict) and isinstance(after, dict):
        ops = []
        for key in before:
            if key not in after:
                ops.append({"op": "remove", "path": pointers.child(path, key)})
        for key, value in after.items():
            if key not in before:
                ops.append({"op": "add", "path": pointers.child(path, key), "value": copy.deepcopy(value)})
            else:
                ops.extend(diff(before[key], value, pointers.child(path, key)))
        return ops
    return [] if _canonical(before) == _canonical(after) else [
        {"op": "replace", "path": path, "value": copy.deepcopy(after)}]


def sections(patch):
    """The sections a patch touches, as JSON pointers (like ConfigDB's ``changed_keys``):
    ``/attributes/editable/<group>``, else the model's top-level key."""
    found = set()
    for op in patch:
        parts = pointers.tokens(op["path"])
        found.add("".join("/" + pointers.escape(part) for part in (parts[:3] if parts[:1] == ["attributes"]
                                                                   else parts[:1])))
    return sorted(found)


def _digest(model, secret):
    return hashlib.sha256(_canonical(masking.mask(editable(model), secret)).encode("utf-8")).hexdigest()


def _secret_values(model, secret):
    return {pointer: pointers.get(model, pointer) for pointer in sorted(secret)
            if pointers.get(model, pointer, None) is not None}


def _base(model, secret):
    values = _secret_values(model, secret)
    sealed = sealing.seal(values, {pointers.child("", pointer) for pointer in values}, secrets.keyset())
    return {"digest": _digest(model, secret), "secrets": sealed}


def changed(change, current, secret):
    """Whether the model changed since ``change`` was first staged (its secrets included)."""
    base = change.base or {}
    if base.get("digest") != _digest(current, secret):
        return True
    try:
        return sealing.unseal(base.get("secrets") or {}, secrets.keyset()) != _secret_values(current, secret)
    except keys.UndecryptableValue:
        return True  # sealed under a key since retired: whether it changed is unknown, so it did


def conflict(cluster):
    """The 409 entry of a model changed under a session."""
    return {"document": dict(DESCRIPTOR), "revision": cluster.revision, "author": None}


def staged_change(session):
    return config_session.staged(session, EXTENSION, KEY)


def _resolved(change, current, secret):
    """The staged model in clear (for the server): its masks hold the current secret values."""
    part = change.data
    try:
        part = masking.unmask(part, editable(current), secret)
    except masking.MaskWithoutValue:
        pass  # the secret is gone: only a read sees this (a deploy finds the model changed first)
    return _with(current, part)


def view(session, cluster):
    """The model as a request with ``session`` (or None) sees it: staged over current while it is open."""
    current = environment_model.build(cluster)
    change = staged_change(session) if session is not None and session.state == "open" else None
    return current if change is None else _resolved(change, current, environment_model.editable_secrets(cluster))


def stage(session, cluster, operations, seen, *, authorize_declassified):
    """Stage a patch of the model in ``session`` (open and locked; the cluster row locked first);
    ``seen`` is the model as the client sees it (``environment_model.patched``'s ``view``).

    Every check of a direct PATCH runs: the policy, the schema, the mask, and the writes themselves
    (network rules, name, who may declassify) inside a savepoint that is always rolled back.
    Returns the staged model; a model changed since the first staging is 409 and the session invalid.
    """
    current = environment_model.build(cluster)
    secret = environment_model.editable_secrets(cluster)
    change = staged_change(session)
    if change is not None and changed(change, current, secret):
        raise config_session.invalidate(session, [conflict(cluster)])
    base = current if change is None else _resolved(change, current, secret)
    savepoint = db.begin_nested()
    try:
        before, after = environment_model.patched(cluster, operations, seen, base)
        environment_model.write(cluster, before, after, authorize_declassified=authorize_declassified)
    finally:
        savepoint.rollback()
    db.expire_all()
    part, now = editable(after), editable(current)
    if part == now:
        config_session.unstage(session, EXTENSION, KEY)
        return current
    kept = {pointer for pointer in secret if pointers.get(part, pointer, None) is not None
            and pointers.get(part, pointer) == pointers.get(now, pointer, None)}
    data = sealing.seal(masking.mask(part, kept), secret - kept, secrets.keyset())
    config_session.stage(session, EXTENSION, KEY, dict(DESCRIPTOR), data, sections(diff(now, part)),
                         base=_base(current, secret) if change is None else change.base)
    return _with(current, part)


def conflicts(session, cluster, changes):
    """``session_conflicts`` of the model: [its 409 entry] when it changed since staged."""
    if not any(change.document_key == KEY for change in changes):
        return []
    current = environment_model.build(cluster)
    return [conflict(cluster)] if changed(staged_change(session), current,
                                          environment_model.editable_secrets(cluster)) else []


def pending(session, cluster, change):
    """``(patch, secret)``: current -> staged, and the pointers of the model's secret values."""
    current = environment_model.build(cluster)
    secret = environment_model.editable_secrets(cluster)
    return diff(editable(current), editable(_resolved(change, current, secret))), secret


def deploy(session, cluster, change, *, authorize_declassified):
    """Apply the staged model to the current one with every check of a direct PATCH; the history entry."""
    patch, secret = pending(session, cluster, change)
    if patch:
        environment_model.apply_patch(cluster, patch, authorize_declassified=authorize_declassified)
    return {"document": dict(DESCRIPTOR), "changed_keys": sections(patch), "patch": patch,
            "secrets": sorted(secret)}
