"""The core tables: the part of Nailgun's model that an upgrade touches."""
import datetime
import uuid

import sqlalchemy as sa
from sqlalchemy import orm
from sqlalchemy.orm import Mapped, mapped_column

from nailgun_host.db import Base, JSONType
from nailgun_platform import clock, secrets
from nailgun_platform.sealed import SealedJSON


class Release(Base):
    __tablename__ = "releases"
    __table_args__ = (sa.UniqueConstraint("name", "version"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(100))
    version: Mapped[str] = mapped_column(sa.String(30))
    description: Mapped[str | None] = mapped_column(sa.Text)
    operating_system: Mapped[str] = mapped_column(sa.String(50))
    state: Mapped[str] = mapped_column(sa.String(20), default="available")
    modes_metadata: Mapped[dict] = mapped_column(default=dict)
    roles_metadata: Mapped[dict] = mapped_column(default=dict)
    #: editable defaults of password fields sealed: a cluster made from the release starts with them
    attributes_metadata: Mapped[dict] = mapped_column(SealedJSON(secrets.release_secrets), default=dict)
    networks_metadata: Mapped[dict] = mapped_column(default=dict)
    network_roles_metadata: Mapped[list] = mapped_column(default=list)
    components_metadata: Mapped[list] = mapped_column(default=list)
    deployment_tasks: Mapped[list] = mapped_column(default=list)
    extensions: Mapped[list] = mapped_column(default=list)


class Cluster(Base):
    __tablename__ = "clusters"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(50), unique=True)
    mode: Mapped[str] = mapped_column(sa.String(20), default="ha_compact")
    status: Mapped[str] = mapped_column(sa.String(20), default="new")
    net_provider: Mapped[str] = mapped_column(sa.String(20), default="neutron")
    release_id: Mapped[int] = mapped_column(sa.ForeignKey("releases.id"))
    is_customized: Mapped[bool] = mapped_column(default=False)
    ui_settings: Mapped[dict] = mapped_column(default=dict)
    extensions: Mapped[list] = mapped_column(default=list)
    editable_attributes: Mapped[dict] = mapped_column(SealedJSON(secrets.attribute_secrets), default=dict)
    generated_attributes: Mapped[dict] = mapped_column(SealedJSON(secrets.every_leaf), default=dict)
    networking_parameters: Mapped[dict] = mapped_column(default=dict)
    network_template: Mapped[dict | None] = mapped_column(JSONType)
    pending_changes: Mapped[list] = mapped_column(default=list)
    created_at: Mapped[datetime.datetime] = mapped_column(default=clock.now)
    #: bumped by every change of the environment model (a direct PATCH, a deployed session)
    revision: Mapped[int] = mapped_column(sa.BigInteger, default=0, server_default="0")

    release: Mapped[Release] = orm.relationship(lazy="joined", innerjoin=True)
    node_groups: Mapped[list["NodeGroup"]] = orm.relationship(
        back_populates="cluster", cascade="all, delete-orphan", order_by="NodeGroup.id"
    )
    nodes: Mapped[list["Node"]] = orm.relationship(back_populates="cluster", order_by="Node.id")


