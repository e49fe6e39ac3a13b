"""Where the upgrade extension's handlers check the host's rules inside (``BaseExtension.policy_checks``);
it has no rule of its own: its routes are guarded by ``nailgun:read`` and ``nailgun:write``."""
from nailgun_host import policy

CHECKS = {
    policy.CHANGE_SECRETS: [("POST", "/clusters/<cluster_id>/upgrade/clone"),
                            ("PATCH", "/clusters/<cluster_id>/model"),
                            ("PATCH", "/clusters/<cluster_id>/model/<path>"),
                            ("POST", "/clusters/<cluster_id>/sessions/<session>/deploy")],
    policy.READ_SECRETS: [("GET", "/clusters/<cluster_id>/model"), ("GET", "/clusters/<cluster_id>/model/<path>"),
                          ("POST", "/clusters/<cluster_id>/upgrade/clone_release/<release_id>")],
}
