"""What a document URL names, read in one statement: its environment, its data source as the environment uses
it, and the node its ``nodes`` value names.

A read resolves its URL before anything else: three ORM statements (the environment by ``session.get``, the data
source's versions as ORM objects, the node) were a third of a computed effective GET's CPU. A write locks the
environment's row and changes it (``environment.get``); a read gets the ``Snapshot`` of the row read here, which
nothing changes. The checks and their answers are the write's, in the same order: the environment (404), the data
source (404, 409), the levels (400, 404).
"""
import dataclasses
import datetime
import functools

import sqlalchemy as sa

from nailgun_host.public import parse_id, read_rows
from nailgun_ext_configdb.models import Environment
from nailgun_ext_configdb.objects import environment as environment_obj
from nailgun_ext_configdb.objects import levels, pins


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """An environment's row as a read sees it: what reading its documents asks of it."""

    id: int
    hierarchy_levels: tuple
    created_at: datetime.datetime
    linked: bool


_ENVIRONMENT = Environment.__table__.c


@functools.lru_cache(maxsize=None)
def _statement(by_name, node):
    """The environment's row, joined to the data source's versions (``pins.resolving``) and, with ``node`` (a
    statement of ``levels``), to the node: at least one row when the environment exists. Built once per shape."""
    versions = pins.resolving(by_name).subquery("versions")
    columns = [_ENVIRONMENT.id.label("environment_id"), _ENVIRONMENT.hierarchy_levels, _ENVIRONMENT.created_at,
               _ENVIRONMENT.linked, *versions.c]
    joined = Environment.__table__.outerjoin(versions, sa.true())
    if node is not None:
        found = node.subquery("node")
        joined = joined.outerjoin(found, sa.true())
        columns += [found.c.id.label("node_id"), found.c.cluster_id.label("node_cluster_id")]
    return (sa.select(*columns).select_from(joined).where(_ENVIRONMENT.id == sa.bindparam("environment_id"))
            .order_by(versions.c.lineage_id, versions.c.version))


def resolve(environment_id, level_names, ref):
    """``(Snapshot, Resource, level pairs)`` of the URL's environment (its text, ``environment_id``), its levels
    (``level_names``, as ``levels.resolve`` takes them) and its data source (``ref``: a name or an id)."""
    parsed = parse_id(environment_id)
    if parsed is None:
        raise environment_obj.not_found(environment_id)
    by_name, named = pins.reference(ref)
    parameters = {"environment_id": parsed, "ref": named}
    node = None
    values = [value for name, value in levels.split(level_names) if name == levels.NODES]
    if len(values) == 1 and levels.valid(level_names):  # a value some database could store
        node, parameters["node"] = levels.node_statement(values[0])
    rows = read_rows(_statement(by_name, node), **parameters)
    if not rows:
        raise environment_obj.not_found(environment_id)
    first = rows[0]
    environment = Snapshot(first.environment_id, tuple(first.hierarchy_levels), first.created_at, first.linked)
    resource = pins.resource_of([row for row in rows if row.id is not None], ref, environment.id)
    nodes = {values[0]: (first.node_id, first.node_cluster_id) if first.node_id is not None else None} \
        if node is not None else {}
    return environment, resource, levels.resolve(environment, level_names, nodes)
