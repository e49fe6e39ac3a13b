"""Components: named groups of resource definitions, which environments use whole.

A resource name is unique within its component, and within every environment that
uses the component, so lookups by name are never ambiguous.
"""
import sqlalchemy as sa
from sqlalchemy import orm

from nailgun_host.public import db, errors, get_or_404
from nailgun_ext_configdb.models import Component
from nailgun_ext_configdb.objects import resource_definition


def to_dict(component):
    return {"id": component.id, "name": component.name,
            "resource_definitions": [resource_definition.to_dict(r) for r in component.resource_definitions
                                     if r.deleted_at is None and r.version == r.latest_version]}


def list_all():
    return db.scalars(sa.select(Component).options(orm.selectinload(Component.resource_definitions))
                      .order_by(Component.id)).all()


def get(component_id, lock=False):
    return get_or_404(Component, component_id, "Component {0} not found".format(component_id), lock=lock)


def check_name_free(name, component_id=None):
    found = db.scalars(sa.select(Component.id).filter_by(name=name)).first()
    if found is not None and found != component_id:
        raise errors.AlreadyExists("Component with name {0} already exists".format(name))


def _check_listed_once(items):
    """409 when a body lists one definition name twice: a component has one data source of a name."""
    names = [item["name"] for item in items if "name" in item and "id" not in item]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise errors.Conflict("Resource definition {0} is listed more than once".format(repeated[0]))


def create(data):
    _check_listed_once(data.get("resource_definitions", []))
    check_name_free(data["name"])
    component = Component(name=data["name"])
    db.add(component)
    db.flush()
    for item in data.get("resource_definitions", []):
        resource_definition.create(dict(item, component_id=component.id))
    db.refresh(component)
    return component


def update(component, data, on_new_version=None):
    """Rename; listed definitions with an id are updated and moved here, others are created
    (``resource_definition.create``, which calls ``on_new_version`` before making a version after others).

    Definitions not listed stay (tuning-box deleted them); DELETE one to remove it.
    """
    _check_listed_once(data.get("resource_definitions", []))
    if "name" in data and data["name"] != component.name:
        check_name_free(data["name"], component.id)
        component.name = data["name"]
    for item in data.get("resource_definitions", []):
        if "id" in item:
            resource_definition.update(resource_definition.get(item["id"]), dict(item, component_id=component.id))
        else:
            resource_definition.create(dict(item, component_id=component.id), on_new_version)
    db.flush()
    db.refresh(component)
    return component


def delete(component):
    """The component and its definitions go; environments using it stop listing it."""
    db.delete(component)
    db.flush()
