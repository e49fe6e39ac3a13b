"""ConfigDB paths and lookups shared by the ``fuel2 config`` commands and the upload task.

Client side only: it needs ``requests`` (through ``nailgun_platform.client``) and nothing of
the server, so an operator's machine or a deployed node can run it.
"""
from urllib.parse import quote

from nailgun_platform.client import APIError

ROOT = "config/"
#: the spec spells the node level ``node=``; the environments Fuel creates call it ``nodes``
LEVEL_ALIASES = {"node": "nodes"}
NODE_LEVEL = "nodes"


class ConfigDBError(Exception):
    """A client-side problem (bad argument, unknown node); ``str()`` is the message shown."""


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


class NodeResolver:
    """Turns node FQDNs into Nailgun node ids for environments linked to a Nailgun cluster.

    An environment is linked when a cluster with its id exists; its ``nodes`` level
    values are node ids. Other environments keep free-form level values, so FQDNs
    pass through unchanged. One request for the cluster and one for the nodes, at most.
    """

    def __init__(self, client, env):
        self.client = client
        self.env = int(env)
        self._loaded = False
        self._ids = None

    def _linked(self):
        try:
            self.client.get("clusters/{0}/".format(self.env))
        except APIError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def _node_ids(self):
        """FQDN → id of every node, or None when the environment is not linked."""
        if not self._loaded:
            self._ids = ({n["fqdn"]: n["id"] for n in self.client.get("nodes/") if n.get("fqdn")}
                         if self._linked() else None)
            self._loaded = True
        return self._ids

    def node(self, value):
        value = str(value)
        ids = None if value.isdigit() else self._node_ids()
        if ids is None:
            return value
        if value not in ids:
            raise ConfigDBError("Cannot find a node with FQDN {0} (environment {1})".format(value, self.env))
        return str(ids[value])

    def levels(self, levels):
        return [(name, self.node(value) if name == NODE_LEVEL else value) for name, value in levels]
