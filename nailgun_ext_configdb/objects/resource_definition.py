"""Resource definitions: the versioned data sources a component provides.

A definition's ``content`` is free JSON; when it is an object with a ``schema``
key, that JSON schema (draft 4) validates every values document of the resource;
``value_schema`` checks it when it is written, so using it can neither fetch, loop nor backtrack.
``x-patch-policy``/``x-patch-default`` say which JSON-patch operations its documents take where
(``json_patch``), checked when written too.

Versions (seed 004): creating a definition whose name its component has makes the next version
of that data source, and so does new content for an existing one: a version's content never
changes. Numbers are never given twice, deletes included (a deleted version stays as a tombstone,
and the database's unique constraints stand behind the numbering, so a concurrent creation loses
with a 409). A data source's documents and pins refer to its lineage (the id of its first version).
A name is unique within its component, and within every environment that uses the component,
so lookups by name are never ambiguous.
"""
import dataclasses
import datetime

import sqlalchemy as sa
from sqlalchemy import exc

from nailgun_host import errors
from nailgun_host.db import db
from nailgun_host.validation import check_storable
from nailgun_ext_configdb.models import Component, Document, EnvironmentComponent, EnvironmentPin, ResourceDefinition
from nailgun_ext_configdb.objects import json_patch, resealing, value_schema
from nailgun_ext_configdb.objects.json_values import json_equal

LIVE = ResourceDefinition.deleted_at.is_(None)


@dataclasses.dataclass(frozen=True)
class Resource:
    """A data source as one environment uses it.

    ``id`` is its lineage (what documents are keyed by); values validate against ``content``, the
    version the environment is pinned to; a leaf that any live version's schema marks secret is
    secret (``secret_schemas``), so a marker added in a newer version protects every environment at once.
    """

    id: int
    name: str
    component_id: int
    version: int
    definition_id: int
    content: object
    secret_schemas: tuple


def resource(versions, pinned_id=None):
    """The ``Resource`` of the live ``versions`` of one data source, pinned to ``pinned_id`` (the latest when None)."""
    pinned = next((v for v in versions if v.id == pinned_id), None) or max(versions, key=lambda v: v.version)
    return Resource(pinned.lineage_id, pinned.name, pinned.component_id, pinned.version, pinned.id, pinned.content,
                    tuple(value_schema.schema_of(v.content) for v in versions))


def lineage_resource(lineage_id):
    """The ``Resource`` of a data source at its latest version; None when it has no live version."""
    versions = db.scalars(sa.select(ResourceDefinition).where(ResourceDefinition.lineage_id == lineage_id, LIVE)).all()
    return resource(versions) if versions else None


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
    """400 unless ``data`` follows the pinned version's schema; messages never quote the ``secret`` leaves.

    A schema stored before definitions were checked is checked here first: 409 names the
    definition to fix instead of a fetch, a loop or a 500.
    """
    schema = schema_of(resource)
    if schema is None:
        return
    try:
        value_schema.check(schema)
    except errors.InvalidData as exc_:
        raise errors.Conflict("Resource definition {0} cannot validate values: {1}".format(
            resource.definition_id, exc_.message))
    value_schema.validate(data, schema, secret)


def to_dict(definition):
    return {"id": definition.id, "name": definition.name, "component_id": definition.component_id,
            "content": definition.content, "version": definition.version,
            "latest": definition.version == definition.latest_version}


def get(definition_id, lock=False):
    """A live version; 404 for an unknown or deleted one."""
    statement = sa.select(ResourceDefinition).where(ResourceDefinition.id == definition_id, LIVE)
    found = db.scalars(statement.with_for_update() if lock else statement).first()
    if found is None:
        raise errors.ObjectNotFound("Resource definition {0} not found".format(definition_id))
    return found


def list_all(component_id=None, name=None, version=None, only_latest=False):
    """The live versions, oldest first; 404 when a ``version`` of ``name`` is asked for and there is none."""
    statement = sa.select(ResourceDefinition).where(LIVE).order_by(ResourceDefinition.id)
    if component_id is not None:
        statement = statement.filter_by(component_id=component_id)
    if name is not None:
        statement = statement.filter_by(name=name)
    if version is not None:
        statement = statement.filter_by(version=version)
    if only_latest:
        statement = statement.where(ResourceDefinition.version == ResourceDefinition.latest_version)
    found = db.scalars(statement).all()
    if version is not None and not found:
        raise errors.ObjectNotFound("Resource definition {0} version {1} not found".format(name, version))
    return found


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
        .where(scope, LIVE)
        .group_by(links.environment_id, ResourceDefinition.name)
        .having(sa.func.count(sa.distinct(ResourceDefinition.lineage_id)) > 1)).first()
    if clash is not None:
        raise errors.Conflict("Two components of environment {0} define the resource {1}".format(*clash))


def _first_version(component_id, name, lock=False):
    """The first version (live or not) of the data source ``name`` of a component: its lineage."""
    statement = sa.select(ResourceDefinition).filter_by(component_id=component_id, name=name, version=1)
    return db.scalars(statement.with_for_update() if lock else statement).first()


