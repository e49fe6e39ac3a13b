"""ConfigDB paths shared by the ``fuel2 config`` commands and the upload task.

A level value goes to the server as it was given: the server alone decides what a ``nodes`` value
names (in an environment linked to a cluster, one of its nodes by id or FQDN, stored as its id;
otherwise the text itself), so that every client (fuel2, fuel-ext, the upload, both Hiera backends)
addresses a node the same way. Client side only: nothing of the server is imported.
"""
from urllib.parse import quote

ROOT = "config/"
#: the spec spells the node level ``node=``; the environments Fuel creates call it ``nodes``
LEVEL_ALIASES = {"node": "nodes"}
NODE_LEVEL = "nodes"


class ConfigDBError(Exception):
    """A client-side problem (a bad argument); ``str()`` is the message shown."""


def parse_levels(spec):
    """``nodes=1`` or ``rack=A,nodes=node-1.domain.tld`` → ``[("rack", "A"), ("nodes", "node-1...")]``."""
    if not spec:
        return []
    levels = []
    for part in spec.split(","):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise ConfigDBError("--level expects NAME=VALUE[,NAME=VALUE...], got {0!r}".format(spec))
        name = name.strip()
        levels.append((LEVEL_ALIASES.get(name, name), value.strip()))
    return levels


def resource_path(env, levels, resource, kind="values"):
    """The URL (relative to /api/v1) of one resource's values or overrides at a level path."""
    parts = ["environments", str(env)]
    for name, value in levels:
        parts += [quote(name, safe=""), quote(str(value), safe="")]
    parts += ["resources", quote(str(resource), safe="/"), kind]
    return ROOT + "/".join(parts)
