"""Who may do what: the rules, in code, through oslo.policy (overridable by ``AUTH.policy_file``).

Handlers name a rule; they never compare role names themselves. The default roles are
Keystone's own (``reader``, ``member``, ``admin``) plus ``service`` for callers that act
for others (a lifecycle tool recording the operator it acts for). A policy file in
oslo.policy's YAML format replaces any rule by name, e.g. ``"nailgun:write": "role:admin"``.
"""
import os
import threading

from oslo_config import cfg
from oslo_policy import policy

from nailgun_host import errors
from nailgun_host.settings import settings

READ = "nailgun:read"
WRITE = "nailgun:write"
ADMIN = "nailgun:admin"
ACT_FOR_OTHERS = "nailgun:act_for_others"

RULES = (
    policy.RuleDefault("admin_required", "role:admin", description="The cloud's administrators."),
    policy.RuleDefault(READ, "role:reader or role:member or role:admin",
                       description="Every GET: read clusters, nodes, the environment model and ConfigDB."),
    policy.RuleDefault(WRITE, "role:member or role:admin",
                       description="Every write that is not admin-only (POST, PUT, PATCH, DELETE)."),
    policy.RuleDefault(ADMIN, "rule:admin_required",
                       description="Admin-only actions: deleting a cluster, and what the secrets rules name."),
    policy.RuleDefault(ACT_FOR_OTHERS, "role:service",
                       description="Record another user as the author of a change (X-Config-Author)."),
)

_lock = threading.Lock()
_enforcers = {}


def _new_enforcer(path):
    conf = cfg.ConfigOpts()
    conf([], project="nailgun", default_config_files=[], default_config_dirs=[])
    if not path:  # the rules in code, and nothing oslo.policy would find on its own in /etc
        found = policy.Enforcer(conf, rules=policy.Rules.from_dict({rule.name: rule.check_str for rule in RULES}),
                                use_conf=False)
        found.register_defaults(RULES)
        return found
    if not os.access(path, os.R_OK):
        raise ValueError("the policy file {0} cannot be read".format(path))
    found = policy.Enforcer(conf, policy_file=os.path.abspath(path))
    found.register_defaults(RULES)
    found.load_rules()  # checks the file: a rule in it that does not parse stops the server at start
    return found


def enforcer():
    """The enforcer of the settings' policy file (re-read when it changes), or of the rules in code."""
    path = settings["AUTH"].get("policy_file")
    with _lock:
        found = _enforcers.get(path)
        if found is None:
            found = _enforcers[path] = _new_enforcer(path)
        return found


def allowed(rule, identity):
    return enforcer().authorize(rule, {}, identity.credentials())


def authorize(rule, identity):
    """Raise 403 naming ``rule`` unless ``identity`` may do what it guards."""
    if not allowed(rule, identity):
        raise errors.NotAllowed(
            "Policy does not allow {0} for user {1} (roles: {2})".format(
                rule, identity.name, ", ".join(identity.roles) or "none"), [rule])
