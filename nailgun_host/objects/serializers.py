"""Deployment and provisioning info for the orchestrator, shaped by extensions' pipelines."""
import copy

from nailgun_host import extensions
from nailgun_host.objects.attributes import attribute_values
from nailgun_host.objects import network
from nailgun_host.objects import release as release_obj


def _common(cluster):
    return {
        "cluster": {"id": cluster.id, "name": cluster.name, "status": cluster.status,
                    "fuel_version": release_obj.environment_version(cluster.release)},
        "release": {"id": cluster.release.id, "name": cluster.release.name,
                    "version": cluster.release.version,
                    "operating_system": cluster.release.operating_system},
        "deployment_id": cluster.id,  # Nailgun's: the server's number, never the release's template
        "deployment_mode": cluster.mode,
        "quantum": cluster.net_provider == "neutron",
        "quantum_settings": {"L2": copy.deepcopy(cluster.networking_parameters)},
        "network_metadata": {"vips": {v.vip_name: {"ipaddr": v.ip_addr, "namespace": v.vip_namespace}
                                      for v in network.get_vips(cluster)}},
        "editable": attribute_values(cluster.editable_attributes),
    }


def _node(node):
    return {"uid": str(node.id), "fqdn": node.fqdn, "hostname": node.hostname,
            "roles": sorted(set(node.roles) | set(node.pending_roles)), "status": node.status,
            "network_data": network.node_network_data(node)}


def deployment_info(cluster, nodes):
    """{"common": ..., "nodes": [...]} after every enabled extension's pipelines ran."""
    extensions.fire_for_cluster(cluster, "on_before_deployment_serialization", cluster, nodes, False)
    common = _common(cluster)
    node_data = [_node(n) for n in nodes]
    for pipeline in extensions.pipelines_for(cluster):
        pipeline.process_deployment_for_cluster(cluster, common)
        for node, data in zip(nodes, node_data):
            pipeline.process_deployment_for_node(node, data)
    return {"common": common, "nodes": node_data}


def provisioning_info(cluster, nodes):
    extensions.fire_for_cluster(cluster, "on_before_provisioning_serialization", cluster, nodes, False)
    method = cluster.editable_attributes.get("provision", {}).get("method", {}).get("value", "image")
    common = {"engine": {"provision_method": method},
              "image_data": cluster.generated_attributes.get("provision", {}).get("image_data", {})}
    node_data = [{"uid": str(n.id), "slave_name": n.hostname, "hostname": n.fqdn, "mac": n.mac,
                  "ip": n.ip, "power_address": n.ip, "ks_meta": {"pm_data": {"ks_spaces": n.volumes}}}
                 for n in nodes]
    for pipeline in extensions.pipelines_for(cluster):
        pipeline.process_provisioning_for_cluster(cluster, common)
        for node, data in zip(nodes, node_data):
            pipeline.process_provisioning_for_node(node, data)
    return dict(common, nodes=node_data)
