"""Nodes: discovery, assignment to a cluster (which allocates their IPs), interfaces, disks."""
import sqlalchemy as sa
from sqlalchemy import orm

from nailgun_host import errors, extensions
from nailgun_host.db import db, get_or_404
from nailgun_host.db.models import Cluster, IPAddr, Node, NodeInterface
from nailgun_host.objects import network, pending_changes
from nailgun_host.objects.roles import validate_roles
from nailgun_host.settings import settings

STATUSES = ("ready", "discover", "provisioning", "provisioned", "deploying", "error",
            "removing", "stopped")
ERROR_TYPES = ("deploy", "provision", "deletion", "discover", "stop_deployment")
NOT_FOUND = "Node with id {0} was not found."
UPDATABLE = ("name", "status", "error_type", "error_msg", "online", "manufacturer", "platform_name",
             "os_platform", "kernel_params", "progress", "pending_addition", "pending_deletion")


def query():
    """Nodes with their addresses (and networks) and interfaces loaded along, whatever their number."""
    return db.query(Node).options(
        orm.selectinload(Node.ip_addrs).joinedload(IPAddr.network_data),
        orm.selectinload(Node.interfaces).selectinload(NodeInterface.assigned_networks))


def get(node_id, lock=False):
    return get_or_404(Node, node_id, NOT_FOUND.format(node_id), lock=lock)


def list_all(**filters):
    """Every node, or with ``cluster_id`` those of one cluster (None: the unassigned ones)."""
    nodes = query().order_by(Node.id)
    if "cluster_id" in filters:
        nodes = nodes.filter(Node.cluster_id.is_(None) if filters["cluster_id"] is None
                             else Node.cluster_id == filters["cluster_id"])
    return nodes.all()


def get_many(ids, lock=False):
    """The nodes with these ids, in the order given; 404 naming the first that does not exist.

    ``lock`` takes their rows FOR UPDATE (in id order) and reloads them, so a request
    changing them waits for any other one changing the same nodes and sees its result.
    """
    nodes = query().filter(Node.id.in_(ids))
    if lock:
        nodes = nodes.order_by(Node.id).with_for_update(of=Node).populate_existing()
    found = {node.id: node for node in nodes} if ids else {}
    for node_id in ids:
        if node_id not in found:
            raise errors.ObjectNotFound(NOT_FOUND.format(node_id))
    return [found[node_id] for node_id in ids]


def lock_clusters(cluster_ids):
    """Row locks of these clusters (FOR UPDATE), ascending ids: the first step of the lock order
    of ``config_session.py`` (clusters, ConfigDB environment, session), so a writer of what the
    environment model shows never interleaves with a session's deploy. Unknown ids are skipped."""
    for cluster_id in sorted({int(c) for c in cluster_ids if c is not None}):
        db.get(Cluster, cluster_id, with_for_update={"of": Cluster}, populate_existing=True)


def lock_with_clusters(ids, target_cluster_ids=()):
    """The nodes (in the order given; 404 on an unknown one), locked after every cluster they are in
    or move to (``target_cluster_ids``), clusters first in ascending ids, then the node rows.

    A node moved to another cluster between the first read and its lock: 409 (that cluster is
    not locked and taking it now would break the order), the client retries."""
    current = db.execute(sa.select(Node.cluster_id).where(Node.id.in_(ids))).scalars().all()
    clusters = {c for c in list(current) + list(target_cluster_ids) if c is not None}
    lock_clusters(clusters)
    nodes = get_many(ids, lock=True)
    moved = sorted(n.id for n in nodes if n.cluster_id is not None and n.cluster_id not in clusters)
    if moved:
        raise errors.Conflict("Nodes {0} changed environment meanwhile; retry".format(moved), moved)
    return nodes


def check_mac_free(mac, node=None):
    taken = db.query(Node.id).filter(Node.mac == mac.lower())
    if node is not None:
        taken = taken.filter(Node.id != node.id)
    if taken.first():
        raise errors.AlreadyExists("Node with mac {0} already exists".format(mac))