class NodeGroup(Base):
    __tablename__ = "nodegroups"
    __table_args__ = (sa.UniqueConstraint("cluster_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    cluster_id: Mapped[int] = mapped_column(sa.ForeignKey("clusters.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(sa.String(50))
    is_default: Mapped[bool] = mapped_column(default=False)

    cluster: Mapped[Cluster] = orm.relationship(back_populates="node_groups")
    networks: Mapped[list["NetworkGroup"]] = orm.relationship(
        back_populates="node_group", cascade="all, delete-orphan", order_by="NetworkGroup.id"
    )


class NetworkGroup(Base):
    """A network of a node group (or the global admin network, with no group)."""

    __tablename__ = "network_groups"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(sa.String(50))
    release: Mapped[int | None] = mapped_column(sa.Integer)
    vlan_start: Mapped[int | None] = mapped_column(sa.Integer)
    cidr: Mapped[str | None] = mapped_column(sa.String(25))
    gateway: Mapped[str | None] = mapped_column(sa.String(25))
    group_id: Mapped[int | None] = mapped_column(sa.ForeignKey("nodegroups.id", ondelete="CASCADE"))
    meta: Mapped[dict] = mapped_column(default=dict)

    node_group: Mapped[NodeGroup | None] = orm.relationship(back_populates="networks")
    ip_ranges: Mapped[list["IPAddrRange"]] = orm.relationship(
        cascade="all, delete-orphan", order_by="IPAddrRange.id", lazy="selectin"
    )


class IPAddrRange(Base):
    __tablename__ = "ip_addr_ranges"

    id: Mapped[int] = mapped_column(primary_key=True)
    network_group_id: Mapped[int] = mapped_column(sa.ForeignKey("network_groups.id", ondelete="CASCADE"))
    first: Mapped[str] = mapped_column(sa.String(25))
    last: Mapped[str] = mapped_column(sa.String(25))


class IPAddr(Base):
    """An address handed out in a network: to a node, or as a VIP (``vip_name``)."""

    __tablename__ = "ip_addrs"
    __table_args__ = (sa.UniqueConstraint("network", "ip_addr", name="ip_addrs_network_ip_addr_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    network: Mapped[int] = mapped_column(sa.ForeignKey("network_groups.id", ondelete="CASCADE"))
    node: Mapped[int | None] = mapped_column(sa.ForeignKey("nodes.id", ondelete="CASCADE"))
    ip_addr: Mapped[str] = mapped_column(sa.String(25))
    vip_name: Mapped[str | None] = mapped_column(sa.String(50))
    vip_namespace: Mapped[str | None] = mapped_column(sa.String(50))
    is_user_defined: Mapped[bool] = mapped_column(default=False)

    network_data: Mapped[NetworkGroup] = orm.relationship(lazy="joined")


class Node(Base):
    __tablename__ = "nodes"
    __table_args__ = (sa.Index("nodes_fqdn", "fqdn"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(sa.String(36), unique=True, default=lambda: str(uuid.uuid4()))
    name: Mapped[str] = mapped_column(sa.String(100), default="")
    hostname: Mapped[str] = mapped_column(sa.String(255), default="")
    fqdn: Mapped[str | None] = mapped_column(sa.String(255))
    status: Mapped[str] = mapped_column(sa.String(20), default="discover")
    error_type: Mapped[str | None] = mapped_column(sa.String(30))
    error_msg: Mapped[str | None] = mapped_column(sa.Text)
    online: Mapped[bool] = mapped_column(default=True)
    mac: Mapped[str] = mapped_column(sa.String(17), unique=True)
    ip: Mapped[str | None] = mapped_column(sa.String(25))
    manufacturer: Mapped[str | None] = mapped_column(sa.String(50))
    platform_name: Mapped[str | None] = mapped_column(sa.String(150))
    os_platform: Mapped[str | None] = mapped_column(sa.String(150))
    cluster_id: Mapped[int | None] = mapped_column(sa.ForeignKey("clusters.id", ondelete="SET NULL"), index=True)
    group_id: Mapped[int | None] = mapped_column(sa.ForeignKey("nodegroups.id", ondelete="SET NULL"))
    roles: Mapped[list] = mapped_column(default=list)
    pending_roles: Mapped[list] = mapped_column(default=list)
    primary_tags: Mapped[list] = mapped_column(default=list)
    pending_addition: Mapped[bool] = mapped_column(default=False)
    pending_deletion: Mapped[bool] = mapped_column(default=False)
    meta: Mapped[dict] = mapped_column(default=dict)
    volumes: Mapped[list] = mapped_column(default=list)
    kernel_params: Mapped[str | None] = mapped_column(sa.Text)
    progress: Mapped[int] = mapped_column(default=0)
    replaced_deployment_info: Mapped[list] = mapped_column(default=list)
    replaced_provisioning_info: Mapped[dict] = mapped_column(default=dict)
    network_template: Mapped[dict | None] = mapped_column(JSONType)
    pending_changes: Mapped[list] = mapped_column(default=list)
    timestamp: Mapped[datetime.datetime] = mapped_column(default=clock.now)

    cluster: Mapped[Cluster | None] = orm.relationship(back_populates="nodes")
    interfaces: Mapped[list["NodeInterface"]] = orm.relationship(
        cascade="all, delete-orphan", order_by="NodeInterface.id", back_populates="node"
    )
    ip_addrs: Mapped[list[IPAddr]] = orm.relationship(cascade="all, delete-orphan", order_by="IPAddr.id")


interface_networks = sa.Table(
    "interface_networks",
    Base.metadata,
    sa.Column("interface_id", sa.ForeignKey("node_interfaces.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("network_id", sa.ForeignKey("network_groups.id", ondelete="CASCADE"), primary_key=True),
)


class NodeInterface(Base):
    """A NIC (``type`` ether) or a bond of NICs, and the networks assigned to it."""

    __tablename__ = "node_interfaces"
    __table_args__ = (sa.UniqueConstraint("node_id", "name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    node_id: Mapped[int] = mapped_column(sa.ForeignKey("nodes.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(sa.String(128))
    type: Mapped[str] = mapped_column(sa.String(10), default="ether")
    mac: Mapped[str | None] = mapped_column(sa.String(17))
    pxe: Mapped[bool] = mapped_column(default=False)
    mode: Mapped[str | None] = mapped_column(sa.String(30))
    slaves: Mapped[list] = mapped_column(default=list)

    node: Mapped[Node] = orm.relationship(back_populates="interfaces")
    assigned_networks: Mapped[list[NetworkGroup]] = orm.relationship(
        secondary=interface_networks, order_by="NetworkGroup.id"
    )


#: a task of these names, while pending or running, is the only such task of its cluster
CLUSTER_TASK_NAMES = ("provision", "deployment", "deploy")
ACTIVE_TASK_STATUSES = ("pending", "running")


class Task(Base):
    __tablename__ = "tasks"
    __table_args__ = (
        # at most one running cluster task, held by the database whatever the request path
        sa.Index("tasks_one_active_per_cluster", "cluster_id", unique=True,
                 postgresql_where=sa.text("status IN ('pending', 'running') AND "
                                          "name IN ('provision', 'deployment', 'deploy')"),
                 sqlite_where=sa.text("status IN ('pending', 'running') AND "
                                      "name IN ('provision', 'deployment', 'deploy')")),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    uuid: Mapped[str] = mapped_column(sa.String(36), unique=True, default=lambda: str(uuid.uuid4()))
    name: Mapped[str] = mapped_column(sa.String(50))
    cluster_id: Mapped[int | None] = mapped_column(sa.ForeignKey("clusters.id", ondelete="CASCADE"), index=True)
    status: Mapped[str] = mapped_column(sa.String(20), default="pending")
    progress: Mapped[int] = mapped_column(default=0)
    message: Mapped[str | None] = mapped_column(sa.Text)
    result: Mapped[dict] = mapped_column(default=dict)
    parent_id: Mapped[int | None] = mapped_column(sa.ForeignKey("tasks.id", ondelete="CASCADE"))
    dry_run: Mapped[bool] = mapped_column(default=False)
    graph_type: Mapped[str | None] = mapped_column(sa.String(255))
    time_start: Mapped[datetime.datetime | None] = mapped_column()
    time_end: Mapped[datetime.datetime | None] = mapped_column()
    #: what the orchestrator was (or would have been) sent for this task: the deployment's
    #: credentials among it, so sealed whole
    cache: Mapped[dict] = mapped_column(SealedJSON(secrets.whole_document), default=dict)



SESSION_SCOPES = ("cluster", "config")


class ConfigSession(Base):
    """A configuration session (seeds 000/001): changes staged on one environment, deployed at once.

    ``scope`` says whose environment it is: a cluster (its model, and the documents of a
    ConfigDB environment linked to it) or an unlinked ConfigDB environment. There is no
    foreign key: a ``config`` environment lives in an extension's table, whose deletion hook
    deletes its sessions. ``nailgun_host.objects.config_session`` is the only writer of ``state``.
    """

    __tablename__ = "config_sessions"
    __table_args__ = (
        sa.CheckConstraint("scope IN ('cluster', 'config')", name="config_sessions_scope"),
        sa.CheckConstraint("state IN ('open', 'deploying', 'deployed', 'invalid', 'abandoned', 'expired')",
                           name="config_sessions_state"),
        sa.Index("config_sessions_environment", "scope", "environment_id", "state"),
        sa.Index("config_sessions_deployed", "scope", "environment_id", "deployed_at"),
    )

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True, default=lambda: uuid.uuid4().hex)
    scope: Mapped[str] = mapped_column(sa.String(16))
    environment_id: Mapped[int] = mapped_column()
    #: the authenticated identity that opened it (``user_id`` on the wire)
    owner: Mapped[str] = mapped_column(sa.String(255))
    state: Mapped[str] = mapped_column(sa.String(16), default="open")
    #: the scope's revision when it was opened
    version: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    #: per extension (by name), what it needs to tell later what changed since the opening
    base: Mapped[dict] = mapped_column(default=dict)
    created_at: Mapped[datetime.datetime] = mapped_column(default=clock.now)
    updated_at: Mapped[datetime.datetime] = mapped_column(default=clock.now)
    expires_at: Mapped[datetime.datetime] = mapped_column()
    deployed_at: Mapped[datetime.datetime | None] = mapped_column()
    #: the scope revision the deploy landed in (what ``?before=`` pages by)
    revision: Mapped[int | None] = mapped_column(sa.BigInteger)
    #: every revision counter the deploy moved, ``{counter: {"id", "revision"}}``: ``cluster`` (the host's) and
    #: the extensions' (``BaseExtension.session_revisions``); None until deployed
    revisions: Mapped[dict | None] = mapped_column(JSONType)
    #: why it is invalid: the 409 entries of the documents changed under it
    conflicts: Mapped[list | None] = mapped_column(JSONType)
    #: what a deploy changed, per document (``{"document", "changed_keys", "patch", "secrets"}``); the
    #: history. Sealed by its writer, which knows which op values are secret.
    deployed_changes: Mapped[list | None] = mapped_column(SealedJSON())

    changes: Mapped[list["ConfigSessionChange"]] = orm.relationship(
        back_populates="session", cascade="all, delete-orphan", passive_deletes=True,
        order_by="ConfigSessionChange.id")


class ConfigSessionChange(Base):
    """One document staged in a session: the whole staged document, as its client sent it.

    Secrets are sealed by the extension that stages it (it knows the document's schema); a
    secret sent back as the mask stays the mask here, so the stored secret is never copied.
    """

    __tablename__ = "config_session_changes"
    __table_args__ = (sa.UniqueConstraint("session_id", "document_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    session_id: Mapped[str] = mapped_column(sa.ForeignKey("config_sessions.id", ondelete="CASCADE"))
    #: the extension (by name) that staged it and deploys it
    extension: Mapped[str] = mapped_column(sa.String(64))
    #: the extension's name for the document, unique in the session (e.g. ``12:/nodes/5/:values``)
    document_key: Mapped[str] = mapped_column(sa.String(1100))
    #: how answers describe the document (``{"type": "configdb", "resource": 12, ...}``)
    descriptor: Mapped[dict] = mapped_column(default=dict)
    data: Mapped[dict] = mapped_column(SealedJSON())
    #: what the extension needs to tell whether the current document changed since it was first
    #: staged (ConfigDB: the document's revision then; the model: a digest of it)
    base: Mapped[dict | None] = mapped_column(JSONType)
    changed_keys: Mapped[list] = mapped_column(default=list)
    updated_at: Mapped[datetime.datetime] = mapped_column(default=clock.now)

    session: Mapped[ConfigSession] = orm.relationship(back_populates="changes")


class RequestStatsHost(Base):
    """A host serving the API, as ``GET /stats`` shows it: when it first and last added its counts, its CPU.

    Written only by ``nailgun_host.stats``: every process of the host, now and then.
    """

    __tablename__ = "request_stats_hosts"

    id: Mapped[int] = mapped_column(primary_key=True)
    host: Mapped[str] = mapped_column(sa.String(255), unique=True)
    created_at: Mapped[datetime.datetime] = mapped_column(default=clock.now)
    updated_at: Mapped[datetime.datetime] = mapped_column(default=clock.now)
    cpu_percent: Mapped[float] = mapped_column(default=0.0)
    cpu_count: Mapped[int] = mapped_column(default=1)


class RequestStatsCount(Base):
    """The requests a host answered for one tenant and user (empty: no identity), added up by its processes."""

    __tablename__ = "request_stats_counts"

    host: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    tenant: Mapped[str] = mapped_column(sa.String(255), primary_key=True)
    user_name: Mapped[str] = mapped_column(sa.String(512), primary_key=True)
    requests: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    errors: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    #: the sum of the requests' response times
    seconds: Mapped[float] = mapped_column(default=0.0)


class TokenKey(Base):
    """A Fernet key of local mode's tokens (``nailgun_host.auth.token_keys``): the highest id signs, the others
    still open the tokens they signed until those expire."""

    __tablename__ = "auth_token_keys"

    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    #: ``{"fernet_key": ...}``, sealed like every secret at rest: a dump of the database forges no token
    key: Mapped[dict] = mapped_column(SealedJSON(secrets.every_leaf))
    #: when a newer key became the primary; None: this one is the primary
    superseded_at: Mapped[datetime.datetime | None] = mapped_column()


class TokenRevocation(Base):
    """Local mode: tokens of ``user_name`` that carry ``password_fingerprint`` are refused by every host, whatever
    its copy of the users file says (``nailgun-users delete``, or a new password)."""

    __tablename__ = "auth_revocations"

    user_name: Mapped[str] = mapped_column(sa.String(512), primary_key=True)
    password_fingerprint: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    revoked_at: Mapped[datetime.datetime] = mapped_column(default=clock.now)
