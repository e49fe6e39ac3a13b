"""RFC 6902 patches of ConfigDB documents: the per-path policy a resource definition gives them.

The definition's ``content`` may say which operations are allowed where:
``"x-patch-policy": {"/nova/**": ["add", "replace", "remove"], "/keystone/admin_token": ["replace"]}``
and what is allowed elsewhere: ``"x-patch-default": "allow"`` (the default: every operation) or
``"deny"``. ``test`` is always allowed: it changes nothing, and a client needs it for
compare-and-swap. Checking and applying are the host's (``nailgun_host.patching``), so a bad
patch gets the same answer here as on the environment model.
"""
from nailgun_host import errors, patching

POLICY, DEFAULT = "x-patch-policy", "x-patch-default"


def _bad(resource, why):
    return errors.Conflict("Resource definition {0} cannot be patched: {1}".format(resource.id, why))


def policy(resource):
    """``(policy, default)`` of ``resource`` for ``patching.check_policy``, ``test`` added everywhere;
    409 naming the definition when what it says is not a policy (a client cannot fix that)."""
    content = resource.content if isinstance(resource.content, dict) else {}
    rules = content.get(POLICY, {})
    default = content.get(DEFAULT, "allow")
    if default not in ("allow", "deny"):
        raise _bad(resource, '{0} must be "allow" or "deny"'.format(DEFAULT))
    try:
        patching.check_policy_patterns(rules)
    except errors.InvalidData as exc:
        raise _bad(resource, "{0}: {1}".format(POLICY, exc.message))
    rules = {pattern: sorted(set(ops) | {"test"}, key=patching.OPERATIONS.index) for pattern, ops in rules.items()}
    return rules, patching.OPERATIONS if default == "allow" else ("test",)


def apply(resource, document, patch):
    """``document`` (as the client sees it) patched: 400 for a malformed patch, 403 where the policy
    refuses an operation, then the host's mapping of what does not apply (404, 409)."""
    patching.check_operations(patch)
    rules, default = policy(resource)
    patching.check_policy(patch, rules, default)
    return patching.apply(document, patch)
