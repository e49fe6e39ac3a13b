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

import sqlalchemy as sa

from nailgun_host.public import check_storable, db, errors, parse_id
from nailgun_platform.public import type_strict_equal
from nailgun_ext_configdb import storage
from nailgun_ext_configdb.models import LIVE_DEFINITIONS as LIVE, Component, EnvironmentComponent, EnvironmentPin
from nailgun_ext_configdb.models import ResourceDefinition
from nailgun_ext_configdb.objects import document, json_patch, resealing, secrets, value_schema


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
    versions = storage.driver().versions(lineage_id)
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


def validate_values(resource, data):
    """400 unless ``data`` follows the pinned version's schema; messages never quote its secret leaves
    (classified only for a message: most writes are valid, and a large document's classification is not free).

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
    value_schema.validate(data, schema, lambda: secrets.of(resource, data))


def to_dict(definition):
    return {"id": definition.id, "name": definition.name, "component_id": definition.component_id,
            "content": definition.content, "version": definition.version,
            "latest": definition.version == definition.latest_version}


def get(definition_id, lock=False):
    """A live version; 404 for an unknown or deleted one, or an id that is not one (``definition_id`` is
    the URL's text)."""
    parsed = parse_id(str(definition_id))
    if parsed is None:
        raise errors.ObjectNotFound("Resource definition {0} not found".format(definition_id))
    return storage.driver().retrieve(parsed, lock=lock)


def list_all(component_id=None, name=None, version=None, only_latest=False):
    """The live versions, oldest first; 404 when a ``version`` of ``name`` is asked for and there is none."""
    found = storage.driver().list(component_id, name, version, only_latest)
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


def _check_component(component_id):
    if db.get(Component, component_id) is None:
        raise errors.ObjectNotFound("Component {0} not found".format(component_id))


def create(data, on_new_version=None):
    """``(definition, made)``: version 1 of a new data source, or the next version of the one of that name
    in the component, unless its latest has that content already: then that one, and ``made`` is False
    (two nodes uploading at once create one version, not two alike).

    Whether a version follows others is decided under the lock of the data source's first version, on
    what is committed: ``on_new_version`` (the caller's authorization) is called then, before one is made.
    A new name is claimed by inserting its version 1: a concurrent creation of the same name answers 409.
    """
    _check_component(data["component_id"])
    content = data.get("content", {})
    first = storage.driver().first_version(data["component_id"], data["name"], lock=True)
    if first is not None:
        versions = storage.driver().versions(first.lineage_id)
        if versions and not content_changes(versions[-1], content):
            return versions[-1], False
        if on_new_version is not None:
            on_new_version()
    return _created(storage.driver().create(data["component_id"], data["name"], check_content(content), first)), True


def _created(definition):
    """What follows a new version: a data source that had no live version is used by the environments of
    its component from now on; otherwise what is secret may have changed (any live version's markers
    count), so no leaf secret now may stay in clear."""
    if len(storage.driver().versions(definition.lineage_id)) == 1:
        check_unique_names(component_ids=[definition.component_id])
        repin(lineage_id=definition.lineage_id)
    else:
        resealing.reseal_documents([definition.lineage_id], commit=False)
    return definition


def repin(environment_id=None, lineage_id=None):
    """Keep the pins of the environment (or of the data source) in step with the components it uses:
    pin each data source it uses and is not pinned for to its latest live version; drop the pins of
    data sources it no longer uses."""
    links, pins, definitions = EnvironmentComponent, EnvironmentPin, ResourceDefinition
    used = (sa.select(links.environment_id, definitions.lineage_id)
            .join(definitions, definitions.component_id == links.component_id))
    scope = []
    if environment_id is not None:
        scope.append(pins.environment_id == environment_id)
    if lineage_id is not None:
        scope.append(pins.lineage_id == lineage_id)
    db.execute(sa.delete(pins).where(*scope, sa.tuple_(pins.environment_id, pins.lineage_id).not_in(used)))
    latest = used.add_columns(definitions.id).where(LIVE, definitions.version == definitions.latest_version,
                                                    ~sa.exists().where(pins.environment_id == links.environment_id,
                                                                       pins.lineage_id == definitions.lineage_id))
    if environment_id is not None:
        latest = latest.where(links.environment_id == environment_id)
    if lineage_id is not None:
        latest = latest.where(definitions.lineage_id == lineage_id)
    db.execute(sa.insert(pins).from_select(["environment_id", "lineage_id", "definition_id"], latest))


def environments_pinned_to(definition_id):
    return db.scalars(sa.select(EnvironmentPin.environment_id).filter_by(definition_id=definition_id)
                      .order_by(EnvironmentPin.environment_id)).all()


def update(definition, data):
    """Rename or move the data source (every version), or make a new version from new content.

    The definition as it is now: the new version when the content changed.
    """
    component_id = data.get("component_id", definition.component_id)
    name, old_name = data.get("name", definition.name), definition.name
    if (component_id, name) != (definition.component_id, definition.name):
        if component_id != definition.component_id:
            _check_component(component_id)
        definition = storage.driver().rename(definition, name, component_id)
        check_unique_names(component_ids=[component_id])
        repin(lineage_id=definition.lineage_id)
        if name != old_name:
            storage.driver().renamed(definition.lineage_id, old_name, name)
    if "content" in data and content_changes(definition, data["content"]):
        first = storage.driver().first_version(component_id, name, lock=True)
        return _created(storage.driver().create(component_id, name, check_content(data["content"]), first))
    return definition


def content_changes(definition, content):
    """Whether ``content`` differs from the definition's (as JSON, types included): what is secret may change."""
    return not type_strict_equal(definition.content, content)


def has_patch_policy(definition):
    """Whether ``definition``'s content gives a patch policy that may refuse a write (one that does not
    parse counts: it was meant to)."""
    try:
        return json_patch.refuses_anything(*json_patch.rules(definition.content))
    except errors.InvalidData:
        return True


def has_other_versions(definition):
    return len(storage.driver().versions(definition.lineage_id)) > 1


def delete(definition):
    """Delete one version; 409 while an environment is pinned to it and other versions live.

    Deleting the last live version deletes the data source: its documents and pins go.
    The number stays taken.
    """
    others = [v for v in storage.driver().versions(definition.lineage_id) if v.id != definition.id]
    pinned_by = environments_pinned_to(definition.id)
    if others and pinned_by:
        raise errors.Conflict(
            "Version {0} of resource definition {1} is used by environments {2}: move them to another "
            "version first".format(definition.version, definition.name, ", ".join(map(str, pinned_by))))
    storage.driver().delete(definition)
    if not others:
        db.execute(sa.delete(EnvironmentPin).where(EnvironmentPin.lineage_id == definition.lineage_id))
        document.delete_resource(definition.lineage_id)
