"""The core URL map, relative to /api/v1 and /api (templates: see ``api.base.route``)."""
from nailgun_host.api import clusters, meta, networks, nodegroups, nodes, releases, stats, tasks
from nailgun_host.api.base import route
from nailgun_host.api.config_sessions import session_routes
from nailgun_host.objects import cluster as cluster_obj
from nailgun_host.objects.config_session import Scope


def cluster_scope(cluster_id, lock):
    """A cluster's sessions scope (the cluster row locked with ``lock``); 404 when there is no such cluster."""
    return Scope("cluster", cluster_obj.get(cluster_id, lock=lock).id)


URLS = [
    route("/", meta.APIRootHandler),
    route("/version", meta.VersionHandler),
    route("/health", meta.HealthHandler),
    route("/identity", meta.IdentityHandler),
    route("/extensions", meta.ExtensionListHandler),
    route("/openapi.json", meta.OpenAPIHandler),
    route("/stats", stats.StatsHandler),
    route("/releases", releases.ReleaseCollectionHandler),
    route("/releases/<release_id>", releases.ReleaseHandler),
    route("/releases/<release_id>/deployment_tasks", releases.ReleaseDeploymentTasksHandler),
    route("/clusters", clusters.ClusterCollectionHandler),
    route("/clusters/<cluster_id>", clusters.ClusterHandler),
    route("/clusters/<cluster_id>/attributes", clusters.ClusterAttributesHandler),
    route("/clusters/<cluster_id>/attributes/defaults", clusters.ClusterAttributesDefaultsHandler),
    route("/clusters/<cluster_id>/generated", clusters.ClusterGeneratedHandler),
    route("/clusters/<cluster_id>/extensions", clusters.ClusterExtensionsHandler),
    route("/clusters/<cluster_id>/assignment", clusters.ClusterAssignmentHandler),
    route("/clusters/<cluster_id>/unassignment", clusters.ClusterUnassignmentHandler),
    route("/clusters/<cluster_id>/provision", clusters.ClusterProvisionHandler),
    route("/clusters/<cluster_id>/deploy", clusters.ClusterDeployHandler),
    route("/clusters/<cluster_id>/changes", clusters.ClusterDeployHandler),
    route("/clusters/<cluster_id>/orchestrator/deployment/defaults", clusters.ClusterDeploymentDefaultsHandler),
    route("/clusters/<cluster_id>/network_configuration/<provider>", networks.NetworkConfigurationHandler,
          provider="neutron|nova_network"),
    route("/clusters/<cluster_id>/network_configuration/ips/vips", networks.ClusterVIPsHandler),
    route("/nodegroups", nodegroups.NodeGroupCollectionHandler),
    route("/nodegroups/<nodegroup_id>", nodegroups.NodeGroupHandler),
    route("/nodes", nodes.NodeCollectionHandler),
    route("/nodes/<node_id>", nodes.NodeHandler),
    route("/nodes/<node_id>/interfaces", nodes.NodeInterfacesHandler),
    route("/nodes/<node_id>/disks", nodes.NodeDisksHandler),
    route("/tasks", tasks.TaskCollectionHandler),
    route("/tasks/<task_id>", tasks.TaskHandler),
    route("/transactions", tasks.TransactionCollectionHandler),
    route("/transactions/<task_id>", tasks.TaskHandler),
] + session_routes("/clusters/<cluster_id>", cluster_scope)
