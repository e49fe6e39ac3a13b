"""ConfigDB's own policy rule, handed to the host through the contract (``BaseExtension.policy_rules``),
which chains it after its own for the enforcer and the sample policy. Its handlers name where they ask
it (``policy_checks``); the operations here are where its session callback asks it inside the host's
deploy handlers."""
from oslo_policy.policy import DocumentedRuleDefault

from nailgun_ext_configdb.api.patch_rights import BYPASS_PATCH_POLICY
from nailgun_ext_configdb.api.sessions import PREFIX

RULES = [
    DocumentedRuleDefault(
        BYPASS_PATCH_POLICY, "rule:admin_required",
        description="Write ConfigDB documents unbound by their resource definition's x-patch-policy, and delete "
                    "a definition that has one (whoever may change a definition's content may change its "
                    "policy anyway).",
        operations=[{"method": "POST", "path": "/api/v1" + prefix + "/sessions/{session}/deploy"}
                    for prefix in ("/clusters/{cluster_id}", PREFIX.replace("<", "{").replace(">", "}"))]),
]
