"""What every GET of a document's URL depends on, read in one indexed statement: the fingerprint by
which the host's cache of answers (``nailgun_host.read_cache``) replays them.

A document's answer (values, overrides, effective, with lookup, as of a version, one key) is a
function of:

- the environment: its documents (``revision`` grows with every document written or deleted, a
  deploy, a pin move), its levels and whether it is linked; ``created_at`` tells a re-created
  environment of the same id apart;
- which data source and version the URL's resource names, and what its versions mark secret:
  components, definitions, the environment's components and pins, all counted by
  ``DefinitionsGeneration`` (database triggers; None before any change was counted);
- on a ``nodes`` level, the node the value names (by id or FQDN) and whether it is in the
  environment's cluster.

Anything else the answer depends on belongs here too, or the cache will replay stale answers:
``tests/configdb/test_read_cache.py`` compares replayed answers with computed ones after random
writes of every kind.
"""
import sqlalchemy as sa

from nailgun_host.db.models import Node
from nailgun_host.validation import parse_id
from nailgun_ext_configdb.models import DefinitionsGeneration, Environment
from nailgun_ext_configdb.objects import levels

_ENVIRONMENT = Environment.__table__
_STATE = [_ENVIRONMENT.c.revision, _ENVIRONMENT.c.created_at,
          sa.cast(_ENVIRONMENT.c.hierarchy_levels, sa.Text),  # compared, never decoded
          _ENVIRONMENT.c.linked,
          sa.select(DefinitionsGeneration.__table__.c.generation).scalar_subquery().label("generation")]
_WHERE = _ENVIRONMENT.c.id == sa.bindparam("environment")


def _with_node(node_clause):
    node = sa.select(Node.__table__.c.id, Node.__table__.c.cluster_id).where(node_clause).order_by(Node.__table__.c.id).limit(1).subquery()
    return sa.select(*_STATE, node.c.id, node.c.cluster_id).select_from(
        _ENVIRONMENT.outerjoin(node, sa.true())).where(_WHERE)


BY_ENVIRONMENT = sa.select(*_STATE).where(_WHERE)
BY_NODE_ID = _with_node(Node.__table__.c.id == sa.bindparam("node"))
BY_NODE_FQDN = _with_node(Node.__table__.c.fqdn == sa.bindparam("node"))


def of_document(first, environment_id, level_names, resource, kind):
    """The state the answers of a document URL's groups depend on, read with ``first(statement,
    **params)``; None when there is none to compare (no such environment, several node levels)."""
    environment = parse_id(environment_id)
    if environment is None:
        return None
    nodes = [value for name, value in levels.split(level_names) if name == levels.NODES]
    if len(nodes) > 1:
        return None
    if not nodes:
        return first(BY_ENVIRONMENT, environment=environment)
    node_id = parse_id(nodes[0])
    if node_id is not None:
        return first(BY_NODE_ID, environment=environment, node=node_id)
    return first(BY_NODE_FQDN, environment=environment, node=nodes[0])
