"""Clusters (environments): creation with generated credentials, attributes, deletion."""
import copy
import random
import secrets
import string
import uuid

from nailgun_host import errors, extensions
from nailgun_host.db import db
from nailgun_host.db.models import Cluster, Node, NodeGroup
from nailgun_host.objects import network, release as release_obj
from nailgun_host.settings import settings

STATUSES = ("new", "deployment", "stopped", "operational", "error", "remove", "partially_deployed")
NET_PROVIDERS = ("neutron", "nova_network")


# -- generated attributes ------------------------------------------------------------------

def _generate(spec, context):
    kind = spec["generator"]
    if kind == "password":
        alphabet = string.ascii_letters + string.digits
        return "".join(secrets.choice(alphabet) for _ in range(int(spec.get("length", 24))))
    if kind == "hexstring":
        return secrets.token_hex(int(spec.get("length", 32)) // 2)
    if kind == "uuid4":
        return str(uuid.uuid4())
    if kind == "random_int":
        return random.SystemRandom().randint(1, 2 ** 31 - 1)
    if kind == "from_settings":
        return settings.get(spec["generator_arg"])
    raise ValueError("unknown attribute generator {0!r}".format(kind))


def generate_attributes(template, context):
    """Fill a ``generated`` template: generators run once, ``{settings.X}`` strings expand."""
    if isinstance(template, dict):
        if "generator" in template:
            return _generate(template, context)
        return {key: generate_attributes(value, context) for key, value in template.items()}
    if isinstance(template, list):
        return [generate_attributes(value, context) for value in template]
    if isinstance(template, str) and "{" in template:
        return _expand(template, context)
    return template


def _expand(text, context):
    for name, value in context.items():
        text = text.replace("{" + name + "}", str(value))
    return text


def attribute_values(editable):
    """{section: {key: value}} of editable attributes (metadata left out)."""
    return {section: {key: field.get("value") for key, field in fields.items()
                      if key != "metadata" and isinstance(field, dict)}
            for section, fields in editable.items() if isinstance(fields, dict)}


# -- lifecycle -----------------------------------------------------------------------------

def check_name_free(name, exclude_id=None):
    query = db.query(Cluster.id).filter(Cluster.name == name)
    if exclude_id is not None:
        query = query.filter(Cluster.id != exclude_id)
    if query.first() is not None:
        raise errors.AlreadyExists("Environment with this name '{0}' already exists.".format(name))


def create(data):
    """A cluster on its release: default node group, networks, generated attributes."""
    release = db.get(release_obj.Release, data["release_id"])
    if release is None:
        raise errors.ObjectNotFound("Release with id {0} not found".format(data["release_id"]))
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
    group = NodeGroup(name="default", is_default=True)
    cluster.node_groups.append(group)
    db.flush()
    network.create_networks_for_group(cluster, group)
    extensions.fire("on_cluster_create", cluster, data)
    return cluster


def create_node_group(cluster, name):
    if any(g.name == name for g in cluster.node_groups):
        raise errors.AlreadyExists("Node group '{0}' already exists in environment {1}".format(name, cluster.id))
    group = NodeGroup(name=name, is_default=False)
    cluster.node_groups.append(group)
    db.flush()
    network.create_networks_for_group(cluster, group)
    extensions.fire("on_nodegroup_create", group)
    return group


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
    """Nodes go back to discovery, extensions clean up after the cluster, then it is removed."""
    extensions.fire("on_cluster_delete", cluster)
    for node in list(cluster.nodes):
        from nailgun_host.objects import node as node_obj
        node_obj.remove_from_cluster(node)
    db.delete(cluster)
    db.flush()


def update_editable(cluster, editable, replace=False):
    """Set editable attribute values; with ``replace`` the whole tree is taken as given."""
    if replace:
        cluster.editable_attributes = copy.deepcopy(editable)
    else:
        cluster.editable_attributes = merge_dicts(cluster.editable_attributes, editable)
    if {"name": "attributes", "node_id": None} not in cluster.pending_changes:
        cluster.pending_changes = cluster.pending_changes + [{"name": "attributes", "node_id": None}]
    extensions.fire("on_cluster_patch_attributes", cluster, {})
    db.flush()


def merge_dicts(base, update):
    """A deep merge: dicts merge key by key, anything else is replaced."""
    result = copy.deepcopy(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge_dicts(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


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


# -- roles ---------------------------------------------------------------------------------

def validate_roles(cluster, roles):
    """Nailgun's role checks: known roles, no conflicts, restrictions met."""
    metadata = cluster.release.roles_metadata or {}
    unknown = sorted(set(roles) - set(metadata))
    if unknown:
        raise errors.InvalidData("{0} are not valid roles for node in environment {1}".format(
            unknown, cluster.id))
    for role in roles:
        for other in metadata[role].get("conflicts") or []:
            if other in roles:
                raise errors.InvalidData("Role '{0}' in conflict with role '{1}'.".format(role, other))
    values = attribute_values(cluster.editable_attributes)
    for role in roles:
        for restriction in metadata[role].get("restrictions") or []:
            if _restriction_holds(restriction.get("condition", ""), values):
                raise errors.InvalidData("Role '{0}' restrictions mismatch: {1}".format(
                    role, restriction.get("message", restriction.get("condition"))))


def _restriction_holds(condition, values):
    """Conditions of the form ``settings:section.key.value == <literal>``."""
    left, _, right = condition.partition("==")
    left, right = left.strip(), right.strip()
    if not left.startswith("settings:") or not left.endswith(".value"):
        return False
    section, _, key = left[len("settings:"):-len(".value")].partition(".")
    literal = {"true": True, "false": False, "null": None}.get(right, right.strip("'\""))
    return values.get(section, {}).get(key) == literal


def nodes_query(cluster_id):
    return db.query(Node).filter(Node.cluster_id == cluster_id).order_by(Node.id)
