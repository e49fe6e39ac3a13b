"""ConfigDB's own rule: who may write documents unbound by their definitions' patch policies."""
from nailgun_host.public import allowed, authorize

BYPASS_PATCH_POLICY = "nailgun:bypass_patch_policy"


def bound_by_patch_policy():
    """Whether the request's identity is held to the patch policies of the resource definitions
    (everyone but whom ``nailgun:bypass_patch_policy`` allows)."""
    return not allowed(BYPASS_PATCH_POLICY)


def authorize_bypassing_patch_policy():
    """403 naming ``nailgun:bypass_patch_policy`` unless the request's identity may do what a patch policy
    would refuse (delete a resource definition that carries one)."""
    authorize(BYPASS_PATCH_POLICY)
