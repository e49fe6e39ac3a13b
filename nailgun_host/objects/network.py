"""Networks of a cluster: creation from release metadata, IP allocation, VIPs, configuration.

Every address handed out is a row of ``ip_addrs`` with a unique (network, address)
constraint, so one address can never be given twice, even by two API workers at
once; the network rows are also locked while allocating, so on PostgreSQL
concurrent allocators queue instead of failing.
"""
import copy
import ipaddress

from sqlalchemy import orm

from nailgun_host import errors
from nailgun_host.db import db
from nailgun_host.db.models import IPAddr, IPAddrRange, NetworkGroup, NodeGroup
from nailgun_host.objects import pending_changes
from nailgun_host.settings import settings

ADMIN_NETWORK = "fuelweb_admin"
NETWORK_META_DEFAULTS = {
    "notation": "cidr", "render_type": None, "map_priority": 2,
    "configurable": True, "use_gateway": False,
}


# -- the global admin network ------------------------------------------------------------

def admin_network():
    """The global PXE/admin network (no node group), created from settings on first use."""
    network = db.query(NetworkGroup).filter_by(name=ADMIN_NETWORK, group_id=None).first()
    if network is None:
        conf = settings["ADMIN_NETWORK"]
        network = NetworkGroup(
            name=ADMIN_NETWORK, cidr=conf["cidr"], gateway=conf.get("gateway"), vlan_start=None,
            meta=dict(NETWORK_META_DEFAULTS, notation="ip_ranges", configurable=False,
                      use_gateway=True, map_priority=0, unmovable=True, name=ADMIN_NETWORK),
            ip_ranges=[IPAddrRange(first=f, last=l) for f, l in conf["ip_ranges"]])
        db.add(network)
        db.flush()
    return network


# -- creating a node group's networks ----------------------------------------------------

def ranges_from_meta(meta, cidr):
    """IP ranges of a network from its metadata: the given range, or the CIDR's hosts."""
    if meta.get("notation") == "ip_ranges" and meta.get("ip_range"):
        return [list(meta["ip_range"])]
    if meta.get("notation") == "cidr" and cidr:
        hosts = ipaddress.ip_network(cidr, strict=False)
        first = 2 if meta.get("use_gateway") else 1
        if hosts.num_addresses - 1 <= first:  # a /32, a /31, a /30 with a gateway: no address to hand out
            raise errors.InvalidData("CIDR {0} of network '{1}' leaves no addresses for nodes".format(
                cidr, meta.get("name")))
        return [[str(hosts[first]), str(hosts[-2])]]
    return []


def check_release_networks(networks_metadata):
    """What a schema cannot say of a release's networks: real CIDRs with room for addresses,
    gateways and ranges inside them, one network per name; the config as a cluster would get it."""
    for provider, metadata in networks_metadata.items():
        names = set()
        for meta in metadata.get("networks", []):
            if meta["name"] in names:
                raise errors.InvalidData("Network '{0}' of '{1}' is given twice".format(meta["name"], provider))
            names.add(meta["name"])
            _check_release_network(meta)
        _check_networking_parameters(metadata.get("config", {}))


def _check_release_network(meta):
    name, cidr = meta["name"], meta.get("cidr")
    if name == ADMIN_NETWORK:
        raise errors.InvalidData("'{0}' is the admin network's name; a release may not define it".format(name))
    try:
        net = ipaddress.ip_network(cidr, strict=True) if cidr else None
    except ValueError as exc:
        raise errors.InvalidData("Invalid CIDR '{0}' of network '{1}': {2}".format(cidr, name, exc))
    if net is not None and net.num_addresses < 4:
        raise errors.InvalidData("CIDR '{0}' of network '{1}' has no room for addresses".format(cidr, name))
    addresses = list(meta.get("ip_range") or [])
    if meta.get("gateway"):
        addresses.append(meta["gateway"])
    if addresses and net is None:
        raise errors.InvalidData("Network '{0}' has a gateway or IP range but no CIDR".format(name))
    for address in addresses:
        if ipaddress.ip_address(address) not in net:
            raise errors.InvalidData(
                "Address '{0}' is outside the CIDR {1} of network '{2}'".format(address, cidr, name))
    if meta.get("ip_range"):
        first, last = meta["ip_range"]
        if ipaddress.ip_address(first) > ipaddress.ip_address(last):
            raise errors.InvalidData("IP range {0}-{1} of network '{2}' is reversed".format(first, last, name))


