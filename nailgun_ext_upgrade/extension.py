from nailgun_host.extensions import BaseExtension


class ClusterUpgradeExtension(BaseExtension):
    name = "cluster_upgrade"
    version = "1.0.0"
    description = "Clone an environment into an Upgrade Seed on a newer release and move nodes into it"
