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


_VERSIONS = ResourceDefinition.__table__.c
_PINS = EnvironmentPin.__table__.c
_LINKS = EnvironmentComponent.__table__.c


def resolving(by_name):
    """The statement of the live versions, with the environment's pin (``pinned_id``), of the data source
    that the bound parameter ``ref`` names (by name with ``by_name``, else the id of any of its versions, deleted
    ones too), among those of the components of the environment ``environment_id``: Core rows with the columns
    ``resource_of`` reads (no ORM objects: every request that names a data source runs it, a write twice).
    Unordered: ``resource_of`` wants them by lineage and version."""
    named = ResourceDefinition.__table__.alias("named")
    lineage = sa.select(named.c.lineage_id).where(
        (named.c.name if by_name else named.c.id) == sa.bindparam("ref"))
    return (sa.select(_VERSIONS.id, _VERSIONS.lineage_id, _VERSIONS.name, _VERSIONS.component_id, _VERSIONS.version,
                      _VERSIONS.content, _PINS.definition_id.label("pinned_id"))
            .join_from(ResourceDefinition.__table__, EnvironmentComponent.__table__,
                       _LINKS.component_id == _VERSIONS.component_id)
            .outerjoin(EnvironmentPin.__table__, sa.and_(_PINS.environment_id == sa.bindparam("environment_id"),
                                                         _PINS.lineage_id == _VERSIONS.lineage_id))
            .where(_LINKS.environment_id == sa.bindparam("environment_id"), _VERSIONS.deleted_at.is_(None),
                   _VERSIONS.lineage_id.in_(lineage)))


#: ``resolve``'s two statements, built once
_BY_ID = resolving(by_name=False).order_by(_VERSIONS.lineage_id, _VERSIONS.version)
_BY_NAME = resolving(by_name=True).order_by(_VERSIONS.lineage_id, _VERSIONS.version)


def resolve(environment, ref):
    """The ``Resource`` ``ref`` (a name, or the id of any of its versions, deleted ones too) as the environment
    uses it, in one query; 404 when none of its components has it, 409 when two do."""
    by_name, parameter = reference(ref)
    rows = db.execute(_BY_NAME if by_name else _BY_ID, {"environment_id": environment.id, "ref": parameter}).all()
    return resource_of(rows, ref, environment.id)


def reference(ref):
    """``(by_name, the parameter ref of resolving(by_name))`` for the ``ref`` of a URL: an id, else a name; None
    for a name no database stores (with a NUL character: PostgreSQL would refuse the statement)."""
    ref_id = parse_id(ref)
    if ref_id is not None:
        return False, ref_id
    return True, ref if "\x00" not in ref else None


def resource_of(rows, ref, environment_id):
    """The ``Resource`` of ``rows`` (``resolving``'s, by lineage and version) that ``ref`` named in the
    environment; 404 when there are none, 409 when they are of two data sources."""
    lineages = {}
    for row in rows:
        lineages.setdefault(row.lineage_id, ([], row.pinned_id))[0].append(row)
    if not lineages:
        raise errors.ObjectNotFound("Data source {0} is not supported in environment {1}".format(
            ref, environment_id))
    if len(lineages) > 1:
        raise errors.Conflict("Data source {0} is defined by more than one component of environment {1}".format(
            ref, environment_id))
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
