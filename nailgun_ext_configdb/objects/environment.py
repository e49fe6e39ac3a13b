"""ConfigDB environments: their components, hierarchy levels and the resources they serve.

A *linked* environment holds the data of the Nailgun cluster of the same id; the
host's cluster and node callbacks keep the two in step. It is linked only when asked:
created with an existing cluster's id (as ``fuel2 config upload`` does), unless the
body says ``"linked": false``; an equal id reached by coincidence links nothing.

Ids: an explicit id never moves the id counter; an id-less creation takes the
lowest free id above the largest one (or the lowest free one when that is the
maximum), and retries past an id a concurrent creation took.
"""
import sqlalchemy as sa
from sqlalchemy import exc, orm

from nailgun_host.public import MAX_ID, Cluster, config_session_obj as config_session, db, errors, get_or_404
from nailgun_ext_configdb import storage
from nailgun_ext_configdb.models import Component, Environment, EnvironmentComponent
from nailgun_ext_configdb.objects import document, levels, pins, resource_definition


def to_dict(environment):
    return {"id": environment.id,
            "components": [link.component_id for link in environment.component_links],
            "hierarchy_levels": list(environment.hierarchy_levels),
            "revision": environment.revision,
            "linked": environment.linked,
            "pins": pins.to_list(environment)}


def list_all():
    return db.scalars(sa.select(Environment).options(orm.selectinload(Environment.component_links),
                                                     orm.selectinload(Environment.pins))
                      .order_by(Environment.id)).all()


def get(environment_id, lock=False):
    """The environment, locked against concurrent writes when ``lock``; 404 if there is none."""
    return get_or_404(Environment, environment_id, not_found(environment_id).message, lock=lock)


def not_found(environment_id):
    """The 404 of an environment id that names none."""
    return errors.ObjectNotFound("Cannot find an environment with the given identifier {0}".format(environment_id))


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
    pins.pin_components(environment)


#: id-less creations retried past ids that concurrent creations took
ID_ATTEMPTS = 20


def _free_id():
    """The next id for an id-less environment: above the largest, else the lowest free one.

    Computed rather than drawn from a sequence, so an explicit id (even the maximum)
    never exhausts it and SQLite never hands out an id the routes cannot reach.
    """
    largest = db.scalar(sa.select(sa.func.max(Environment.id))) or 0
    if largest < MAX_ID:
        return largest + 1
    if db.get(Environment, 1) is None:
        return 1
    following = orm.aliased(Environment)
    taken = sa.select(following.id).where(following.id == Environment.id + 1).exists()
    gap = db.scalar(sa.select(sa.func.min(Environment.id + 1)).where(Environment.id < MAX_ID, ~taken))
    if gap is None:
        raise errors.Conflict("Every environment id up to {0} is taken".format(MAX_ID))
    return gap


def _linked(data):
    """Whether a new environment is linked to the cluster of its id (see the module's rule)."""
    cluster_exists = "id" in data and db.get(Cluster, data["id"]) is not None
    linked = data.get("linked", cluster_exists)
    if linked and not cluster_exists:
        raise errors.InvalidData("Only an environment created with an existing cluster's id can be linked to it")
    return linked


def _insert(environment):
    """Insert in a savepoint; False when its id was taken meanwhile (the savepoint is rolled back)."""
    try:
        with db.begin_nested():
            db.add(environment)
        return True
    except exc.IntegrityError:
        return False


def create(data):
    if "id" in data and db.get(Environment, data["id"]) is not None:
        raise errors.AlreadyExists("Environment with id {0} already exists".format(data["id"]))
    fields = {"hierarchy_levels": list(data["hierarchy_levels"]), "revision": 0, "linked": _linked(data)}
    if "id" in data:
        environment = Environment(id=data["id"], **fields)
        if not _insert(environment):
            raise errors.AlreadyExists("Environment with id {0} already exists".format(data["id"]))
    else:
        for _ in range(ID_ATTEMPTS):
            environment = Environment(id=_free_id(), **fields)
            if _insert(environment):
                break
        else:
            raise errors.Conflict("Could not find a free environment id; try again")
    _set_components(environment, data["components"])
    return environment


def update(environment, data):
    """Change components and levels; documents at levels no longer in the hierarchy are deleted."""
    if "id" in data and data["id"] != environment.id:
        raise errors.InvalidData("The id of an environment cannot change")
    if "linked" in data and data["linked"] != environment.linked:
        raise errors.InvalidData("Whether an environment is linked to a cluster is set when it is created")
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
    """The data source ``ref`` (an id or a name) among the environment's components, at the version the
    environment is pinned to (a ``resource_definition.Resource``)."""
    return pins.resolve(environment, ref)


def scope(environment):
    """The configuration-session scope of ``environment``: a linked one's sessions are its cluster's."""
    return config_session.Scope("cluster" if environment.linked else "config", environment.id)


def session_scope(environment_id, lock=False):
    """The session scope of the environment of that id (its row locked with ``lock``); 404 if none."""
    return scope(get(environment_id, lock=lock))


def delete(environment):
    """The environment and every document stored in it go, and so do its sessions (a linked one's
    are its cluster's: they go with the cluster, and find their staged documents deleted)."""
    if not environment.linked:
        config_session.delete_scope(scope(environment))
    storage.driver().drop_environment(environment.id)
    db.delete(environment)
    db.flush()
