"""Pending changes: what of a cluster or node changed since it was last deployed (Nailgun's ``changes``)."""


def record(owner, name, node_id=None):
    """Note once that ``name`` (attributes, networks, interfaces, disks) of ``owner`` changed.

    ``owner`` is a cluster or a node; both keep the list Nailgun serves as ``changes``.
    The list is replaced, not appended to, so the JSON column sees the change.
    """
    change = {"name": name, "node_id": node_id}
    if change not in owner.pending_changes:
        owner.pending_changes = owner.pending_changes + [change]