def check_network_roles(network_roles):
    """One network role per id and one VIP per name in a network: VIPs are found by (network, name)."""
    ids, vips = set(), set()
    for role in network_roles:
        if role["id"] in ids:
            raise errors.InvalidData("Network role '{0}' is given twice".format(role["id"]))
        ids.add(role["id"])
        for vip in (role.get("properties") or {}).get("vip") or []:
            key = (role["default_mapping"], vip["name"])
            if key in vips:
                raise errors.InvalidData("VIP '{1}' of network '{0}' is given twice".format(*key))
            vips.add(key)


def create_networks_for_group(cluster, node_group):
    """The node group's networks as the release's metadata describes them."""
    metadata = cluster.release.networks_metadata.get(cluster.net_provider, {})
    for meta in metadata.get("networks", []):
        meta = dict(NETWORK_META_DEFAULTS, **meta)
        network = NetworkGroup(
            name=meta["name"], release=cluster.release_id, vlan_start=meta.get("vlan_start"),
            cidr=meta.get("cidr"), gateway=meta.get("gateway") if meta.get("use_gateway") else None,
            meta=meta)
        network.ip_ranges = [IPAddrRange(first=f, last=l)
                             for f, l in ranges_from_meta(meta, meta.get("cidr"))]
        node_group.networks.append(network)
    db.flush()


def default_networking_parameters(cluster, data):
    config = copy.deepcopy(cluster.release.networks_metadata.get(cluster.net_provider, {}).get("config", {}))
    if cluster.net_provider == "neutron":
        config.setdefault("segmentation_type", data.get("net_segment_type", "vlan"))
        config.setdefault("net_l23_provider", data.get("net_l23_provider", "ovs"))
        config.setdefault("configuration_template", None)
    return config


# -- lookups -------------------------------------------------------------------------------

def cluster_networks(cluster):
    """Every network of the cluster's node groups, loaded in one query."""
    return (db.query(NetworkGroup).join(NodeGroup)
            .filter(NodeGroup.cluster_id == cluster.id)
            .options(orm.contains_eager(NetworkGroup.node_group))
            .order_by(NetworkGroup.id).all())


def default_group(cluster):
    for group in cluster.node_groups:
        if group.is_default:
            return group
    return cluster.node_groups[0] if cluster.node_groups else None


def networks_by_key(cluster):
    """{(network name, node group name): network} of the cluster, plus the admin network."""
    mapping = {(n.name, n.node_group.name): n for n in cluster_networks(cluster)}
    admin = admin_network()
    mapping[(admin.name, None)] = admin
    return mapping


def group_for_admin_ip(cluster, ip):
    """The node group whose admin network contains ``ip``; the default group otherwise."""
    if ip:
        address = ipaddress.ip_address(ip)
        for group in cluster.node_groups:
            for network in group.networks:
                if network.name == ADMIN_NETWORK and network.cidr and \
                        address in ipaddress.ip_network(network.cidr, strict=False):
                    return group
    return default_group(cluster)


# -- allocation ----------------------------------------------------------------------------

def _addresses(network):
    for ip_range in network.ip_ranges:
        first, last = int(ipaddress.ip_address(ip_range.first)), int(ipaddress.ip_address(ip_range.last))
        for value in range(first, last + 1):
            yield str(ipaddress.ip_address(value))


def _used_addresses(network_ids):
    rows = db.query(IPAddr.network, IPAddr.ip_addr).filter(IPAddr.network.in_(network_ids)).all()
    used = {}
    for network_id, address in rows:
        used.setdefault(network_id, set()).add(address)
    return used


