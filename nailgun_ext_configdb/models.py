"""ConfigDB tables, all prefixed ``configdb_``.

Storage is shaped for what comes next: each stored document (the values or the
overrides of one resource at one level path) is a row with its current content
and a version counter, and every version is kept in an append-only table. JSON
patch edits, staged sessions and other storage drivers only add writers of new
versions; encrypted values only change what a version's ``data`` holds.
"""
import datetime

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.orm import Mapped, mapped_column

from nailgun_host.public import Base, JSONType
from nailgun_platform.public import SealedJSON, now

PREFIX = "configdb_"
VALUES, OVERRIDES = "values", "overrides"


class Component(Base):
    __tablename__ = PREFIX + "components"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(128), unique=True)

    resource_definitions: Mapped[list["ResourceDefinition"]] = orm.relationship(
        back_populates="component", order_by="ResourceDefinition.id", cascade="all, delete-orphan",
        passive_deletes=True)


class ResourceDefinition(Base):
    """One version of a data source; ``content`` is free JSON whose ``schema`` key, if any, validates values.

    The versions of one data source share a ``lineage_id`` (the id of its first version, which its
    documents and pins refer to) and its name and component. A version's content never changes;
    a deleted version stays as a tombstone (``deleted_at``) so that its number is never given again,
    which ``UNIQUE(lineage_id, version)`` guarantees even to concurrent writers, as the unique index
    on the first versions' names does for two creations of one new name.
    """

    __tablename__ = PREFIX + "resource_definitions"
    __table_args__ = (
        sa.UniqueConstraint("lineage_id", "version", name=PREFIX + "resource_definitions_lineage_version"),
        sa.Index(PREFIX + "resource_definitions_first_names", "component_id", "name", unique=True,
                 sqlite_where=sa.text("version = 1"), postgresql_where=sa.text("version = 1")),
        sa.Index(PREFIX + "resource_definitions_component_id", "component_id"),
        sa.Index(PREFIX + "resource_definitions_name", "name"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(255))
    component_id: Mapped[int] = mapped_column(
        sa.ForeignKey(PREFIX + "components.id", ondelete="CASCADE"))
    content: Mapped[dict | list | None] = mapped_column(JSONType)
    #: the id of the first version (set right after it is inserted)
    lineage_id: Mapped[int | None] = mapped_column()
    version: Mapped[int] = mapped_column(default=1, server_default="1")
    created_at: Mapped[datetime.datetime | None] = mapped_column(default=now)
    deleted_at: Mapped[datetime.datetime | None] = mapped_column()

    component: Mapped[Component] = orm.relationship(back_populates="resource_definitions")


class Generation(Base):
    """Rows the database itself counts up (triggers of migration cdb009) on every change a document's
    answer depends on. Row ``EVERY_ENVIRONMENT`` (0): components and resource definitions. The row of an
    environment's id: the environment (its ``revision`` grows with every document written), its
    components and pins, and the nodes its ``nodes`` values may name (ids, clusters, FQDNs).

    Readers' caches compare them (``objects.fingerprint``), so a writer never has to remember to, and
    writers of different environments never update the same row. A value is the database's time of the
    row's last change in microseconds (one more than before when the clock is not ahead), so no value
    ever stands for two states of its row: not after a downgrade, nor after the database is restored
    from a backup (whose values stand for the very state it brings back). Rows are never deleted.
    """

    __tablename__ = PREFIX + "generations"

    environment_id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    generation: Mapped[int] = mapped_column(sa.BigInteger)


#: the ``Generation`` row of what every environment's answers depend on
EVERY_ENVIRONMENT = 0


class Environment(Base):
    """Resource instances over an ordered list of hierarchy levels.

    ``linked``: holds the data of the cluster of the same id (asked for at creation,
    never by coincidence of ids); only then are ``nodes`` values that cluster's nodes.

    ``revision`` is bumped by every write to any document of the environment, so
    "the effective values as of version N" is "every document as of N's revision".
    """

    __tablename__ = PREFIX + "environments"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=True)
    hierarchy_levels: Mapped[list] = mapped_column(default=list)
    revision: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[datetime.datetime] = mapped_column(default=now)
    linked: Mapped[bool] = mapped_column(default=False, server_default=sa.false())
    #: the storage driver's newest state of the environment (the git driver: its last commit)
    storage_head: Mapped[str | None] = mapped_column(sa.String(64))

    component_links: Mapped[list["EnvironmentComponent"]] = orm.relationship(
        order_by="EnvironmentComponent.position", cascade="all, delete-orphan", passive_deletes=True)
    #: written by ``objects.pins`` only
    pins: Mapped[list["EnvironmentPin"]] = orm.relationship(viewonly=True)


