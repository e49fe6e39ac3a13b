"""What a write may change where a resource definition's patch policy (``json_patch``) binds the writer.

Every write (PUT, patch, keys, revert, a session's staging and its deploy) is judged by its effect
(``json_patch.check_change``) twice, with the same policy:

- on the document itself, stored -> new;
- on the effective values at the document's own level (``merge``: the chain of levels down to it,
  values then overrides at each), with the stored document and then with the new one: an override
  or a narrower level's document changes what the policy protects without touching the document that
  holds it.

A key set to the marker ``{"$unset": true}`` is absent in both, as a merge reads it: setting it
removes what was there (it needs ``remove``), replacing it adds. A policy that refuses nothing
costs nothing: no merge, no query.
"""
from nailgun_ext_configdb.models import OVERRIDES, VALUES
from nailgun_ext_configdb.objects import document as document_obj
from nailgun_ext_configdb.objects import json_patch, levels, merge


def check(environment, resource, level_path, kind, stored, new):
    """403 (``json_patch.check_change``) when writing ``new`` over ``stored`` (both clear) at that place
    changes the document, or the effective values at its level, where the policy does not allow it."""
    if not json_patch.refuses_anything(*json_patch.policy(resource)):
        return
    paths = levels.prefixes(levels.split(level_path))
    chain = {(d.level_path, d.kind): d.data for d in document_obj.chain(environment.id, resource.id, paths)}
    judge(resource, chain, paths, (level_path, kind), stored, new)


def judge(resource, chain, paths, place, stored, new):
    """``check`` of writing ``new`` over ``stored`` at ``place`` (level path, kind), the last of ``paths``
    (the levels down to it, broadest first), where ``chain`` holds the other documents by place."""
    json_patch.check_change(resource, merge.without_markers(stored), merge.without_markers(new))
    order = [(path, kind) for path in paths for kind in (VALUES, OVERRIDES)]

    def effective(data):
        return merge.values([(each, data if each == place else chain[each]) for each in order
                             if each == place or each in chain])

    json_patch.check_change(resource, effective(stored), effective(new),
                            "This write, in the effective values at {0},".format(levels.display(place[0])))
