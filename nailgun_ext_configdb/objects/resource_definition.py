"""Resource definitions: the data sources a component provides.

A definition's ``content`` is free JSON; when it is an object with a ``schema``
key, that JSON schema (draft 4) validates every values document of the resource;
``value_schema`` checks it when it is written, so using it can neither fetch, loop nor backtrack.
``x-patch-policy``/``x-patch-default`` say which JSON-patch operations its documents take where
(``json_patch``), checked when written too.
A resource name is unique within its component, and within every environment
that uses the component, so lookups by name are never ambiguous.
"""
import sqlalchemy as sa

from nailgun_host import errors
from nailgun_host.db import db, get_or_404
from nailgun_host.validation import check_storable
from nailgun_ext_configdb.models import Component, EnvironmentComponent, ResourceDefinition
from nailgun_ext_configdb.objects import json_patch, resealing, value_schema
from nailgun_ext_configdb.objects.json_values import json_equal


def schema_of(resource):
    return value_schema.schema_of(resource.content)


def check_content(content):
    """400 unless ``content`` is storable, its schema usable and its patch policy a policy."""
    check_storable(content)
    schema = value_schema.schema_of(content)
    if schema is not None:
        value_schema.check(schema)
    json_patch.rules(content)
    return content


def validate_values(resource, data, secret=()):
    """400 unless ``data`` follows the definition's schema; messages never quote the ``secret`` leaves.

    A schema stored before definitions were checked is checked here first: 409 names the
    definition to fix instead of a fetch, a loop or a 500.
    """
    schema = schema_of(resource)
    if schema is None:
        return
    try:
        value_schema.check(schema)
    except errors.InvalidData as exc:
        raise errors.Conflict("Resource definition {0} cannot validate values: {1}".format(
            resource.id, exc.message))
    value_schema.validate(data, schema, secret)


def to_dict(resource):
    return {"id": resource.id, "name": resource.name, "component_id": resource.component_id,
            "content": resource.content}


def get(resource_id, lock=False):
    return get_or_404(ResourceDefinition, resource_id, "Resource definition {0} not found".format(resource_id),
                      lock=lock)


def list_all(component_id=None):
    statement = sa.select(ResourceDefinition).order_by(ResourceDefinition.id)
    if component_id is not None:
        statement = statement.filter_by(component_id=component_id)
    return db.scalars(statement).all()


def check_unique_names(component_ids=None, environment_ids=None):
    """409 when two components of one environment define the same resource name.

    Checks the environments using any of ``component_ids`` and those in ``environment_ids``.
    """
    links = EnvironmentComponent
    scope = sa.false()
    if component_ids:
        scope = sa.or_(scope, links.environment_id.in_(
            sa.select(links.environment_id).where(links.component_id.in_(component_ids))))
    if environment_ids:
        scope = sa.or_(scope, links.environment_id.in_(environment_ids))
    clash = db.execute(
        sa.select(links.environment_id, ResourceDefinition.name)
        .join(ResourceDefinition, ResourceDefinition.component_id == links.component_id)
        .where(scope)
        .group_by(links.environment_id, ResourceDefinition.name)
        .having(sa.func.count() > 1)).first()
    if clash is not None:
        raise errors.Conflict("Two components of environment {0} define the resource {1}".format(*clash))


def check_name_free(component_id, name, resource_id=None):
    found = db.scalars(sa.select(ResourceDefinition.id).filter_by(component_id=component_id, name=name)).first()
    if found is not None and found != resource_id:
        raise errors.AlreadyExists(
            "Resource definition {0} already exists in component {1}".format(name, component_id))


def _check_component(component_id):
    if db.get(Component, component_id) is None:
        raise errors.ObjectNotFound("Component {0} not found".format(component_id))


def create(data):
    component_id = data["component_id"]
    _check_component(component_id)
    check_name_free(component_id, data["name"])
    resource = ResourceDefinition(name=data["name"], component_id=component_id,
                                  content=check_content(data.get("content", {})))
    db.add(resource)
    db.flush()
    check_unique_names(component_ids=[component_id])
    return resource


def update(resource, data):
    component_id = data.get("component_id", resource.component_id)
    if component_id != resource.component_id:
        _check_component(component_id)
    name = data.get("name", resource.name)
    check_name_free(component_id, name, resource.id)
    resealed = "content" in data and content_changes(resource, data["content"])
    if "content" in data:
        resource.content = check_content(data["content"])
    resource.name, resource.component_id = name, component_id
    db.flush()
    check_unique_names(component_ids=[component_id])
    if resealed:  # what is secret may have changed: no leaf secret now may stay in clear
        resealing.reseal_documents([resource], commit=False)
    return resource


def content_changes(resource, content):
    """Whether ``content`` differs from the definition's (as JSON, types included): what is secret may change."""
    return not json_equal(resource.content, content)


def delete(resource):
    """The definition and every document stored for it go."""
    db.delete(resource)
    db.flush()
