"""Roles of nodes in a cluster: Nailgun's checks that the release knows them, none
conflicts with another, and the cluster's settings meet their restrictions."""
from nailgun_host import errors
from nailgun_host.objects.attributes import attribute_values


def validate_roles(cluster, roles):
    """Nailgun's role checks: known roles, no conflicts, restrictions met."""
    metadata = cluster.release.roles_metadata or {}
    unknown = sorted(set(roles) - set(metadata))
    if unknown:
        raise errors.InvalidData("{0} are not valid roles for node in environment {1}".format(
            unknown, cluster.id))
    for role in roles:
        for other in metadata[role].get("conflicts") or []:
            if other in roles:
                raise errors.InvalidData("Role '{0}' in conflict with role '{1}'.".format(role, other))
    values = attribute_values(cluster.editable_attributes)
    for role in roles:
        for restriction in metadata[role].get("restrictions") or []:
            if _restriction_holds(restriction.get("condition", ""), values):
                raise errors.InvalidData("Role '{0}' restrictions mismatch: {1}".format(
                    role, restriction.get("message", restriction.get("condition"))))


def _restriction_holds(condition, values):
    """Conditions of the form ``settings:section.key.value == <literal>``."""
    left, _, right = condition.partition("==")
    left, right = left.strip(), right.strip()
    if not left.startswith("settings:") or not left.endswith(".value"):
        return False
    section, _, key = left[len("settings:"):-len(".value")].partition(".")
    literal = {"true": True, "false": False, "null": None}.get(right, right.strip("'\""))
    return values.get(section, {}).get(key) == literal
