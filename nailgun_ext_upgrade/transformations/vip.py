"""VIPs ({network id: {vip name: VIP}}, {network id: network name}) across Fuel versions."""
from nailgun_ext_upgrade import transformations

RENAMES = {
    "management": {"haproxy": "management", "vrouter": "vrouter"},
    "public": {"haproxy": "public", "vrouter": "vrouter_pub"},
}
NAMESPACES = {"vrouter": "vrouter", "vrouter_pub": "vrouter", "public": "haproxy", "management": "haproxy"}


def transform_vips(data):
    """7.0 names VIPs after their network and gives each a namespace; others are dropped."""
    vips, network_names = data
    renamed = {}
    for network_id, by_name in vips.items():
        rules = RENAMES.get(network_names[network_id], {})
        for old_name, vip in by_name.items():
            if old_name not in rules:
                continue
            new_name = rules[old_name]
            vip = dict(vip, vip_name=new_name)
            if not vip.get("vip_namespace"):
                vip["vip_namespace"] = NAMESPACES[new_name]
            renamed.setdefault(network_id, {})[new_name] = vip
    return renamed, network_names


class Manager(transformations.Manager):
    name = "vip"
    default_config = {"7.0": ["transform_vips"]}
