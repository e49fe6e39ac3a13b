"""The core URL map: (regex relative to /api/v1 and /api, handler class)."""
from nailgun_host.api import clusters, meta, networks, nodes, releases, tasks

ID = r"(\d+)"

CORE_URLS = [
    (r"/version/?", meta.VersionHandler),
    (r"/extensions/?", meta.ExtensionListHandler),
    (r"/releases/?", releases.ReleaseCollectionHandler),
    (rf"/releases/{ID}/?", releases.ReleaseHandler),
    (rf"/releases/{ID}/deployment_tasks/?", releases.ReleaseDeploymentTasksHandler),
    (r"/clusters/?", clusters.ClusterCollectionHandler),
    (rf"/clusters/{ID}/?", clusters.ClusterHandler),
    (rf"/clusters/{ID}/attributes/?", clusters.ClusterAttributesHandler),
    (rf"/clusters/{ID}/attributes/defaults/?", clusters.ClusterAttributesDefaultsHandler),
    (rf"/clusters/{ID}/extensions/?", clusters.ClusterExtensionsHandler),
    (rf"/clusters/{ID}/assignment/?", clusters.ClusterAssignmentHandler),
    (rf"/clusters/{ID}/unassignment/?", clusters.ClusterUnassignmentHandler),
    (rf"/clusters/{ID}/provision/?", clusters.ClusterProvisionHandler),
    (rf"/clusters/{ID}/(?:deploy|changes)/?", clusters.ClusterDeployHandler),
    (rf"/clusters/{ID}/orchestrator/deployment/defaults/?", clusters.ClusterDeploymentDefaultsHandler),
    (rf"/clusters/{ID}/network_configuration/(neutron|nova_network)/?", networks.NetworkConfigurationHandler),
    (rf"/clusters/{ID}/network_configuration/ips/vips/?", networks.ClusterVIPsHandler),
    (r"/nodegroups/?", networks.NodeGroupCollectionHandler),
    (rf"/nodegroups/{ID}/?", networks.NodeGroupHandler),
    (r"/nodes/?", nodes.NodeCollectionHandler),
    (rf"/nodes/{ID}/?", nodes.NodeHandler),
    (rf"/nodes/{ID}/interfaces/?", nodes.NodeInterfacesHandler),
    (rf"/nodes/{ID}/disks/?", nodes.NodeDisksHandler),
    (r"/tasks/?", tasks.TaskCollectionHandler),
    (rf"/tasks/{ID}/?", tasks.TaskHandler),
]