def _interfaces_from_meta(node):
    known = {i.name: i for i in node.interfaces}
    for spec in node.meta.get("interfaces", []) or []:
        if not isinstance(spec, dict) or not spec.get("name"):
            continue
        interface = known.get(spec["name"])
        if interface is None:
            interface = NodeInterface(name=spec["name"])
            node.interfaces.append(interface)
        interface.mac = spec.get("mac")
        interface.pxe = bool(spec.get("pxe", False))


def default_volumes(meta):
    """A disk layout from the discovered disks: the OS volume group on the first disk."""
    volumes = []
    for index, disk in enumerate(meta.get("disks", []) or []):
        size_mb = int(disk.get("size", 0)) // (1024 * 1024)
        spaces = [{"name": "os", "size": size_mb, "type": "pv"}] if index == 0 else \
            [{"name": "image", "size": size_mb, "type": "pv"}]
        volumes.append({"id": disk.get("name"), "name": disk.get("name"), "size": size_mb,
                        "type": "disk", "volumes": spaces})
    return volumes


def _ordered_union(*lists):
    return list(dict.fromkeys(role for roles in lists for role in roles))


def create(data):
    check_mac_free(data["mac"])
    node = Node(mac=data["mac"].lower(), ip=data.get("ip"), meta=data.get("meta", {}) or {},
                status=data.get("status", "discover"),
                manufacturer=data.get("manufacturer"), platform_name=data.get("platform_name"),
                os_platform=data.get("os_platform"), online=data.get("online", True))
    db.add(node)
    db.flush()
    node.name = data.get("name") or "Untitled ({0})".format(node.mac[-5:])
    node.hostname = "node-{0}".format(node.id)
    node.fqdn = "{0}.{1}".format(node.hostname, settings["DNS_DOMAIN"])
    node.volumes = default_volumes(node.meta)
    _interfaces_from_meta(node)
    network.record_admin_ip(node)
    db.flush()
    extensions.fire("on_node_create", node)
    if data.get("cluster_id") is not None:
        cluster = db.get(Cluster, data["cluster_id"])
        if cluster is None:
            raise errors.ObjectNotFound("Cluster with id {0} not found".format(data["cluster_id"]))
        assign_to_cluster([node], cluster, data.get("pending_roles", []), data.get("roles", []))
    return node


def update(node, data):
    """Fields an agent or an operator may change, roles and cluster membership included."""
    if "mac" in data:
        check_mac_free(data["mac"], node)
        node.mac = data["mac"].lower()
    for key in UPDATABLE:
        if key in data:
            setattr(node, key, data[key])
    if "meta" in data:
        node.meta = data["meta"] or {}
        _interfaces_from_meta(node)
    if "cluster_id" in data and data["cluster_id"] != node.cluster_id:
        if node.cluster_id is not None:
            remove_from_cluster(node)
        if data["cluster_id"] is not None:
            cluster = db.get(Cluster, data["cluster_id"])
            if cluster is None:
                raise errors.ObjectNotFound("Cluster with id {0} not found".format(data["cluster_id"]))
            assign_to_cluster([node], cluster, data.get("pending_roles", []), data.get("roles", []))
    elif "roles" in data or "pending_roles" in data:
        if node.cluster is None:
            raise errors.InvalidData("Node {0} is not in a cluster; roles need one".format(node.id))
        roles = data.get("roles", node.roles)
        pending = data.get("pending_roles", node.pending_roles)
        validate_roles(node.cluster, _ordered_union(roles, pending))
        node.roles, node.pending_roles = list(roles), list(pending)
        network.assign_node_ips(node.cluster, [node])
        network.assign_vips(node.cluster)
    db.flush()
    extensions.fire("on_node_update", node)
    return node


def assign_to_cluster(nodes, cluster, pending_roles=(), roles=()):
    """Put nodes in a cluster: node group by admin IP, default interfaces, addresses."""
    validate_roles(cluster, _ordered_union(roles, pending_roles))
    for node in nodes:
        if node.cluster_id is not None and node.cluster_id != cluster.id:
            raise errors.InvalidData("Node {0} is already assigned to cluster {1}".format(
                node.id, node.cluster_id))
        node.cluster = cluster
        node.group_id = network.group_for_admin_ip(cluster, node.ip).id
        node.roles, node.pending_roles = list(roles), list(pending_roles)
        node.pending_addition = True
    db.flush()
    network.assign_node_ips(cluster, nodes)
    network.assign_vips(cluster)
    for node in nodes:
        assign_default_interfaces(node)
        extensions.fire("on_node_update", node)


