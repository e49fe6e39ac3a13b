"""Where the upgrade extension's callbacks ask the host's rules inside the host's handlers
(``BaseExtension.policy_checks``); its own handlers say it with ``policy_checks``. It has no rule of its own."""
from nailgun_host.public import policy

CHECKS = {
    # deploying a cluster's session applies its staged environment model: a declassifying write is refused there
    policy.CHANGE_SECRETS: [("POST", "/clusters/<cluster_id>/sessions/<session>/deploy")],
}
