"""Who may do what: the rules, in code, through oslo.policy (overridable by ``AUTH.policy_file``).

Handlers name a rule; they never compare role names themselves. The default roles are
Keystone's own (``reader``, ``member``, ``admin``) plus ``service`` for callers that act
for others (a lifecycle tool recording the operator it acts for). A policy file in
oslo.policy's YAML format replaces any rule by name, e.g. ``"nailgun:write": "role:admin"``.

The rules in code are the host's (``RULES``) chained with each loaded extension's
(``BaseExtension.policy_rules``). ``documented`` gives each the operations it guards, read from the
URL maps; ``nailgun_host.policies`` hands them to ``oslopolicy-sample-generator --namespace nailgun``.

The file is read strictly: a rule that does not parse stops the server at start. It is read
again when it changes; if it then cannot be read or parsed, every request is refused with
503 until it is fixed, rather than falling back to the rules in code (a deleted file must
not lift the restrictions it added).
"""
import logging
import os
import re
import threading

import yaml
from oslo_config import cfg
from oslo_policy import policy

from nailgun_host import errors, extensions
from nailgun_host.settings import settings

LOG = logging.getLogger(__name__)

READ = "nailgun:read"
WRITE = "nailgun:write"
ADMIN = "nailgun:admin"
ACT_FOR_OTHERS = "nailgun:act_for_others"
READ_SECRETS = "nailgun:read_secrets"
CHANGE_SECRETS = "nailgun:change_secrets"
READ_STATS = "nailgun:read_stats"

RULES = (
    policy.RuleDefault("admin_required", "role:admin", description="The cloud's administrators."),
    policy.RuleDefault(READ, "role:reader or role:member or role:admin or role:hiera",
                       description="Every GET: read clusters, nodes, the environment model and ConfigDB."),
    policy.RuleDefault(WRITE, "role:member or role:admin",
                       description="Every write that is not admin-only (POST, PUT, PATCH, DELETE)."),
    policy.RuleDefault(ADMIN, "rule:admin_required",
                       description="Admin-only actions: deleting a cluster, and what the secrets rules name."),
    policy.RuleDefault(READ_SECRETS, "rule:admin_required or role:hiera",
                       description="See secret values in clear (docs/operator/secrets.md); everyone else reads the mask. "
                                   "hiera: the role of the Hiera backends on the Puppet master."),
    policy.RuleDefault(CHANGE_SECRETS, "rule:admin_required",
                       description="Change what is secret: a resource definition's content (its schema marks "
                                   "secrets and constrains them), or a write that would turn a secret value into a "
                                   "plain one (a password field's type, a release's defaults)."),
    policy.RuleDefault(READ_STATS, "rule:admin_required or role:monitoring",
                       description="Read the request statistics (GET /stats, /metrics): who sent how many requests. "
                                   "monitoring: a scraper's role, which reads nothing else."),
    policy.RuleDefault(ACT_FOR_OTHERS, "role:service",
                       description="Record another user as the author of a change (X-Config-Author)."),
)


def rules_in_code():
    """The host's rules, then every loaded extension's (``BaseExtension.policy_rules``)."""
    chained = list(RULES)
    for extension in extensions.get_all_extensions():
        chained.extend(extension.policy_rules())
    return chained


def known_roles():
    """The roles the rules in code give rights to (read from the rules, so a new role is never forgotten)."""
    return {role for rule in rules_in_code() for role in re.findall(r"role:([^\s()]+)", rule.check_str)}


#: where the API's routes are mounted, as the documented operations show them
API_PREFIX = "/api/v1"


def _operation(method, template):
    return {"method": method, "path": API_PREFIX + re.sub(r"<([a-z_]+)>", r"{\1}", template)}


def _guarded(routes, loaded):
    """rule name -> the (method, route template) pairs of ``routes`` it guards: each method under the rule its
    handler names (``policy_rules``) and those it asks inside (``policy_checks``), and where the ``loaded``
    extensions' callbacks ask one inside a host handler (``BaseExtension.policy_checks``); ``ValueError``
    when such a check names a method no route serves."""
    handlers = {entry["template"]: entry["handler"] for entry in routes}
    found = {}
    for template, handler in handlers.items():
        for method in [] if handler.public else handler.allowed_methods() + ["OPTIONS"]:
            for rule in (handler.policy_rule(method),) + tuple(handler.policy_checks.get(method, ())):
                found.setdefault(rule, []).append((method, template))
    for extension in loaded:
        for rule, operations in extension.policy_checks().items():
            for method, template in operations:
                if template not in handlers or method not in handlers[template].allowed_methods():
                    raise ValueError("{0} is checked on {1} {2}, which no route serves".format(rule, method, template))
                found.setdefault(rule, []).append((method, template))
    return found


def documented(routes, loaded):
    """The rules in code, the host's then the ``loaded`` extensions', each a ``DocumentedRuleDefault`` with the
    operations of the URL map ``routes`` it guards (an extension's rule keeps those it names, which must be
    operations of the map: else ``ValueError``). A rule other rules refer to (``admin_required``) lists their
    operations; one that guards no route of the map (``nailgun:act_for_others`` without ConfigDB) stays as
    it is declared.
    """
    found = _guarded(routes, loaded)
    served = [_operation(method, entry["template"])
              for entry in routes for method in entry["handler"].allowed_methods() + ["OPTIONS"]]
    chained = list(RULES) + [rule for extension in loaded for rule in extension.policy_rules()]
    for rule in chained:
        strays = [op for op in getattr(rule, "operations", []) if op not in served]
        if strays:
            raise ValueError("{0} names operations no route serves: {1}".format(rule.name, strays))
        for referred in re.findall(r"rule:([^\s()]+)", rule.check_str):
            found.setdefault(referred, []).extend(found.get(rule.name, []))
    answer = []
    for rule in chained:
        operations = [_operation(*operation) for operation in dict.fromkeys(found.get(rule.name, []))]
        operations += [op for op in getattr(rule, "operations", []) if op not in operations]
        answer.append(policy.DocumentedRuleDefault(rule.name, rule.check_str, rule.description, operations)
                      if operations else rule)
    return answer


