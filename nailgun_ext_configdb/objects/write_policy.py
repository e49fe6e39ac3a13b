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
    json_patch.check_change(resource, merge.without_markers(stored), merge.without_markers(new))
    before, after = _effective(environment, resource, level_path, kind, stored, new)
    json_patch.check_change(resource, before, after, "This write, in the effective values at {0},".format(
        levels.display(level_path)))


def _effective(environment, resource, level_path, kind, stored, new):
    """The effective values at ``level_path`` with ``stored`` and with ``new`` at (``level_path``, ``kind``),
    the other documents of the chain as stored."""
    paths = levels.prefixes(levels.split(level_path))
    placed = {(d.level_path, d.kind): d.data for d in document_obj.chain(environment.id, resource.id, paths)}
    order = [(path, each) for path in paths for each in (VALUES, OVERRIDES)]
    merged = []
    for data in (stored, new):
        placed[level_path, kind] = data
        merged.append(merge.effective([(place, placed[place]) for place in order if place in placed])[0])
    return merged
