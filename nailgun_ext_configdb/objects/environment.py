"""ConfigDB environments: their components, hierarchy levels and the resources they serve.

An environment whose id is a Nailgun cluster's id holds that cluster's data; the
host's cluster and node callbacks keep the two in step.
"""
import sqlalchemy as sa
from sqlalchemy import orm

from nailgun_host import errors
from nailgun_host.db import db, get_or_404
from nailgun_host.validation import parse_id
from nailgun_ext_configdb.objects import document, levels, resource_definition
from nailgun_ext_configdb.models import Component, Environment, EnvironmentComponent, ResourceDefinition


def to_dict(environment):
    return {"id": environment.id,
            "components": [link.component_id for link in environment.component_links],
            "hierarchy_levels": list(environment.hierarchy_levels),
            "revision": environment.revision}


def list_all():
    return db.scalars(sa.select(Environment).options(orm.selectinload(Environment.component_links))
                      .order_by(Environment.id)).all()


def get(environment_id, lock=False):
    """The environment, locked against concurrent writes when ``lock``; 404 if there is none."""
    return get_or_404(Environment, environment_id,
                      "Cannot find an environment with the given identifier {0}".format(environment_id), lock=lock)


def _component_ids(refs):
    """Component ids for a list of ids or names; 404 for unknown ones, 409 for repeats."""
    ids = [r for r in refs if isinstance(r, int)]
    names = [r for r in refs if isinstance(r, str)]
    found = db.execute(sa.select(Component.id, Component.name).where(
        sa.or_(Component.id.in_(ids), Component.name.in_(names)))).all()
    by_id = {row.id: row.id for row in found}
    by_name = {row.name: row.id for row in found}
    resolved = []
    for ref in refs:
        component_id = (by_id if isinstance(ref, int) else by_name).get(ref)
        if component_id is None:
            raise errors.ObjectNotFound("Component {0} not found".format(ref))
        if component_id in resolved:
            raise errors.Conflict("Component {0} is given more than once".format(ref))
        resolved.append(component_id)
    return resolved


def _set_components(environment, refs):
    environment.component_links = [
        EnvironmentComponent(component_id=component_id, position=position)
        for position, component_id in enumerate(_component_ids(refs))]
    db.flush()
    resource_definition.check_unique_names(environment_ids=[environment.id])


def _restart_id_sequence():
    """After an explicit id, make PostgreSQL's sequence continue above it (SQLite does by itself)."""
    if db.get_bind().dialect.name == "postgresql":
        table = Environment.__tablename__
        db.execute(sa.text("SELECT setval(pg_get_serial_sequence(:table, 'id'), "
                           "(SELECT max(id) FROM {0}))".format(table)), {"table": table})


def create(data):
    if "id" in data and db.get(Environment, data["id"]) is not None:
        raise errors.AlreadyExists("Environment with id {0} already exists".format(data["id"]))
    environment = Environment(hierarchy_levels=list(data["hierarchy_levels"]), revision=0)
    if "id" in data:
        environment.id = data["id"]
    db.add(environment)
    db.flush()
    if "id" in data:
        _restart_id_sequence()
    _set_components(environment, data["components"])
    return environment


def update(environment, data):
    """Change components and levels; documents at levels no longer in the hierarchy are deleted."""
    if "id" in data and data["id"] != environment.id:
        raise errors.InvalidData("The id of an environment cannot change")
    if "components" in data:
        _set_components(environment, data["components"])
    if "hierarchy_levels" in data:
        hierarchy = list(data["hierarchy_levels"])
        stale = [path for path in document.level_paths(environment.id)
                 if [name for name, _ in levels.split(path)] != hierarchy[:len(levels.split(path))]]
        document.delete_at(environment.id, stale)
        environment.hierarchy_levels = hierarchy
    db.flush()
    return environment


def resource(environment, ref):
    """The data source ``ref`` (an id or a name) among the environment's components."""
    query = (sa.select(ResourceDefinition)
             .join(EnvironmentComponent, EnvironmentComponent.component_id == ResourceDefinition.component_id)
             .where(EnvironmentComponent.environment_id == environment.id))
    if parse_id(ref) is not None:
        query = query.where(ResourceDefinition.id == parse_id(ref))
    else:
        query = query.where(ResourceDefinition.name == ref)
    found = db.scalars(query.limit(2)).all()
    if not found:
        raise errors.ObjectNotFound("Data source {0} is not supported in environment {1}".format(
            ref, environment.id))
    if len(found) > 1:
        raise errors.Conflict("Data source {0} is defined by more than one component of environment {1}".format(
            ref, environment.id))
    return found[0]


def delete(environment):
    """The environment and every document stored in it go."""
    db.delete(environment)
    db.flush()
