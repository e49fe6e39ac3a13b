"""ConfigDB's policy: its own rule, and where its handlers check the host's rules inside.

The extension hands both to the host through the contract (``BaseExtension.policy_rules`` and
``policy_checks``), which chains them after its own rules for the enforcer and the sample policy.
"""
from oslo_policy.policy import DocumentedRuleDefault

from nailgun_host import policy
from nailgun_ext_configdb.api.patch_rights import BYPASS_PATCH_POLICY
from nailgun_ext_configdb.urls import DOCUMENT

_DOCUMENT = "/api/v1" + DOCUMENT.replace("<", "{").replace(">", "}")

RULES = [
    DocumentedRuleDefault(
        BYPASS_PATCH_POLICY, "rule:admin_required",
        description="Write ConfigDB documents unbound by their resource definition's x-patch-policy, and delete "
                    "a definition that has one (whoever may change a definition's content may change its "
                    "policy anyway).",
        operations=[{"method": "PUT", "path": _DOCUMENT}, {"method": "PATCH", "path": _DOCUMENT},
                    {"method": "PATCH", "path": _DOCUMENT + "/keys/{operation}"},
                    {"method": "POST", "path": _DOCUMENT + "/revert"},
                    {"method": "DELETE", "path": "/api/v1/config/resource_definitions/{resource_definition_id}"},
                    {"method": "POST", "path": "/api/v1/clusters/{cluster_id}/sessions/{session}/deploy"}]),
]

#: the host's rules ConfigDB's handlers check inside: see ``BaseExtension.policy_checks``
CHECKS = {
    policy.ACT_FOR_OTHERS: [("PUT", DOCUMENT), ("PATCH", DOCUMENT), ("PATCH", DOCUMENT + "/keys/<operation>"),
                            ("POST", DOCUMENT + "/revert"),
                            ("PUT", "/config/environments/<environment_id>/pins/<resource>")],
    policy.CHANGE_SECRETS: [("POST", "/config/resource_definitions"),
                            ("PUT", "/config/resource_definitions/<resource_definition_id>"),
                            ("PATCH", "/config/resource_definitions/<resource_definition_id>"),
                            ("DELETE", "/config/resource_definitions/<resource_definition_id>"),
                            ("PUT", "/config/components/<component_id>"),
                            ("PATCH", "/config/components/<component_id>"),
                            ("PUT", "/config/environments/<environment_id>/pins/<resource>")],
    policy.READ_SECRETS: [("GET", DOCUMENT), ("PATCH", DOCUMENT), ("GET", DOCUMENT + "/diff")],
}