def _check_name_free(component_id, name, lineage_id):
    first = _first_version(component_id, name)
    if first is not None and first.lineage_id != lineage_id:
        raise errors.AlreadyExists("Resource definition {0} already exists in component {1}{2}".format(
            name, component_id, "" if _live_count(first.lineage_id) else " (deleted; its versions keep the name)"))


def _check_component(component_id):
    if db.get(Component, component_id) is None:
        raise errors.ObjectNotFound("Component {0} not found".format(component_id))


def _live_count(lineage_id, besides=None):
    statement = sa.select(sa.func.count()).where(ResourceDefinition.lineage_id == lineage_id, LIVE)
    if besides is not None:
        statement = statement.where(ResourceDefinition.id != besides)
    return db.scalar(statement)


def _insert(definition):
    """Insert in a savepoint: a concurrent creation of the same number or first name is a 409."""
    try:
        with db.begin_nested():
            db.add(definition)
    except exc.IntegrityError:
        raise errors.Conflict("Resource definition {0} of component {1} was created concurrently; try again".format(
            definition.name, definition.component_id))


def is_new_version(data):
    """Whether creating ``data`` makes a new version of an existing data source rather than a first one."""
    return _first_version(data["component_id"], data["name"]) is not None


def create(data):
    """Version 1 of a new data source, or the next version of the one of that name in the component."""
    component_id, name = data["component_id"], data["name"]
    _check_component(component_id)
    content = check_content(data.get("content", {}))
    first = _first_version(component_id, name, lock=True)
    if first is not None:
        return _new_version(first, content)
    definition = ResourceDefinition(name=name, component_id=component_id, content=content, version=1)
    _insert(definition)
    definition.lineage_id = definition.id
    db.flush()
    check_unique_names(component_ids=[component_id])
    pin_everywhere(definition)
    return definition


def _new_version(first, content):
    """The next version of ``first``'s data source (the caller holds the first version's row lock)."""
    lineage_id = first.lineage_id
    revived = not _live_count(lineage_id)
    number = db.scalar(sa.select(sa.func.max(ResourceDefinition.version))
                       .where(ResourceDefinition.lineage_id == lineage_id)) + 1
    definition = ResourceDefinition(name=first.name, component_id=first.component_id, content=content,
                                    lineage_id=lineage_id, version=number)
    _insert(definition)
    db.refresh(definition)
    if revived:
        check_unique_names(component_ids=[first.component_id])
        pin_everywhere(definition)
    else:  # what is secret is what any live version says: no leaf secret now may stay in clear
        resealing.reseal_documents([lineage_id], commit=False)
    return definition


def pin_everywhere(definition):
    """Pin every environment using ``definition``'s component and pinned to nothing of its data source to it."""
    links, pins = EnvironmentComponent, EnvironmentPin
    pinned = sa.select(pins.environment_id).where(pins.lineage_id == definition.lineage_id)
    db.execute(sa.insert(pins).from_select(
        ["environment_id", "lineage_id", "definition_id"],
        sa.select(links.environment_id, sa.literal(definition.lineage_id), sa.literal(definition.id))
        .where(links.component_id == definition.component_id, links.environment_id.not_in(pinned))))


def environments_pinned_to(definition_id):
    return db.scalars(sa.select(EnvironmentPin.environment_id).filter_by(definition_id=definition_id)
                      .order_by(EnvironmentPin.environment_id)).all()


def update(definition, data):
    """Rename or move the data source (every version), or make a new version from new content.

    The definition as it is now: the new version when the content changed.
    """
    lineage_id = definition.lineage_id
    component_id = data.get("component_id", definition.component_id)
    name = data.get("name", definition.name)
    if (component_id, name) != (definition.component_id, definition.name):
        if component_id != definition.component_id:
            _check_component(component_id)
        _check_name_free(component_id, name, lineage_id)
        db.execute(sa.update(ResourceDefinition).where(ResourceDefinition.lineage_id == lineage_id)
                   .values(name=name, component_id=component_id))
        db.expire_all()
        check_unique_names(component_ids=[component_id])
        definition = db.get(ResourceDefinition, definition.id)
        pin_everywhere(definition)
    if "content" in data and content_changes(definition, data["content"]):
        content = check_content(data["content"])
        return _new_version(_first_version(component_id, name, lock=True), content)
    return definition


def content_changes(definition, content):
    """Whether ``content`` differs from the definition's (as JSON, types included): what is secret may change."""
    return not json_equal(definition.content, content)


def delete(definition):
    """Delete one version; 409 while an environment is pinned to it and other versions live.

    Deleting the last live version deletes the data source: its documents and pins go.
    The number stays taken.
    """
    others = _live_count(definition.lineage_id, besides=definition.id)
    pinned_by = environments_pinned_to(definition.id)
    if others and pinned_by:
        raise errors.Conflict(
            "Version {0} of resource definition {1} is used by environments {2}: move them to another "
            "version first".format(definition.version, definition.name, ", ".join(map(str, pinned_by))))
    definition.deleted_at = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    if not others:
        db.execute(sa.delete(EnvironmentPin).where(EnvironmentPin.lineage_id == definition.lineage_id))
        db.execute(sa.delete(Document).where(Document.resource_definition_id == definition.lineage_id))
    db.flush()
