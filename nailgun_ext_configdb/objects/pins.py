"""Which version of each data source an environment uses (seed 004's plans pinning template versions).

An environment is pinned to the latest version of a data source when it starts using it (created,
a component added, the data source's first version created in a component it uses); a newer version
changes nothing for it until a ``move``, which first reports the stored values the new version's
schema rejects (a dry run), then moves only when none is rejected or when forced: one new revision of
the environment, one change-feed entry.
"""

import sqlalchemy as sa

from nailgun_host.public import db, errors, parse_id
from nailgun_ext_configdb.models import LIVE_DEFINITIONS as LIVE, VALUES, EnvironmentComponent, EnvironmentPin
from nailgun_ext_configdb.models import ResourceDefinition
from nailgun_ext_configdb.objects import changes, levels, resource_definition
from nailgun_ext_configdb.objects import document as document_obj


def _used(environment_id):
    """The live versions of the data sources of the environment's components, with the environment's pin."""
    return (sa.select(ResourceDefinition, EnvironmentPin.definition_id)
            .join(EnvironmentComponent, EnvironmentComponent.component_id == ResourceDefinition.component_id)
            .outerjoin(EnvironmentPin, sa.and_(EnvironmentPin.environment_id == environment_id,
                                               EnvironmentPin.lineage_id == ResourceDefinition.lineage_id))
            .where(EnvironmentComponent.environment_id == environment_id, LIVE))


def _resolving(named):
    """The versions, with the environment's pin, of the data source ``named`` (a condition on its ``ref``)."""
    lineage = sa.select(ResourceDefinition.lineage_id).where(named)
    return (_used(sa.bindparam("environment_id"))
            .where(ResourceDefinition.lineage_id.in_(lineage))
            .order_by(ResourceDefinition.lineage_id, ResourceDefinition.version))


#: ``resolve``'s two statements, built once: every request that names a data source runs one (a write twice)
_BY_ID = _resolving(ResourceDefinition.id == sa.bindparam("ref"))
_BY_NAME = _resolving(ResourceDefinition.name == sa.bindparam("ref"))


def resolve(environment, ref):
    """The ``Resource`` ``ref`` (a name, or the id of any of its versions, deleted ones too) as the environment
    uses it, in one query; 404 when none of its components has it, 409 when two do."""
    ref_id = parse_id(ref)
    rows = db.execute(_BY_ID if ref_id is not None else _BY_NAME,
                      {"environment_id": environment.id, "ref": ref_id if ref_id is not None else ref}).all()
    lineages = {}
    for definition, pinned_id in rows:
        lineages.setdefault(definition.lineage_id, ([], pinned_id))[0].append(definition)
    if not lineages:
        raise errors.ObjectNotFound("Data source {0} is not supported in environment {1}".format(
            ref, environment.id))
    if len(lineages) > 1:
        raise errors.Conflict("Data source {0} is defined by more than one component of environment {1}".format(
            ref, environment.id))
    versions, pinned_id = next(iter(lineages.values()))
    return resource_definition.resource(versions, pinned_id)


def to_list(environment):
    """``[{resource, id, version, latest_version}]``: the version each data source of the environment is
    pinned to (the ``id`` of that version), by name."""
    return sorted(({"resource": pin.definition.name, "id": pin.definition.id, "version": pin.definition.version,
                    "latest_version": pin.definition.latest_version} for pin in environment.pins),
                  key=lambda pin: pin["resource"])


def pin_components(environment):
    """Pin the environment to the latest version of each data source of its components it has no pin for;
    drop the pins of data sources it no longer uses."""
    resource_definition.repin(environment_id=environment.id)
    db.expire(environment, ["pins"])


def _target(current, to):
    """The live version ``to`` (a number or ``"latest"``) of ``current``'s data source; 404 if none."""
    statement = sa.select(ResourceDefinition).where(ResourceDefinition.lineage_id == current.id, LIVE)
    if to == "latest":
        statement = statement.order_by(ResourceDefinition.version.desc())
    else:
        statement = statement.where(ResourceDefinition.version == to)
    found = db.scalars(statement.limit(1).with_for_update()).first()  # a racing DELETE of it waits
    if found is None:
        raise errors.ObjectNotFound("Resource definition {0} has no version {1}".format(current.name, to))
    return found


def rejected(environment, current, target):
    """The values documents of the data source in ``environment`` that ``target``'s schema rejects:
    ``[{"level", "kind", "message"}]`` (messages never quote a secret)."""
    moved = resource_definition.Resource(current.id, current.name, current.component_id, target.version,
                                         target.id, target.content, current.secret_schemas)
    found = []
    for document in document_obj.of_kind(environment.id, current.id, VALUES):
        try:
            resource_definition.validate_values(moved, document.data)
        except errors.NailgunError as exc:
            found.append({"level": levels.display(document.level_path), "kind": VALUES, "message": exc.message})
    return found


def move(environment, ref, to, author, force=False, dry_run=False):
    """Pin the environment's data source ``ref`` to version ``to`` (a number or ``"latest"``); the report.

    ``environment`` is locked by the caller. 409 with the report when stored values are rejected
    and not ``force``; a dry run only reports.
    """
    current = resolve(environment, ref)
    target = _target(current, to)
    report = {"resource": current.name, "from": current.version, "to": target.version,
              "rejected": rejected(environment, current, target), "moved": False, "dry_run": dry_run}
    if dry_run:
        return report
    if report["rejected"] and not force:
        raise errors.Conflict(
            "Version {0} of {1} rejects {2} stored document(s) of environment {3}: fix them, or force the move"
            .format(target.version, current.name, len(report["rejected"]), environment.id),
            [dict(entry, resource=current.name) for entry in report["rejected"]])
    if target.id != current.definition_id:
        db.merge(EnvironmentPin(environment_id=environment.id, lineage_id=current.id, definition_id=target.id))
        environment.revision += 1
        db.flush()
        db.expire(environment, ["pins"])
        changes.pinned(environment, current.id, target.version, author)
    report.update(moved=target.id != current.definition_id, revision=environment.revision)
    return report
