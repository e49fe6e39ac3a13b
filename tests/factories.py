"""An environment factory like Nailgun's: releases, clusters and nodes made through the API."""
import itertools

_macs = itertools.count(1)


def new_mac():
    value = next(_macs)
    return "52:54:00:{0:02x}:{1:02x}:{2:02x}".format((value >> 16) & 255, (value >> 8) & 255, value & 255)


class EnvironmentManager:
    def __init__(self, app):
        self.app = app
        self.releases, self.clusters, self.nodes = [], [], []

    def create_release(self, **kwargs):
        data = {"name": "Mitaka on Ubuntu 14.04", "version": "mitaka-9.0", "operating_system": "Ubuntu"}
        data.update(kwargs)
        release = self.app.post_json("/api/v1/releases/", data).json
        self.releases.append(release)
        return release

    def create_cluster(self, release_id=None, **kwargs):
        if release_id is None:
            release_id = (self.releases[-1] if self.releases else self.create_release())["id"]
        data = {"name": "cluster-{0}".format(len(self.clusters) + 1), "release_id": release_id}
        data.update(kwargs)
        cluster = self.app.post_json("/api/v1/clusters/", data).json
        self.clusters.append(cluster)
        return cluster

    def create_node(self, cluster_id=None, roles=None, pending_roles=None, status=None,
                    error_type=None, nics=2, disk_gb=100, **kwargs):
        """A discovered node, optionally in a cluster with roles and a status."""
        mac = new_mac()
        interfaces = [{"name": "eth{0}".format(i), "mac": mac if i == 0 else new_mac(), "pxe": i == 0}
                      for i in range(nics)]
        data = {"mac": mac, "meta": {"interfaces": interfaces,
                                     "disks": [{"name": "sda", "size": disk_gb * 1024 ** 3}]}}
        data.update(kwargs)
        node = self.app.post_json("/api/v1/nodes/", data).json
        update = {}
        if cluster_id is not None:
            update.update(cluster_id=cluster_id, roles=roles or [], pending_roles=pending_roles or [])
        if status is not None:
            update["status"] = status
        if error_type is not None:
            update["error_type"] = error_type
        if update:
            node = self.app.put_json("/api/v1/nodes/{0}/".format(node["id"]), update).json
        self.nodes.append(node)
        return node

    def create(self, release_kwargs=None, cluster_kwargs=None, nodes_kwargs=()):
        release = self.create_release(**(release_kwargs or {}))
        cluster = self.create_cluster(release_id=release["id"], **(cluster_kwargs or {}))
        for node_kwargs in nodes_kwargs:
            self.create_node(cluster_id=cluster["id"], **node_kwargs)
        return cluster

    def get_node(self, node_id):
        return self.app.get("/api/v1/nodes/{0}/".format(node_id)).json

    def network_configuration(self, cluster_id):
        return self.app.get("/api/v1/clusters/{0}/network_configuration/neutron/".format(cluster_id)).json
