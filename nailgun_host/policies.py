"""The documented policy, for oslo.policy's generators (entry points ``oslo.policy.policies`` and
``oslo.policy.enforcer``, both named ``nailgun``).

``oslopolicy-sample-generator --namespace nailgun`` prints every rule in code, the host's and every
installed extension's (loaded through stevedore as the server loads them), with its description and the
operations of the URL maps it guards; ``oslopolicy-policy-generator --namespace nailgun`` prints the
rules in force: those of ``AUTH.policy_file`` over the rules in code, or fails as the server would
start with a file it cannot use.
"""
import os

from oslo_config import cfg
from oslo_policy import policy as oslo

from nailgun_host import extensions, policy
from nailgun_host.app import collect_routes
from nailgun_host.settings import settings


def list_rules():
    """Every rule in code, documented with the operations it guards."""
    loaded = extensions.get_all_extensions()
    routes, _handlers = collect_routes(loaded)
    return policy.documented(routes, loaded)


def get_enforcer():
    """An enforcer of the rules in code and of the policy file of the settings (``NAILGUN_CONFIG``, else
    ``/etc/fuel-nailgun-extensions/settings.yaml`` when it exists, as the server reads them), for
    ``oslopolicy-policy-generator``."""
    settings.reload()
    conf = cfg.ConfigOpts()
    conf([], project="nailgun", default_config_files=[], default_config_dirs=[])
    path = settings["AUTH"].get("policy_file")
    if path:  # a file the server would refuse (missing, a misspelt rule, a rule that does not parse) is refused
        policy.file_rules(path)
    # oslo.policy looks a relative name up in configuration directories; the server opens it from here
    found = oslo.Enforcer(conf, policy_file=os.path.abspath(path) if path else None)
    found.register_defaults(list_rules())
    return found
