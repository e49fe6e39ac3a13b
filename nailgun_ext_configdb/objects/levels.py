"""Level paths: where in an environment's hierarchy a document lives.

A URL names levels as ``lvl1/v1/lvl2/v2/``; they must follow the environment's
hierarchy from its broadest level (a prefix of it is fine). The stored path is
the whole ``lvl1/v1/lvl2/v2`` (``""`` is the environment level), so a value is
identified by all its parents. In an environment linked to a Nailgun cluster (same
id, see ``environment``) a ``nodes`` value names one of the cluster's nodes, by id or FQDN, and is
stored as the node id.
"""
import sqlalchemy as sa

from nailgun_host.public import Node, db, errors, parse_id

NODES = "nodes"
MAX_PATH = 1024


def split(levels):
    """``"a/1/b/2/"`` → ``[("a", "1"), ("b", "2")]``."""
    parts = [p for p in levels.split("/") if p]
    return list(zip(parts[0::2], parts[1::2]))


def join(pairs):
    return "/".join("{0}/{1}".format(name, value) for name, value in pairs)


def prefixes(pairs):
    """The level path of the environment level and of every level down to ``pairs``' last."""
    return [join(pairs[:depth]) for depth in range(len(pairs) + 1)]


def display(level_path):
    """tuning-box's lookup path: ``/`` or ``/nodes/1/``."""
    return "/" + level_path + "/" if level_path else "/"


#: the node a ``nodes`` value names: by id when it is one, else by FQDN (of nodes sharing one, always the same)
_NODE_COLUMNS = (Node.__table__.c.id, Node.__table__.c.cluster_id)
NODE_BY_ID = sa.select(*_NODE_COLUMNS).where(Node.__table__.c.id == sa.bindparam("node")).limit(1)
NODE_BY_FQDN = (sa.select(*_NODE_COLUMNS).where(Node.__table__.c.fqdn == sa.bindparam("node"))
                .order_by(Node.__table__.c.id).limit(1))


def node_statement(value):
    """``(statement, parameter)``: the node the ``nodes`` value ``value`` names, as a row ``(id, cluster_id)``."""
    node_id = parse_id(value)
    return (NODE_BY_ID, node_id) if node_id else (NODE_BY_FQDN, value)


def _node(environment, value, nodes):
    """The id of the node ``value`` names in ``environment``: read from ``nodes`` (``{value: (id, cluster_id) or
    None}``) when it has it, else from the database."""
    if value in nodes:
        node = nodes[value]
    else:
        statement, parameter = node_statement(value)
        node = db.execute(statement, {"node": parameter}).first()
    if node is None:
        raise errors.ObjectNotFound("Cannot find a node with the given identifier {0}".format(value))
    node_id, cluster_id = node
    if cluster_id != environment.id:
        raise errors.ObjectNotFound("Node {0} not assigned to cluster {1}".format(value, environment.id))
    return str(node_id)


def valid(levels):
    """Whether some environment can have the level path ``levels`` (not too long, no NUL characters)."""
    return "\x00" not in levels and len(levels) <= MAX_PATH


def resolve(environment, levels, nodes=None):
    """The (name, value) pairs a URL's levels stand for in ``environment``; 404 when they do not fit. ``nodes``:
    the nodes of ``nodes`` values read already (``_node``)."""
    pairs = split(levels)
    if not valid(levels):
        raise errors.InvalidData("Invalid level path: too long or contains NUL characters")
    hierarchy = list(environment.hierarchy_levels)
    if len(pairs) > len(hierarchy):
        raise errors.ObjectNotFound("Levels {0} can't be matched with the hierarchy {1} of environment {2}".format(
            [name for name, _ in pairs], hierarchy, environment.id))
    for (name, _), expected in zip(pairs, hierarchy):
        if name != expected:
            raise errors.ObjectNotFound("Unexpected level name '{0}'. Expected '{1}'.".format(name, expected))
    if any(name == NODES for name, _ in pairs) and environment.linked:
        pairs = [(name, _node(environment, value, nodes or {}) if name == NODES else value) for name, value in pairs]
    return pairs


def paths_of_node(paths, node_id):
    """Those of ``paths`` that pass through the level value ``nodes/<node_id>``."""
    return [p for p in paths if (NODES, str(node_id)) in split(p)]