def assign_default_interfaces(node):
    """Admin network on the PXE interface; every other network on the first other NIC."""
    nics = [i for i in node.interfaces if i.type == "ether"]
    if not nics:
        return
    pxe = next((i for i in nics if i.pxe), nics[0])
    other = next((i for i in nics if i is not pxe), pxe)
    for interface in node.interfaces:
        interface.assigned_networks = []
    pxe.assigned_networks = [network.admin_network()]
    group_networks = [n for n in network.cluster_networks(node.cluster) if n.group_id == node.group_id]
    other.assigned_networks = other.assigned_networks + [n for n in group_networks]
    db.flush()


def remove_from_cluster(node):
    """Back to discovery: no cluster, no roles, no cluster addresses."""
    extensions.fire("on_remove_node_from_cluster", node)
    network.release_node_ips(node)
    for interface in node.interfaces:
        interface.assigned_networks = []
    node.cluster_id = None
    node.cluster = None
    node.group_id = None
    node.roles, node.pending_roles, node.primary_tags = [], [], []
    node.pending_addition = node.pending_deletion = False
    node.status = "discover"
    node.error_type = None
    node.kernel_params = None
    db.flush()


def move_to_cluster(nodes, cluster, mapping, roles):
    """Nodes into another cluster as they are: same ids, addresses and interface layout, the way
    Nailgun's ``update_cluster_assignment`` and ``set_netgroups_ids`` move them for an upgrade.

    ``mapping``: {id of a network they leave: its twin in ``cluster``}, covering every network of
    their addresses (the caller checked it); ``roles``: {node id: (roles, pending roles)}. Each node
    joins the node group named as its own, else the default one. Extensions hear
    ``on_remove_nodes_from_cluster`` before (``cluster_id`` still the one left) and
    ``on_nodes_update`` after, once each for the batch, so one node or fifty take the same statements.
    """
    extensions.fire("on_remove_nodes_from_cluster", nodes)
    group_names = {g.id: g.name for c in {n.cluster for n in nodes if n.cluster} for g in c.node_groups}
    groups = {g.name: g for g in cluster.node_groups}
    default = network.default_group(cluster)
    for node in nodes:
        node.cluster = cluster
        node.group_id = groups.get(group_names.get(node.group_id), default).id
        node.roles, node.pending_roles = (list(r) for r in roles[node.id])
        node.primary_tags, node.kernel_params, node.network_template = [], None, None
        node.replaced_deployment_info, node.replaced_provisioning_info = [], {}
        node.pending_addition = node.pending_deletion = False
        for ip in node.ip_addrs:
            ip.network_data = mapping[ip.network]
        for interface in node.interfaces:
            interface.assigned_networks = [mapping[n.id] for n in interface.assigned_networks if n.id in mapping]
        pending_changes.record(node, "interfaces", node.id)
    db.flush()
    extensions.fire("on_nodes_update", nodes)


def delete(node):
    extensions.fire("on_node_delete", node)
    db.delete(node)
    db.flush()


def interface_to_dict(interface):
    return {
        "id": interface.id, "name": interface.name, "type": interface.type, "mac": interface.mac,
        "pxe": interface.pxe, "mode": interface.mode,
        "slaves": [{"name": name} for name in interface.slaves],
        "assigned_networks": [{"id": n.id, "name": n.name} for n in interface.assigned_networks],
    }


def set_interfaces(node, data):
    """Replace interface-network assignments and bonds as the body describes them: all checked
    before anything changes."""
    _apply_interfaces(node, _checked_interfaces(node, data))
    pending_changes.record(node, "interfaces", node.id)
    db.flush()