def _lock(network_ids):
    db.query(NetworkGroup.id).filter(NetworkGroup.id.in_(network_ids)).order_by(
        NetworkGroup.id).with_for_update().all()


class Allocator:
    """Hands out free addresses of some networks within one transaction."""

    def __init__(self, networks):
        self.networks = {n.id: n for n in networks}
        if self.networks:
            _lock(sorted(self.networks))
        self.used = _used_addresses(list(self.networks)) if self.networks else {}

    def take(self, network):
        used = self.used.setdefault(network.id, set())
        for address in _addresses(network):
            if address not in used:
                used.add(address)
                return address
        raise errors.CannotAssignIP(
            "Not enough free IP addresses in network '{0}' (id {1})".format(network.name, network.id))

    def claim(self, network, address):
        if not address_in_network(address, network):
            raise errors.CannotAssignIP(
                "Cannot assign the address '{0}' because it does not belong to the network "
                "'{1}' ({2})".format(address, network.name, network.cidr))
        self.used.setdefault(network.id, set()).add(address)


def address_in_network(address, network):
    if not network.cidr:
        return False
    return ipaddress.ip_address(address) in ipaddress.ip_network(network.cidr, strict=False)


def node_needs_network(node, network, cluster):
    if network.name == ADMIN_NETWORK or not network.ip_ranges:
        return False
    if network.name == "public":
        return needs_public_ip(node, cluster)
    return True


def needs_public_ip(node, cluster):
    editable = cluster.editable_attributes
    if editable.get("public_network_assignment", {}).get("assign_to_all_nodes", {}).get("value"):
        return True
    roles_metadata = cluster.release.roles_metadata
    return any(roles_metadata.get(role, {}).get("public_ip_required")
               for role in set(node.roles) | set(node.pending_roles))


def assign_node_ips(cluster, nodes):
    """Give every node an address in each network of its node group that it needs."""
    nodes = [n for n in nodes if n.group_id is not None]
    if not nodes:
        return
    networks = [n for n in cluster_networks(cluster) if n.ip_ranges and n.name != ADMIN_NETWORK]
    allocator = Allocator(networks)
    by_group = {}
    for network in networks:
        by_group.setdefault(network.group_id, []).append(network)
    for node in nodes:
        have = {ip.network for ip in node.ip_addrs}
        for network in by_group.get(node.group_id, []):
            if network.id not in have and node_needs_network(node, network, cluster):
                node.ip_addrs.append(IPAddr(network=network.id, ip_addr=allocator.take(network)))
    db.flush()


def release_node_ips(node):
    """Free the node's addresses in cluster networks (its admin address stays)."""
    admin = admin_network()
    node.ip_addrs = [ip for ip in node.ip_addrs if ip.network == admin.id]
    db.flush()


def record_admin_ip(node):
    """Reserve the node's admin address (given, or the first free one) in the admin network."""
    admin = admin_network()
    allocator = Allocator([admin])
    if node.ip:
        if address_in_network(node.ip, admin):
            allocator.claim(admin, node.ip)
            node.ip_addrs.append(IPAddr(network=admin.id, ip_addr=node.ip))
    else:
        node.ip = allocator.take(admin)
        node.ip_addrs.append(IPAddr(network=admin.id, ip_addr=node.ip))


# -- VIPs ------------------------------------------------------------------------------------

def has_controllers(cluster):
    return any("controller" in set(n.roles) | set(n.pending_roles) for n in cluster.nodes)


def vip_requirements(cluster):
    """[(network name, vip name, namespace)] that the release's network roles ask for."""
    wanted = []
    for role in cluster.release.network_roles_metadata or []:
        for vip in (role.get("properties") or {}).get("vip") or []:
            wanted.append((role["default_mapping"], vip["name"], vip.get("namespace")))
    return wanted