class EnvironmentComponent(Base):
    __tablename__ = PREFIX + "environment_components"
    __table_args__ = (sa.Index(PREFIX + "environment_components_component_id", "component_id"),)

    environment_id: Mapped[int] = mapped_column(
        sa.ForeignKey(PREFIX + "environments.id", ondelete="CASCADE"), primary_key=True)
    component_id: Mapped[int] = mapped_column(
        sa.ForeignKey(PREFIX + "components.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(default=0)


class EnvironmentPin(Base):
    """The version of a data source (``lineage_id``) an environment uses: its values validate against it.

    Written when the environment starts using the data source (created, a component added, a first
    version created in a component it uses) and moved only by an explicit request (``objects.pins``).
    """

    __tablename__ = PREFIX + "environment_pins"
    __table_args__ = (sa.Index(PREFIX + "environment_pins_definition_id", "definition_id"),)

    environment_id: Mapped[int] = mapped_column(
        sa.ForeignKey(PREFIX + "environments.id", ondelete="CASCADE"), primary_key=True)
    lineage_id: Mapped[int] = mapped_column(primary_key=True)
    definition_id: Mapped[int] = mapped_column(
        sa.ForeignKey(PREFIX + "resource_definitions.id", ondelete="CASCADE"))

    definition: Mapped[ResourceDefinition] = orm.relationship(lazy="joined", viewonly=True)


class Document(Base):
    """The current values or overrides of one resource at one level path of an environment.

    ``level_path`` is the whole path (``""`` for the environment level,
    ``"rack/A/nodes/5"`` deeper), so equal leaf values under different parents differ.
    """

    __tablename__ = PREFIX + "documents"
    __table_args__ = (
        sa.UniqueConstraint("environment_id", "resource_definition_id", "level_path", "kind"),
        sa.Index(PREFIX + "documents_resource_definition_id", "resource_definition_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    environment_id: Mapped[int] = mapped_column(
        sa.ForeignKey(PREFIX + "environments.id", ondelete="CASCADE"))
    resource_definition_id: Mapped[int] = mapped_column(
        sa.ForeignKey(PREFIX + "resource_definitions.id", ondelete="CASCADE"))
    level_path: Mapped[str] = mapped_column(sa.String(1024))
    kind: Mapped[str] = mapped_column(sa.String(16))
    version: Mapped[int] = mapped_column(default=0)
    #: the environment revision of the current version
    revision: Mapped[int] = mapped_column(default=0)
    #: sealed by ``objects.document.write`` (secret leaves as Fernet tokens), opened when read;
    #: ``{}`` where the storage driver keeps the content elsewhere (``storage_ref``)
    data: Mapped[dict] = mapped_column(SealedJSON(), default=dict)
    #: where the storage driver keeps the content, when not in ``data`` (the git driver: a blob)
    storage_ref: Mapped[str | None] = mapped_column(sa.String(64))


class DocumentVersion(Base):
    """One stored version of a document: its content, when, who, and what changed."""

    __tablename__ = PREFIX + "document_versions"
    __table_args__ = (
        sa.UniqueConstraint("document_id", "version"),
        sa.Index(PREFIX + "document_versions_revision", "document_id", "revision"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    document_id: Mapped[int] = mapped_column(
        sa.ForeignKey(PREFIX + "documents.id", ondelete="CASCADE"))
    version: Mapped[int]
    revision: Mapped[int]
    data: Mapped[dict] = mapped_column(SealedJSON())
    storage_ref: Mapped[str | None] = mapped_column(sa.String(64))
    author: Mapped[str] = mapped_column(sa.String(255))
    changed_keys: Mapped[list] = mapped_column(default=list)
    created_at: Mapped[datetime.datetime] = mapped_column(default=now)


class Change(Base):
    """One entry of the change feed: a document written or deleted, at an environment revision.

    Append-only and without values (so it needs no masking); written by ``objects.document`` in the
    writing transaction, so every path that writes a document appears. No foreign key to the document
    or its definition: an entry outlives both. Pruned per environment to ``CONFIGDB.max_changes``.
    """

    __tablename__ = PREFIX + "changes"
    __table_args__ = (sa.Index(PREFIX + "changes_environment_revision", "environment_id", "revision"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    environment_id: Mapped[int] = mapped_column(sa.ForeignKey(PREFIX + "environments.id", ondelete="CASCADE"))
    revision: Mapped[int] = mapped_column(sa.BigInteger)
    document_id: Mapped[int | None] = mapped_column()
    resource_definition_id: Mapped[int] = mapped_column()
    level_path: Mapped[str] = mapped_column(sa.String(1024))
    kind: Mapped[str] = mapped_column(sa.String(16))
    #: ``write`` or ``delete``
    change: Mapped[str] = mapped_column(sa.String(16))
    #: the document's version written; None for a deletion
    version: Mapped[int | None] = mapped_column()
    #: who wrote it; None for deletions made by the host's hooks (a node or cluster removed)
    author: Mapped[str | None] = mapped_column(sa.String(255))
    #: the configuration session whose deploy wrote it, if any
    session_id: Mapped[str | None] = mapped_column(sa.String(32))
    created_at: Mapped[datetime.datetime] = mapped_column(default=now)


def _latest_version():
    other = orm.aliased(ResourceDefinition)
    return (sa.select(sa.func.max(other.version))
            .where(other.lineage_id == ResourceDefinition.lineage_id, other.deleted_at.is_(None))
            .scalar_subquery())


#: the number of the newest live version of the definition's data source, loaded with it
ResourceDefinition.latest_version = orm.column_property(_latest_version())
#: the clause of the versions not deleted
LIVE_DEFINITIONS = ResourceDefinition.deleted_at.is_(None)