def _checked_interfaces(node, data):
    """``{name: (spec, networks)}`` of the body's interfaces; InvalidData when a network is not the node's
    to assign or is assigned twice, an ether interface is unknown, or a bond has fewer than two NICs."""
    allowed = {n.id: n for n in network.cluster_networks(node.cluster) if n.group_id == node.group_id} \
        if node.cluster else {}
    admin = network.admin_network()
    allowed[admin.id] = admin
    by_name = {i.name: i for i in node.interfaces}
    seen_networks = set()
    wanted = {}
    for spec in data:
        assigned = [_assignable(node, allowed, ref.get("id"), seen_networks)
                    for ref in spec.get("assigned_networks", [])]
        _check_interface(node, spec, by_name)
        wanted[spec.get("name")] = (spec, assigned)
    return wanted


def _assignable(node, allowed, network_id, seen_networks):
    """The network to assign; once only per body."""
    target = allowed.get(network_id)
    if target is None:
        raise errors.InvalidData("Network {0} cannot be assigned to node {1}".format(network_id, node.id))
    if target.id in seen_networks:
        raise errors.InvalidData("Network '{0}' is assigned to more than one interface".format(target.name))
    seen_networks.add(target.id)
    return target


def _check_interface(node, spec, by_name):
    """A bond is made of two or more of the node's NICs; any other interface is one the node has."""
    name = spec.get("name")
    if spec.get("type", "ether") == "bond":
        slaves = [s["name"] for s in spec.get("slaves", [])]
        if any(s not in by_name or by_name[s].type != "ether" for s in slaves) or len(slaves) < 2:
            raise errors.InvalidData("Bond '{0}' needs at least two existing NICs as slaves".format(name))
    elif name not in by_name:
        raise errors.InvalidData("Node {0} has no interface '{1}'".format(node.id, name))


def _apply_interfaces(node, wanted):
    """Bonds the body leaves out go, new ones are made; each named interface gets its networks."""
    by_name = {i.name: i for i in node.interfaces}
    for interface in list(node.interfaces):
        if interface.type == "bond" and interface.name not in wanted:
            node.interfaces.remove(interface)
    for name, (spec, assigned) in wanted.items():
        interface = by_name.get(name)
        if interface is None:
            interface = NodeInterface(name=name, type="bond")
            node.interfaces.append(interface)
        if interface.type == "bond":
            interface.mode = spec.get("mode", interface.mode or "active-backup")
            interface.slaves = [s["name"] for s in spec.get("slaves", [])]
        interface.assigned_networks = assigned


def set_volumes(node, disks):
    """Replace the volumes of some of the node's disks; each disk must hold what it is given."""
    current = {d["id"]: d for d in node.volumes}
    for disk in disks:
        if disk["id"] not in current:
            raise errors.InvalidData("Node {0} has no disk '{1}'".format(node.id, disk["id"]))
        used = sum(v["size"] for v in disk["volumes"])
        if used > current[disk["id"]].get("size", 0):
            raise errors.InvalidData("Volumes of disk '{0}' need {1} MB; it has {2} MB".format(
                disk["id"], used, current[disk["id"]].get("size", 0)))
    for disk in disks:
        current[disk["id"]] = dict(current[disk["id"]], volumes=disk["volumes"])
    node.volumes = [current[d["id"]] for d in node.volumes]
    pending_changes.record(node, "disks", node.id)
    db.flush()
    return node.volumes


def to_dict(node):
    return {
        "id": node.id, "uuid": node.uuid, "name": node.name, "hostname": node.hostname,
        "fqdn": node.fqdn, "status": node.status, "error_type": node.error_type,
        "error_msg": node.error_msg, "online": node.online, "mac": node.mac, "ip": node.ip,
        "manufacturer": node.manufacturer, "platform_name": node.platform_name,
        "os_platform": node.os_platform, "cluster": node.cluster_id, "cluster_id": node.cluster_id,
        "group_id": node.group_id, "roles": node.roles, "pending_roles": node.pending_roles,
        "pending_addition": node.pending_addition, "pending_deletion": node.pending_deletion,
        "meta": node.meta, "kernel_params": node.kernel_params, "progress": node.progress,
        "network_data": network.node_network_data(node),
    }
