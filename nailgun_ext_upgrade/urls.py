"""The extension's URL map, relative to /api/v1 and /api (templates: see ``nailgun_host.api.base.route``)."""
from nailgun_host.public import route
from nailgun_ext_upgrade.api import environment_model, upgrade

URLS = [
    route("/upgrade/relations", upgrade.UpgradeRelationsHandler),
    route("/clusters/<cluster_id>/upgrade", upgrade.ClusterUpgradeHandler),
    route("/clusters/<cluster_id>/upgrade/clone", upgrade.ClusterUpgradeCloneHandler),
    route("/clusters/<cluster_id>/upgrade/assign", upgrade.NodeReassignHandler),
    route("/clusters/<cluster_id>/upgrade/vips", upgrade.CopyVIPsHandler),
    route("/clusters/<cluster_id>/upgrade/clone_release/<release_id>", upgrade.CreateUpgradeReleaseHandler),
    route("/clusters/<cluster_id>/model", environment_model.ClusterModelHandler),
    route("/clusters/<cluster_id>/model/<path>", environment_model.ClusterModelHandler, path=".+"),
]
