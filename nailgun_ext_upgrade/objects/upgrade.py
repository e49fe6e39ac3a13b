"""What an upgrade does to the database: clone an environment, move nodes, copy VIPs and releases.

The functions here write; they assume the request was checked first (``validators``),
so a failure half way is a bug, and the request transaction still rolls it all back.
"""
import copy

from nailgun_host.public import (IPAddr, IPAddrRange, NetworkGroup, cluster_obj, db, errors, merge_dicts,
                                 network_obj as network, node_obj, nodegroup_obj as nodegroup, release_obj)
from nailgun_ext_upgrade.objects import relation as relation_obj
from nailgun_ext_upgrade.transformations import cluster as cluster_transformations
from nailgun_ext_upgrade.transformations import vip as vip_transformations
from nailgun_ext_upgrade.transformations import volumes as volume_transformations

EXTENSION_NAME = "cluster_upgrade"
#: editable sections that describe the master node, not the environment: the seed keeps its own
SKIPPED_SECTIONS = ("repo_setup",)
VIP_NETWORKS = ("public", "management")


def versions(orig_release, seed_release):
    return release_obj.environment_version(orig_release), release_obj.environment_version(seed_release)


# -- clone -----------------------------------------------------------------------------------

def upgraded_attributes(orig, seed_release):
    """The orig's editable and generated attributes, transformed to the seed release's version."""
    data = {"editable": orig.editable_attributes, "generated": orig.generated_attributes}
    return cluster_transformations.Manager().apply(*versions(orig.release, seed_release), data)


def _copied_fields(orig_editable, seed_editable):
    """(section, key, orig field, seed field) of every editable value the seed takes over."""
    for section, fields in seed_editable.items():
        if section in SKIPPED_SECTIONS or not isinstance(fields, dict) or \
                not isinstance(orig_editable.get(section), dict):
            continue
        for key, field in fields.items():
            orig_field = orig_editable[section].get(key)
            if key != "metadata" and isinstance(field, dict) and isinstance(orig_field, dict):
                yield section, key, orig_field, field


def incompatible_attributes(orig_editable, seed_editable):
    """Values whose type changed between the releases and no transformation converted."""
    return ["{0}.{1}: '{2}' in the environment, '{3}' in the new release".format(
        section, key, orig_field.get("type"), field.get("type"))
        for section, key, orig_field, field in _copied_fields(orig_editable, seed_editable)
        if "type" in orig_field and "type" in field and orig_field["type"] != field["type"]]


def merge_editable(orig_editable, seed_editable):
    """The seed's editable tree (new metadata and types) holding the orig's values."""
    merged = copy.deepcopy(seed_editable)
    for section, key, orig_field, _field in _copied_fields(orig_editable, seed_editable):
        if "value" in orig_field:
            merged[section][key]["value"] = copy.deepcopy(orig_field["value"])
    return merged


def copy_node_groups(orig, seed):
    seed_groups = {g.name for g in seed.node_groups}
    for group in orig.node_groups:
        if not group.is_default and group.name not in seed_groups:
            nodegroup.create(seed, group.name)


def copy_networks(orig, seed):
    """Every orig network onto its (name, node group) twin in the seed, all IP ranges included."""
    twins = {(n.name, n.node_group.name): n for n in network.cluster_networks(seed)}
    groups = {g.name: g for g in seed.node_groups}
    for source in network.cluster_networks(orig):
        twin = twins.get((source.name, source.node_group.name))
        if twin is None:
            twin = NetworkGroup(name=source.name, release=seed.release_id, meta=copy.deepcopy(source.meta))
            groups[source.node_group.name].networks.append(twin)
        twin.cidr, twin.gateway, twin.vlan_start = source.cidr, source.gateway, source.vlan_start
        twin.ip_ranges = [IPAddrRange(first=r.first, last=r.last) for r in source.ip_ranges]
    seed.networking_parameters = dict(seed.networking_parameters, **copy.deepcopy(orig.networking_parameters))
    db.flush()


def clone_cluster(orig, name, seed_release, attributes):
    """The Upgrade Seed of ``orig`` on ``seed_release``; ``attributes`` are the upgraded ones."""
    data = {"name": name, "release_id": seed_release.id, "mode": orig.mode,
            "net_provider": orig.net_provider}
    if orig.net_provider == "neutron":
        data["net_segment_type"] = orig.networking_parameters.get("segmentation_type", "vlan")
        data["net_l23_provider"] = orig.networking_parameters.get("net_l23_provider", "ovs")
    seed = cluster_obj.create(data)
    seed.generated_attributes = merge_dicts(seed.generated_attributes, attributes["generated"])
    seed.editable_attributes = merge_editable(attributes["editable"], seed.editable_attributes)
    copy_node_groups(orig, seed)
    copy_networks(orig, seed)
    relation_obj.create(orig.id, seed.id)
    seed.extensions = sorted(set(seed.extensions) | {EXTENSION_NAME})
    db.flush()
    return seed