class PolicyFileError(ValueError):
    """The policy file cannot be read or one of its rules does not parse."""


def file_rules(path):
    """The rules of the policy file ``path``, read strictly (``PolicyFileError`` names what is wrong)."""
    try:
        with open(path) as stream:
            content = yaml.safe_load(stream) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise PolicyFileError("cannot read the policy file {0}: {1}".format(path, exc))
    if not isinstance(content, dict) or not all(
            isinstance(name, str) and isinstance(check, str) for name, check in content.items()):
        raise PolicyFileError("the policy file {0} must map rule names to check strings".format(path))
    referenced = set(re.findall(r"rule:([^\s()]+)", " ".join(content.values())))
    in_code = rules_in_code()
    unknown = sorted(set(content) - {rule.name for rule in in_code} - referenced)
    if unknown:  # a misspelt rule name would silently leave the rule in code in force
        raise PolicyFileError("the policy file {0} names rules that do not exist and that no rule refers to: {1} "
                              "(the rules: {2})".format(path, ", ".join(unknown), ", ".join(r.name for r in in_code)))
    parsed = policy.Rules.from_dict(content)
    for name, check in content.items():
        # oslo.policy turns a rule it cannot parse into "never" (and only logs it): refuse instead
        if str(parsed[name]) == "!" and check.strip() not in ("", "!"):
            raise PolicyFileError("the rule {0!r} of {1} does not parse: {2!r}".format(name, path, check))
    return content


def _file_stamp(path):
    try:
        stat = os.stat(path)
    except OSError as exc:
        raise PolicyFileError("cannot read the policy file {0}: {1}".format(path, exc))
    return stat.st_mtime_ns, stat.st_size, stat.st_ino


def _new_enforcer(path):
    in_code = rules_in_code()
    rules = {rule.name: rule.check_str for rule in in_code}
    if path:
        rules.update(file_rules(path))
    conf = cfg.ConfigOpts()
    conf([], project="nailgun", default_config_files=[], default_config_dirs=[])
    # use_conf=False: the rules are these, never a file oslo.policy would find on its own in /etc
    found = policy.Enforcer(conf, rules=policy.Rules.from_dict(rules), use_conf=False)
    found.register_defaults(in_code)
    return found


class _Rules:
    """An enforcer and the decisions it made, by rule and identity.

    A rule here sees only the identity (the target is always empty), so the same identity
    gets the same answer until the rules change: oslo.policy's enforcement costs about a third
    of a millisecond, which every request would otherwise pay.
    """

    MAX_DECISIONS = 10000

    def __init__(self, stamp, enforcer):
        self.stamp = stamp
        self.enforcer = enforcer
        self.decisions = {}

    def allowed(self, rule, identity):
        key = (rule, identity)
        decision = self.decisions.get(key)
        if decision is None:
            decision = bool(self.enforcer.authorize(rule, {}, identity.credentials()))
            if len(self.decisions) >= self.MAX_DECISIONS:
                self.decisions.clear()
            self.decisions[key] = decision
        return decision

    def read_access(self, rule, identity):
        """None when ``rule`` refuses ``identity``, else whether it sees secrets: both decisions in one."""
        key = (rule, READ_SECRETS, identity)
        decision = self.decisions.get(key, self)
        if decision is self:
            decision = self.allowed(READ_SECRETS, identity) if self.allowed(rule, identity) else None
            if len(self.decisions) >= self.MAX_DECISIONS:
                self.decisions.clear()
            self.decisions[key] = decision
        return decision


_lock = threading.Lock()
_rules = {}  # policy file path (None: the rules in code) -> _Rules


def _current_rules():
    path = settings["AUTH"].get("policy_file")
    stamp = _file_stamp(path) if path else None
    known = _rules.get(path)
    if known is not None and known.stamp == stamp:  # the rules in force: no lock needed to read them
        return known
    with _lock:
        known = _rules.get(path)
        if known is None or known.stamp != stamp:
            known = _rules[path] = _Rules(stamp, _new_enforcer(path))
        return known


def enforcer():
    """The enforcer of the settings' policy file (read again when it changes), or of the rules in code.

    PolicyFileError when the file cannot be used (at start: the server does not start).
    """
    return _current_rules().enforcer


def _rules_in_force():
    try:
        return _current_rules()
    except PolicyFileError as exc:
        LOG.error("Refusing every request: %s", exc)
        raise errors.ServiceUnavailable("The server's policy file cannot be used; an operator must fix it")


def allowed(rule, identity):
    return _rules_in_force().allowed(rule, identity)


def read_access(rule, identity):
    """None when ``rule`` refuses ``identity``, else whether it may see secrets (``READ_SECRETS``): what a read
    asks on every request, one remembered decision."""
    return _rules_in_force().read_access(rule, identity)


def authorize(rule, identity):
    """Raise 403 naming ``rule`` unless ``identity`` may do what it guards."""
    if not allowed(rule, identity):
        raise errors.NotAllowed(
            "Policy does not allow {0} for user {1} (roles: {2})".format(
                rule, identity.name, ", ".join(identity.roles) or "none"), [rule])
