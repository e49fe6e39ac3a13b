"""RFC 6902 patches of ConfigDB documents: the per-path policy a resource definition gives them.

The definition's ``content`` may say which operations are allowed where:
``"x-patch-policy": {"/nova/**": ["add", "replace", "remove"], "/keystone/admin_token": ["replace"]}``
and what is allowed elsewhere: ``"x-patch-default": "allow"`` (the default: every operation) or
``"deny"``. ``test`` is always allowed: it changes nothing, and a client needs it for
compare-and-swap. Checking and applying are the host's (``nailgun_platform.patching``), so a bad
patch gets the same answer here as on the environment model.

The policy binds every identity but those ``nailgun:bypass_patch_policy`` allows (admin), and every
write: what a write changes is judged (``check_change``, by ``write_policy``), whatever route it takes;
a plain patch's operations are checked each on its own path first, with the answers the policy has
always given. A 403 names the definition by the id of the version whose policy refused (the id
``/config/resource_definitions/<id>`` answers to).
"""
from nailgun_host.public import errors
from nailgun_platform.public import patching

POLICY, DEFAULT = "x-patch-policy", "x-patch-default"


def rules(content):
    """``(policy, default operations)`` a definition's ``content`` gives, ``test`` added everywhere;
    400 when what it says is not a policy (checked when a definition is written)."""
    content = content if isinstance(content, dict) else {}
    policy = content.get(POLICY, {})
    default = content.get(DEFAULT, "allow")
    if default not in ("allow", "deny"):
        raise errors.InvalidData('{0} must be "allow" or "deny"'.format(DEFAULT))
    try:
        patching.check_policy_patterns(policy)
    except errors.InvalidData as exc:
        raise errors.InvalidData("{0}: {1}".format(POLICY, exc.message))
    policy = {pattern: sorted(set(ops) | {"test"}, key=patching.OPERATIONS.index) for pattern, ops in policy.items()}
    return policy, patching.OPERATIONS if default == "allow" else ("test",)


def policy(resource):
    """``rules`` of ``resource``; 409 naming the definition when one stored before definitions were
    checked is not a policy (a client of its documents cannot fix that)."""
    try:
        return rules(resource.content)
    except errors.InvalidData as exc:
        raise errors.Conflict("Resource definition {0} cannot be patched: {1}".format(resource.id, exc.message))


def apply(resource, document, patch, bound=True):
    """``document`` (as the client sees it) patched by ``patch`` (``patching.check_operations`` passed
    it): 403 where the policy refuses an operation (for an identity it ``bound`` s), then the host's
    mapping of what does not apply (404, 409); 400 unless the result is an object, as every document is
    (a PUT's body must be one too). What the result changes is judged when it is written
    (``write_policy.check``)."""
    if bound:
        allowed, default = policy(resource)
        patching.check_policy(patch, allowed, default)
    patched = patching.apply(document, patch, checked=True)
    if not isinstance(patched, dict):
        raise errors.InvalidData("The patch must leave the document a JSON object")
    return patched


def refuses_anything(allowed, default):
    """Whether a policy (``rules``) could refuse any change: a pattern, or a default that is not "allow"."""
    return bool(allowed) or set(default) != set(patching.OPERATIONS)


def check_change(resource, stored, new, what="This write"):
    """403 naming the definition's policy and what it refuses in the write ``stored`` -> ``new`` (both
    clear: the mask written back keeps the stored value, so it changes nothing), judged by its effect
    (``nailgun_platform.patching.refused_changes``); ``what`` says what ``stored`` and ``new`` are."""
    allowed, default = policy(resource)
    refused = patching.refused_changes(stored, new, allowed, default)
    if refused:
        first = refused[0]
        raise errors.NotAllowed("{0} would {1} '{2}': the {3} of resource definition {4} ({5} version {6}) "
                                "allows {7} there".format(what, first["op"], first["path"], POLICY,
                                                          resource.definition_id, resource.name, resource.version,
                                                          ", ".join(first["allowed"]) or "nothing"), refused)