# -- moving nodes ----------------------------------------------------------------------------

def network_mapping(orig, seed):
    """{orig network id: seed network} matched on (name, node group name); admin maps to itself."""
    seed_networks = network.networks_by_key(seed)
    return {source.id: seed_networks[key] for key, source in network.networks_by_key(orig).items()
            if key in seed_networks}


def unmapped_addresses(nodes, mapping):
    return ["{0} of node {1} (network id {2})".format(ip.ip_addr, node.id, ip.network)
            for node in nodes for ip in node.ip_addrs if ip.network not in mapping]


def taken_addresses(nodes, mapping):
    """Addresses the nodes keep that something in the seed already holds (a VIP, usually)."""
    wanted = {(mapping[ip.network].id, ip.ip_addr): node for node in nodes for ip in node.ip_addrs
              if mapping[ip.network].id != ip.network}
    if not wanted:
        return []
    held = (db.query(IPAddr).filter(IPAddr.network.in_({network_id for network_id, _ in wanted}),
                                    IPAddr.ip_addr.in_({address for _, address in wanted})).all())
    return ["{0} of node {1} is held in seed network {2} by {3}".format(
        row.ip_addr, wanted[(row.network, row.ip_addr)].id, row.network,
        "VIP '{0}'".format(row.vip_name) if row.vip_name else "node {0}".format(row.node))
        for row in held if (row.network, row.ip_addr) in wanted]


def node_roles(node, roles, reprovision):
    """(roles, pending roles): kept or replaced; pending when the node is to be reinstalled."""
    wanted = list(roles if roles else node.roles)
    return ([], wanted) if reprovision else (wanted, [])


def lock_for_assign(seed_id):
    """The seed, locked with its orig (whose nodes leave) in ascending ids, the host's lock order,
    so a deploy of either cluster never sees the move half way; 404 when the seed is unknown."""
    seed = cluster_obj.get(seed_id)
    relation = relation_obj.get_cluster_relation(seed.id)
    node_obj.lock_clusters([seed.id] + ([relation.orig_cluster_id] if relation is not None else []))
    return cluster_obj.get(seed.id, lock=True)


def move_nodes(nodes, orig, seed, mapping, roles, reprovision):
    """Nodes into the seed keeping ids, addresses and interface layout (``mapping``: network_mapping),
    their disks transformed to the seed's release; the host moves them and tells the extensions."""
    volumes = volume_transformations.Manager()
    from_version, to_version = versions(orig.release, seed.release)
    for node in nodes:
        node.volumes = volumes.apply(from_version, to_version, node.volumes)
    node_obj.move_to_cluster(nodes, seed, mapping, {node.id: node_roles(node, roles, reprovision) for node in nodes})


# -- VIPs ------------------------------------------------------------------------------------

def copy_vips(orig, seed):
    """The orig's public and management VIPs, same addresses, in the seed's twin networks."""
    mapping = network_mapping(orig, seed)
    vips, names = {}, {}
    for vip in network.get_vips(orig, VIP_NETWORKS):
        twin = mapping.get(vip.network)
        if twin is None:
            raise errors.InvalidData("Network {0} of VIP '{1}' has no counterpart in seed cluster {2}".format(
                vip.network, vip.vip_name, seed.id))
        vips.setdefault(twin.id, {})[vip.vip_name] = {
            "ip_addr": vip.ip_addr, "vip_namespace": vip.vip_namespace, "is_user_defined": vip.is_user_defined}
        names[twin.id] = twin.name
    vips, _names = vip_transformations.Manager().apply(*versions(orig.release, seed.release), (vips, names))
    for row in network.get_vips(seed):
        if row.vip_name in vips.get(row.network, {}):
            db.delete(row)  # so that orig addresses may swap between VIP names
    db.flush()
    network.assign_given_vips(seed, vips)
    network.assign_vips(seed)  # any other VIP the seed's release asks for
    return network.get_vips(seed)


# -- releases --------------------------------------------------------------------------------

def merge_network_roles(base_roles, orig_roles):
    """The base release's network roles, mapped to networks the way the orig's release maps them."""
    orig_mapping = {role["id"]: role["default_mapping"] for role in orig_roles or []}
    return [dict(copy.deepcopy(role), default_mapping=orig_mapping.get(role["id"], role["default_mapping"]))
            for role in base_roles or []]


def upgrade_release_name(orig, base):
    return "{0} Upgrade ({1})".format(base.name, orig.release.id)


def clone_release(orig, base):
    """A copy of ``base`` that keeps the orig release's network role mappings."""
    data = {key: getattr(base, key) for key in
            ("version", "description", "operating_system", "state") + release_obj.METADATA_FIELDS}
    data["name"] = upgrade_release_name(orig, base)
    data["network_roles_metadata"] = merge_network_roles(
        base.network_roles_metadata, orig.release.network_roles_metadata)
    return release_obj.create(data)
