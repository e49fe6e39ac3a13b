"""Node groups (racks): each has its own copy of the cluster's networks."""
from nailgun_host import errors, extensions
from nailgun_host.db import db, get_or_404
from nailgun_host.db.models import NodeGroup
from nailgun_host.objects import network


def get(group_id, lock=False):
    return get_or_404(NodeGroup, group_id, lock=lock)


def list_all(cluster_id=None):
    groups = db.query(NodeGroup).order_by(NodeGroup.id)
    return groups.all() if cluster_id is None else groups.filter(NodeGroup.cluster_id == cluster_id).all()


def create(cluster, name):
    if any(g.name == name for g in cluster.node_groups):
        raise errors.AlreadyExists("Node group '{0}' already exists in environment {1}".format(name, cluster.id))
    group = NodeGroup(name=name, is_default=False)
    cluster.node_groups.append(group)
    db.flush()
    network.create_networks_for_group(cluster, group)
    extensions.fire("on_nodegroup_create", group)
    return group


def update(group, data):
    """Rename the group (the only field that changes)."""
    name = data["name"]
    if db.query(NodeGroup.id).filter(NodeGroup.cluster_id == group.cluster_id, NodeGroup.name == name,
                                     NodeGroup.id != group.id).first():
        raise errors.AlreadyExists("Node group '{0}' already exists".format(name))
    group.name = name
    db.flush()
    return group


def delete(group):
    if group.is_default:
        raise errors.InvalidData("Default node group cannot be deleted")
    extensions.fire("on_nodegroup_delete", group)
    db.delete(group)
    db.flush()


def to_dict(group):
    return {"id": group.id, "cluster_id": group.cluster_id, "name": group.name,
            "is_default": group.is_default}
