"""Request checks of the upgrade resources; every one runs before the first write.

Messages follow the original extension where octane or its tests relied on them.
"""
from nailgun_host.public import (Cluster, Release, attributes_obj, cluster_obj, db, errors, node_obj, release_obj,
                                 settings, task_obj, validate_roles)
from nailgun_ext_upgrade.objects import relation as relation_obj
from nailgun_ext_upgrade.objects import upgrade

ASSIGNABLE_STATUSES = ("ready", "provisioned", "error")


# -- clone -----------------------------------------------------------------------------------

def check_not_in_upgrade(cluster):
    if relation_obj.is_cluster_in_upgrade(cluster.id):
        raise errors.MethodNotAllowed(
            "Upgrade is not possible because of the original cluster ({0}) is already involved "
            "in the upgrade routine.".format(cluster.id), ["POST"])


def check_release_upgrade(orig_release, new_release):
    if not release_obj.is_deployable(new_release, settings["FEATURE_GROUPS"]):
        raise errors.InvalidData(
            "Upgrade to the given release ({0}) is not possible because this release is deprecated "
            "and cannot be installed.".format(new_release.id))
    if not release_obj.is_newer(new_release, orig_release):
        raise errors.InvalidData(
            "Upgrade to the given release ({0}) is not possible because this release is equal or "
            "lower than the release of the original cluster.".format(new_release.id))
    if new_release.operating_system != orig_release.operating_system:
        raise errors.InvalidData(
            "Changing of operating system is not possible during upgrade (from {0} to {1}).".format(
                orig_release.operating_system, new_release.operating_system))


def _role_mappings(release):
    return {(role["id"], role["default_mapping"]) for role in release.network_roles_metadata or []}


def check_network_roles(orig, new_release):
    """Each network role of the orig must map to the same network in the new release."""
    lost = sorted(_role_mappings(orig.release) - _role_mappings(new_release))
    if lost:
        raise errors.InvalidData("Network changes during upgrade is not supported.",
                                 ["network role '{0}' mapped to '{1}'".format(*item) for item in lost])


def validate_clone(orig, data, *, authorize_declassified):
    """(new release, upgraded attributes) once every clone check has passed.

    A seed whose release would hold one of the orig's secret values as a plain one (a field
    without the type ``password``) is first shown to ``authorize_declassified(pointers)``.
    """
    check_not_in_upgrade(orig)
    cluster_obj.check_name_free(data["name"])
    new_release = db.get(Release, data["release_id"])
    if new_release is None:
        raise errors.ObjectNotFound(
            "Object 'Release' with UID={0} is not found in DB".format(data["release_id"]))
    check_release_upgrade(orig.release, new_release)
    check_network_roles(orig, new_release)
    attributes = upgrade.upgraded_attributes(orig, new_release)
    release_editable = (new_release.attributes_metadata or {}).get("editable", {})
    incompatible = upgrade.incompatible_attributes(attributes["editable"], release_editable)
    if incompatible:
        raise errors.Conflict(
            "Environment {0} has attributes incompatible with the upgrade to release {1}".format(
                orig.id, new_release.id), incompatible)
    declassified = attributes_obj.declassified(
        attributes["editable"], upgrade.merge_editable(attributes["editable"], release_editable))
    if declassified:
        authorize_declassified({"/editable" + pointer for pointer in declassified})
    return new_release, attributes


# -- assign ----------------------------------------------------------------------------------

def requested_node_ids(data):
    """``nodes_ids``, or the 7.0 spec's single ``node_id``."""
    if "nodes_ids" in data:
        return data["nodes_ids"]
    if "node_id" in data:
        return [data["node_id"]]
    raise errors.InvalidData("'nodes_ids' is a required property")


def seed_relation(cluster):
    relation = relation_obj.get_cluster_relation(cluster.id)
    if relation is None:
        raise errors.InvalidData("Relation for given cluster does not exist")
    if relation.seed_cluster_id != cluster.id:
        raise errors.InvalidData("Given cluster is not seed cluster")
    return relation


def check_node(node, seed, relation):
    if node.status not in ASSIGNABLE_STATUSES:
        raise errors.InvalidData(
            "Node should be in one of statuses: ({0}). Currently node has {1} status.".format(
                ", ".join(ASSIGNABLE_STATUSES), node.status))
    if node.status == "error" and node.error_type != "deploy":
        raise errors.InvalidData(
            "Node should be in error state only with deploy error type. Currently error type "
            "of node is {0}".format(node.error_type))
    if node.cluster_id == seed.id:
        raise errors.InvalidData("Node {0} is already assigned to cluster {1}".format(node.id, seed.id))
    if node.cluster_id != relation.orig_cluster_id:
        raise errors.MethodNotAllowed(
            "Node {0} is not in cluster {1}, the original cluster of seed cluster {2}; only its "
            "nodes can be assigned".format(node.id, relation.orig_cluster_id, seed.id), ["POST"])


def check_roles(seed, nodes, roles):
    if roles:
        if len({frozenset(node.roles) for node in nodes}) > 1:
            raise errors.InvalidData(
                "Only nodes with the same set of assigned roles are supported for the operation.")
        validate_roles(seed, roles)
        return
    for node in nodes:
        validate_roles(seed, node.roles)


def validate_assign(seed, data):
    """(orig cluster, nodes in request order, network mapping) once every check of the move passed."""
    node_ids = requested_node_ids(data)
    relation = seed_relation(seed)
    nodes = node_obj.get_many(node_ids, lock=True)
    for node in nodes:
        check_node(node, seed, relation)
    check_roles(seed, nodes, data.get("roles"))
    if data.get("reprovision", True):
        task_obj.check_no_running_task(seed)
    orig = db.get(Cluster, relation.orig_cluster_id)
    mapping = upgrade.network_mapping(orig, seed)
    unmapped = upgrade.unmapped_addresses(nodes, mapping)
    if unmapped:
        raise errors.InvalidData(
            "Some addresses of the nodes are in networks the seed cluster {0} does not have".format(seed.id),
            unmapped)
    taken = upgrade.taken_addresses(nodes, mapping)
    if taken:
        raise errors.Conflict(
            "Some addresses of the nodes are already used in seed cluster {0}; copy the VIPs of the "
            "original cluster first: POST /clusters/{0}/upgrade/vips".format(seed.id), taken)
    return orig, nodes, mapping


# -- VIPs and releases -----------------------------------------------------------------------

def check_upgrade_release_name(name):
    if len(name) > 100:
        raise errors.InvalidData("The name of the upgrade release '{0}' is longer than 100 characters".format(name))
