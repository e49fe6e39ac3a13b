"""Network configuration and VIPs of a cluster."""
from nailgun_host import errors, schemas
from nailgun_host.api.base import BaseHandler
from nailgun_host.objects import cluster as cluster_obj
from nailgun_host.objects import network


class NetworkConfigurationHandler(BaseHandler):
    """GET/PUT /clusters/<id>/network_configuration/<neutron|nova_network>/."""

    request_schemas = {"PUT": schemas.NETWORK_CONFIGURATION}

    def _cluster(self, cluster_id, provider, lock=False):
        cluster = cluster_obj.get(cluster_id, lock=lock)
        if cluster.net_provider != provider:
            raise errors.InvalidData("Wrong net provider: environment {0} uses {1}".format(
                cluster.id, cluster.net_provider))
        return cluster

    def GET(self, cluster_id, provider):
        return network.serialize_configuration(self._cluster(cluster_id, provider))

    def PUT(self, cluster_id, provider):
        cluster = self._cluster(cluster_id, provider, lock=True)
        network.update_configuration(cluster, self.body())
        return network.serialize_configuration(cluster)


class ClusterVIPsHandler(BaseHandler):
    def GET(self, cluster_id):
        return [network.vip_to_dict(v) for v in network.get_vips(cluster_obj.get(cluster_id))]