def get_vips(cluster, network_names=None):
    query = (db.query(IPAddr).join(NetworkGroup, IPAddr.network == NetworkGroup.id).join(NodeGroup)
             .filter(NodeGroup.cluster_id == cluster.id, IPAddr.vip_name.isnot(None)))
    if network_names:
        query = query.filter(NetworkGroup.name.in_(network_names))
    return query.order_by(IPAddr.id).all()


def assign_vips(cluster):
    """Allocate the VIPs the release asks for; only once the cluster has a controller."""
    if not has_controllers(cluster):
        return []
    group = default_group(cluster)
    networks = {n.name: n for n in group.networks} if group else {}
    existing = {(v.network, v.vip_name) for v in get_vips(cluster)}
    missing = [(networks[name], vip, ns) for name, vip, ns in vip_requirements(cluster)
               if name in networks and (networks[name].id, vip) not in existing]
    if missing:
        allocator = Allocator({n.id: n for n, _, _ in missing}.values())
        for network, vip, namespace in missing:
            db.add(IPAddr(network=network.id, ip_addr=allocator.take(network),
                          vip_name=vip, vip_namespace=namespace))
        db.flush()
    return get_vips(cluster)


def assign_given_vips(cluster, vips_by_network):
    """Set VIPs to given addresses: {network id: {vip name: {ip_addr, vip_namespace, ...}}}."""
    current = {(v.network, v.vip_name): v for v in get_vips(cluster)}
    networks = {n.id: n for n in cluster_networks(cluster)}
    allocator = Allocator([networks[i] for i in vips_by_network if i in networks])
    for network_id, vips in vips_by_network.items():
        network = networks[network_id]
        for vip_name, vip in vips.items():
            address = vip["ip_addr"]
            allocator.claim(network, address)
            row = current.get((network_id, vip_name))
            taken = db.query(IPAddr).filter(IPAddr.network == network_id, IPAddr.ip_addr == address,
                                            IPAddr.id != (row.id if row is not None else 0)).first()
            if taken is not None:
                raise errors.CannotAssignIP(
                    "The address '{0}' of network '{1}' is already in use".format(address, network.name))
            if row is None:
                row = IPAddr(network=network_id, vip_name=vip_name, ip_addr=address)
                db.add(row)
            row.ip_addr = address
            row.vip_namespace = vip.get("vip_namespace")
            row.is_user_defined = bool(vip.get("is_user_defined", False))
    db.flush()


def vip_to_dict(ip):
    return {"id": ip.id, "network": ip.network, "node": ip.node, "ip_addr": ip.ip_addr,
            "vip_name": ip.vip_name, "vip_namespace": ip.vip_namespace,
            "is_user_defined": ip.is_user_defined}


# -- network configuration -------------------------------------------------------------------

def network_to_dict(network):
    return {
        "id": network.id, "name": network.name, "cidr": network.cidr, "gateway": network.gateway,
        "vlan_start": network.vlan_start, "release": network.release,
        "group_id": network.group_id, "meta": network.meta,
        "ip_ranges": [[r.first, r.last] for r in network.ip_ranges],
    }


def serialize_configuration(cluster):
    networks = [network_to_dict(admin_network())] + [network_to_dict(n) for n in cluster_networks(cluster)]
    vips = {v.vip_name: {"ipaddr": v.ip_addr, "namespace": v.vip_namespace, "network": v.network}
            for v in get_vips(cluster)}
    data = {"networks": networks, "networking_parameters": cluster.networking_parameters, "vips": vips}
    for name in ("management", "public"):
        data["{0}_vip".format(name)] = vips.get(name, {}).get("ipaddr")
    for name, key in (("vrouter", "management_vrouter_vip"), ("vrouter_pub", "public_vrouter_vip")):
        data[key] = vips.get(name, {}).get("ipaddr")
    return data


