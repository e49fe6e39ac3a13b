"""Clusters (environments): creation with generated credentials, attributes, deletion."""
import copy

from nailgun_host import errors, extensions
from nailgun_host.db import db, get_or_404
from nailgun_host.db.models import Cluster, Node, NodeGroup, Release
from nailgun_host.objects import attributes, config_session, network, pending_changes
from nailgun_host.objects import node as node_obj
from nailgun_host.objects import release as release_obj
from nailgun_host.objects.attributes import generate_attributes, merge_dicts
from nailgun_host.settings import settings
from nailgun_platform import secrets
from nailgun_platform.secrets import masking

STATUSES = ("new", "deployment", "stopped", "operational", "error", "remove", "partially_deployed")
NET_PROVIDERS = ("neutron", "nova_network")


def check_name_free(name, exclude_id=None):
    query = db.query(Cluster.id).filter(Cluster.name == name)
    if exclude_id is not None:
        query = query.filter(Cluster.id != exclude_id)
    if query.first() is not None:
        raise errors.AlreadyExists("Environment with this name '{0}' already exists.".format(name))


def get(cluster_id, lock=False):
    return get_or_404(Cluster, cluster_id, lock=lock)


def list_all():
    return db.query(Cluster).order_by(Cluster.id).all()


def create(data):
    """A cluster on its release (``release_id``, or Nailgun's older ``release``): default node
    group, networks, generated attributes."""
    release_id = data.get("release_id", data.get("release"))
    if release_id is None:
        raise errors.InvalidData("'release_id' is a required property")
    release = db.get(Release, release_id)
    if release is None:
        raise errors.ObjectNotFound("Release with id {0} not found".format(release_id))
    check_name_free(data["name"])
    net_provider = data.get("net_provider", "neutron")
    cluster = Cluster(
        name=data["name"], mode=data.get("mode", "ha_compact"), net_provider=net_provider,
        release_id=release.id, ui_settings=data.get("ui_settings", {}),
        extensions=list(release.extensions or []), status="new", pending_changes=[
            {"name": "attributes", "node_id": None}, {"name": "networks", "node_id": None}])
    cluster.release = release
    db.add(cluster)
    db.flush()
    metadata = release.attributes_metadata or {}
    cluster.editable_attributes = copy.deepcopy(metadata.get("editable", {}))
    cluster.generated_attributes = generate_attributes(
        metadata.get("generated", {}),
        {"settings.MASTER_IP": settings["MASTER_IP"], "cluster.id": cluster.id})
    cluster.networking_parameters = network.default_networking_parameters(cluster, data)
    cluster.node_groups.append(NodeGroup(name="default", is_default=True))
    db.flush()
    network.create_networks_for_group(cluster, cluster.node_groups[0])
    extensions.fire("on_cluster_create", cluster, data)
    return cluster


def update(cluster, data):
    if "name" in data and data["name"] != cluster.name:
        check_name_free(data["name"], cluster.id)
        cluster.name = data["name"]
    for key in ("mode", "ui_settings", "is_customized", "status"):
        if key in data:
            setattr(cluster, key, data[key])
    db.flush()
    return cluster


def delete(cluster):
    """Nodes go back to discovery, extensions clean up after the cluster, its sessions go, then it is removed.

    Its nodes are locked first, in the order every path takes (cluster, nodes, then
    what extensions lock), so a concurrent move of one of them waits instead of deadlocking.
    """
    nodes = node_obj.get_many(sorted(node.id for node in cluster.nodes), lock=True)
    extensions.fire("on_cluster_delete", cluster)
    config_session.delete_scope(config_session.Scope("cluster", cluster.id))
    for node in nodes:
        node_obj.remove_from_cluster(node)
    db.delete(cluster)
    db.flush()


def update_editable(cluster, editable, replace=False, *, authorize_declassified):
    """Set editable attribute values; with ``replace`` the whole tree is taken as given.

    The mask where a secret is stored keeps that secret (``masking.unmask``; 400 where none
    is). A result that would hold a secret value as a plain one (a password field's type
    changed) is first shown to ``authorize_declassified(pointers)``, the caller's check of
    who asks, which raises to refuse; nothing is written before. Returns whether anything
    changed: only a change is a pending change and is told to the extensions, so writing
    back what was read does nothing.
    """
    current = cluster.editable_attributes
    wanted = copy.deepcopy(editable) if replace else merge_dicts(current, editable)
    wanted = masking.unmask(wanted, current, secrets.attribute_secrets(wanted) | secrets.attribute_secrets(current))
    if wanted == current:
        return False
    declassified = attributes.declassified(current, wanted)
    if declassified:
        authorize_declassified(declassified)
    cluster.editable_attributes = wanted
    pending_changes.record(cluster, "attributes")
    extensions.fire("on_cluster_patch_attributes", cluster, {})
    db.flush()
    return True


def is_locked(cluster):
    return cluster.status not in ("new", "stopped")


def to_dict(cluster):
    return {
        "id": cluster.id, "name": cluster.name, "mode": cluster.mode, "status": cluster.status,
        "net_provider": cluster.net_provider, "release_id": cluster.release_id,
        "fuel_version": release_obj.environment_version(cluster.release),
        "is_customized": cluster.is_customized, "is_locked": is_locked(cluster),
        "ui_settings": cluster.ui_settings, "changes": cluster.pending_changes,
        "components": [], "extensions": cluster.extensions,
    }


def nodes_query(cluster_id):
    return db.query(Node).filter(Node.cluster_id == cluster_id).order_by(Node.id)