def _check_network_fields(network, fields):
    cidr = fields.get("cidr", network.cidr)
    try:
        net = ipaddress.ip_network(cidr, strict=True) if cidr else None
    except ValueError as exc:
        raise errors.InvalidData("Invalid CIDR '{0}' of network '{1}': {2}".format(cidr, network.name, exc))
    addresses = [fields.get("gateway", network.gateway)]
    for pair in fields.get("ip_ranges", []):
        addresses.extend(pair)
    for address in addresses:
        if address is None:
            continue
        try:
            value = ipaddress.ip_address(address)
        except ValueError:
            raise errors.InvalidData("Invalid IP address '{0}' in network '{1}'".format(address, network.name))
        if net is None or value not in net:
            raise errors.InvalidData(
                "Address '{0}' is outside the CIDR {1} of network '{2}'".format(address, cidr, network.name))
    for first, last in fields.get("ip_ranges", []):
        if ipaddress.ip_address(first) > ipaddress.ip_address(last):
            raise errors.InvalidData("IP range {0}-{1} of network '{2}' is reversed".format(first, last, network.name))


def update_configuration(cluster, data):
    """Apply a network configuration body: networks by id, then networking parameters."""
    own = {n.id: n for n in cluster_networks(cluster)}
    admin = admin_network()
    for fields in data.get("networks", []):
        network = own.get(fields.get("id"))
        if network is None:
            if fields.get("id") == admin.id:
                continue  # the global admin network is not the cluster's to change
            raise errors.InvalidData("Network with id {0} does not belong to cluster {1}".format(
                fields.get("id"), cluster.id))
        _check_network_fields(network, fields)
    for fields in data.get("networks", []):
        network = own.get(fields.get("id"))
        if network is None:
            continue
        for key in ("cidr", "gateway", "vlan_start"):
            if key in fields:
                setattr(network, key, fields[key])
        if "meta" in fields and isinstance(fields["meta"], dict):
            network.meta = dict(network.meta, **fields["meta"])
        if "ip_ranges" in fields:
            network.ip_ranges = [IPAddrRange(first=f, last=l) for f, l in fields["ip_ranges"]]
        elif "cidr" in fields and network.meta.get("notation") == "cidr":
            network.ip_ranges = [IPAddrRange(first=f, last=l)
                                 for f, l in ranges_from_meta(network.meta, network.cidr)]
    if isinstance(data.get("networking_parameters"), dict):
        parameters = dict(cluster.networking_parameters, **data["networking_parameters"])
        _check_networking_parameters(parameters)
        cluster.networking_parameters = parameters
    pending_changes.record(cluster, "networks")
    db.flush()


def _check_networking_parameters(parameters):
    """What the schema cannot say: a real internal CIDR holding its gateway, ranges in order."""
    cidr = parameters.get("internal_cidr")
    try:
        internal = ipaddress.ip_network(cidr, strict=True) if cidr else None
    except ValueError as exc:
        raise errors.InvalidData("Invalid internal CIDR '{0}': {1}".format(cidr, exc))
    gateway = parameters.get("internal_gateway")
    if internal and gateway and ipaddress.ip_address(gateway) not in internal:
        raise errors.InvalidData("Address '{0}' is outside the internal CIDR {1}".format(gateway, cidr))
    for first, last in parameters.get("floating_ranges") or []:
        if ipaddress.ip_address(first) > ipaddress.ip_address(last):
            raise errors.InvalidData("Floating range {0}-{1} is reversed".format(first, last))


def node_network_data(node):
    """Nailgun's ``network_data`` of a node: each network it has an address in."""
    interfaces = {}
    for interface in node.interfaces:
        for network in interface.assigned_networks:
            interfaces[network.id] = interface.name
    result = []
    for ip in node.ip_addrs:
        network = ip.network_data
        prefix = ipaddress.ip_network(network.cidr, strict=False).prefixlen if network.cidr else None
        result.append({
            "name": network.name, "ip": "{0}/{1}".format(ip.ip_addr, prefix) if prefix else ip.ip_addr,
            "cidr": network.cidr, "gateway": network.gateway, "vlan": network.vlan_start,
            "dev": interfaces.get(network.id), "network_id": network.id,
        })
    return result
