"""The extension contract and the loader, as Nailgun offers them.

An extension is a ``BaseExtension`` subclass registered in the ``nailgun.extensions``
entry-point group. It adds URLs (``{"uri": regex, "handler": class}``), data pipelines
that shape deployment and provisioning info, callbacks fired on core events, and its
own alembic migrations with a version table of its own.

Discovery goes through stevedore. An extension that fails to import is logged and
skipped, so one broken package never takes the API down.
"""
import abc
import logging
import threading

from stevedore import ExtensionManager

from nailgun_host import errors

LOG = logging.getLogger(__name__)
NAMESPACE = "nailgun.extensions"


class BasePipeline:
    """Mutates serialized deployment or provisioning data of clusters that enable its extension."""

    @classmethod
    def process_deployment_for_cluster(cls, cluster, cluster_data):
        """Change the common part of a cluster's deployment info in place."""

    @classmethod
    def process_deployment_for_node(cls, node, node_data):
        """Change one node's deployment info in place."""

    @classmethod
    def process_provisioning_for_cluster(cls, cluster, cluster_data):
        """Change the common part of a cluster's provisioning info in place."""

    @classmethod
    def process_provisioning_for_node(cls, node, node_data):
        """Change one node's provisioning info in place."""


class SettingsError(ValueError):
    """Settings an extension cannot work with (``BaseExtension.check_settings``)."""


class BaseExtension(abc.ABC):
    """What an extension declares; every callback defaults to doing nothing."""

    #: ``[{"uri": regex, "handler": BaseHandler subclass}]``: routes the app mounts under ``/api/v1`` and ``/api``
    #: when it is built (``app.collect_routes``), after the host's own
    urls = []
    #: ``BasePipeline`` subclasses run on the deployment and provisioning info of the clusters that enable
    #: the extension (``pipelines_for``), after the ``on_before_*_serialization`` callbacks
    data_pipelines = []
    #: names of methods other code may call through ``call_provided``, the seam between extensions
    #: (listed by ``GET /extensions``)
    provides = []

    @property
    @abc.abstractmethod
    def name(self):
        """Unique lowercase name; also the prefix of the extension's tables."""

    @property
    @abc.abstractmethod
    def version(self):
        """Semantic version string."""

    @property
    @abc.abstractmethod
    def description(self):
        """One line for ``GET /extensions/``."""

    @classmethod
    def alembic_migrations_path(cls):
        """The extension's alembic script directory, or None when it has no tables."""
        return None

    @classmethod
    def table_prefix(cls):
        """``<name>_``: what the extension's table names start with (handed to its migrations)."""
        return "{0}_".format(cls.name)

    @classmethod
    def alembic_table_version(cls):
        """``<name>_alembic_version``: the extension's own alembic version table (``nailgun-syncdb``)."""
        return "{0}alembic_version".format(cls.table_prefix())

    # Lifecycle callbacks. Each fires inside the transaction of the request that caused the
    # event, before it commits: what a callback writes lands or rolls back with the request,
    # and an error it raises fails the request (its NailgunError status is the answer).
    # The ones below fire for every loaded extension.
    @classmethod
    def on_node_create(cls, node):
        """A node was discovered (POST /nodes); it has its id, admin address and interfaces."""

    @classmethod
    def on_node_update(cls, node):
        """A node's fields, roles or cluster changed (PUT /nodes, assignment); fired after the change."""

    @classmethod
    def on_node_delete(cls, node):
        """A node is about to be deleted (DELETE /nodes/<id>): its rows are still there."""

    @classmethod
    def on_remove_node_from_cluster(cls, node):
        """A node is about to leave its cluster (unassignment, cluster deletion, a move to another cluster
        through ``on_remove_nodes_from_cluster``'s default).

        ``node.cluster_id`` is still the cluster it leaves; its addresses there are freed after.
        """

    @classmethod
    def on_node_collection_delete(cls, node_ids):
        """Nodes are about to be deleted in bulk (DELETE /nodes?ids=...); ``on_node_delete`` fires for each too."""

    @classmethod
    def on_remove_nodes_from_cluster(cls, nodes):
        """Nodes are about to move to another cluster together (``node_obj.move_to_cluster``), each
        ``cluster_id`` still the one it leaves. Not Nailgun's: fired once for the batch, so an extension
        that answers it in a fixed number of statements keeps a move constant; by default
        ``on_remove_node_from_cluster`` for each node."""
        for node in nodes:
            cls.on_remove_node_from_cluster(node)

    @classmethod
    def on_nodes_update(cls, nodes):
        """Nodes changed together (moved to another cluster); by default ``on_node_update`` for each."""
        for node in nodes:
            cls.on_node_update(node)

    @classmethod
    def on_nodegroup_create(cls, nodegroup):
        """A node group was created in a cluster, with its networks."""

    @classmethod
    def on_nodegroup_delete(cls, nodegroup):
        """A node group is about to be deleted."""

    @classmethod
    def on_cluster_create(cls, cluster, data):
        """A cluster was created from the request body ``data``, with its node group, networks and attributes."""

    @classmethod
    def on_cluster_patch_attributes(cls, cluster, public_map):
        """A cluster's editable attributes changed (PUT/PATCH attributes, the environment model)."""

    # The extension's own sections of the settings file (``nailgun_host.settings``): declared here, never
    # in the host. Fired at every ``settings.reload``, before the first request.
    @classmethod
    def settings_sections(cls):
        """``{SECTION: {key: default}}``: the sections of the settings file the extension reads, with their
        defaults. The host merges them into its own (a file may set them; a misspelt section, or a key the
        extension does not declare, is refused); the settings table of docs/operator/configuration.md is tested
        against them."""
        return {}

    @classmethod
    def settings_environment(cls):
        """``{variable: (SECTION, key)}``: environment variables that override a key of the extension's
        sections when set (applied after the file)."""
        return {}

    @classmethod
    def check_settings_sections(cls, settings):
        """Raise ``ValueError`` when the extension's sections of ``settings`` (just read) cannot work: the
        settings are refused with that message, as a bad value of the host's own sections is."""

    # The documents the extension stages in configuration sessions, by their descriptor's ``type``.
    @classmethod
    def session_document_types(cls):
        """``{type: {"sections": bool}}``: the descriptor types (``{"type": ...}``) of the documents the extension
        stages in sessions; with ``sections`` a deployment lists the keys they change as its ``sections``
        (the environment model's). A client labels them through the ``nailgun.session_document_labels``
        entry points."""
        return {}

    @classmethod
    def check_settings(cls):
        """Raise ``SettingsError`` when the settings cannot work for this extension: ``nailgun-api`` and the
        WSGI module stop at start with its message instead of failing requests later."""

    @classmethod
    def policy_rules(cls):
        """``policy_rules() -> [oslo_policy.policy.DocumentedRuleDefault]``: the extension's own rules, chained
        after the host's (``nailgun_host.policy.rules_in_code``); each names the operations of the extension's
        routes it guards, with paths as ``/api/v1`` serves them."""
        return []

    @classmethod
    def policy_checks(cls):
        """``policy_checks() -> {rule name: [(method, route template)]}``: where the extension's callbacks ask
        a rule inside the host's handlers (a session's deploy), so the documented policy lists those
        operations too. Its own handlers say what they ask in ``BaseHandler.policy_checks``."""
        return {}

    @classmethod
    def on_cluster_delete(cls, cluster):
        """A cluster is about to be deleted: its nodes and rows are still there."""

    @classmethod
    def on_secrets_reseal(cls, dry_run):
        """``nailgun-secrets reencrypt`` (``dry_run``: ``status``) runs; not in a request.

        Renew the tokens of the extension's ``SealedJSON`` columns whose writer seals them and seal
        what is secret today but stored in clear (``nailgun_host.db.sealed.reseal``); return
        ``{"table.column": values changed}``, so the host leaves those columns alone. Commit as it goes.
        """
        return {}

    # Configuration sessions (seeds 000/001; ``nailgun_host.objects.config_session``). The host keeps
    # sessions, their states and their staged documents (``ConfigSessionChange`` rows, each tagged
    # with the extension that staged it); an extension stages its own documents and deploys them
    # through these hooks, fired for every loaded extension. ``changes`` are that extension's rows
    # only. Locks, in this order for every writer: the cluster row, the ConfigDB environment row,
    # then the session row.
    @classmethod
    def session_revision(cls, scope, environment_id):
        """The revision of an environment of ``scope`` the extension owns (``"config"``), else None."""
        return None

    @classmethod
    def on_session_lock(cls, session):
        """Before a deploy claims ``session``: take the row locks the extension's writers take."""

    @classmethod
    def on_session_open(cls, session):
        """A session opens: JSON the extension needs to tell later what changed since (kept in
        ``session.base[name]``), or None."""
        return None

    @classmethod
    def session_conflicts(cls, session, changes):
        """Before anything is written by a deploy: the staged documents changed since the session opened,
        as ``{"document": descriptor, "revision": ..., "author": ...}`` entries; [] when none."""
        return []

    @classmethod
    def on_session_deploy(cls, session, changes):
        """Apply each staged document to the current one, validate it and write it as a new version.

        Raise a NailgunError to refuse the deploy: the request rolls back whole. Return what changed,
        one ``{"document": descriptor, "changed_keys": [...], "patch": RFC 6902 old->new, "secrets":
        [pointers of the new document's secret leaves]}`` per document, for the history.
        """
        return []

    @classmethod
    def session_revisions(cls, session):
        """After ``on_session_deploy``: ``{counter: {"id": ..., "revision": ...}}`` for each revision counter of
        the extension's that the deploy moved (named after the extension, e.g. ``configdb_environment``), with
        the revision it landed in; the deployment lists them in ``revisions`` beside the host's ``cluster``."""
        return {}

    @classmethod
    def session_diff(cls, session, change, masked):
        """``(patch, hidden)``: the RFC 6902 patch from the current document to the staged one, its secret
        values masked when ``masked`` (``hidden``: whether one was)."""
        return [], False

    # Fired only for the extensions the cluster enables (``cluster.extensions``).
    @classmethod
    def on_before_deployment_check(cls, cluster, nodes):
        """A deployment of ``nodes`` was asked for (PUT /clusters/<id>/deploy); raise to refuse it."""

    @classmethod
    def on_before_deployment_serialization(cls, cluster, nodes, ignore_customized):
        """Deployment info of ``nodes`` is about to be built (a deployment, or GET of its defaults)."""

    @classmethod
    def on_before_provisioning_serialization(cls, cluster, nodes, ignore_customized):
        """Provisioning info of ``nodes`` is about to be built for a provisioning task."""

    def to_dict(self):
        """What ``GET /extensions`` (and the API root, ``/api/v1``) say of the extension."""
        return {
            "name": self.name,
            "version": self.version,
            "description": self.description,
            "provides": list(self.provides),
        }


_lock = threading.Lock()
_extensions = None


def _on_load_failure(_manager, entry_point, exc):
    LOG.error("Extension %s (%s) failed to load and is skipped: %s",
              entry_point.name, entry_point.value, exc, exc_info=exc)


def load_extensions():
    """Discover the extensions with stevedore; broken or invalid ones are logged and skipped."""
    ExtensionManager.ENTRY_POINT_CACHE.pop(NAMESPACE, None)  # see what is installed now
    manager = ExtensionManager(NAMESPACE, invoke_on_load=False,
                               on_load_failure_callback=_on_load_failure)
    loaded, names = [], set()
    for ext in sorted(manager.extensions, key=lambda e: e.name):
        plugin = ext.plugin
        try:
            if not (isinstance(plugin, type) and issubclass(plugin, BaseExtension)):
                raise TypeError("{0!r} is not a BaseExtension subclass".format(plugin))
            instance = plugin()
            if instance.name in names:
                raise ValueError("another extension is named {0!r}".format(instance.name))
        except Exception as exc:  # an extension's fault must not stop the host
            _on_load_failure(manager, ext.entry_point, exc)
            continue
        names.add(instance.name)
        loaded.append(instance)
    return loaded


def get_all_extensions():
    """The loaded extensions (instances), discovered once per process."""
    global _extensions
    if _extensions is None:
        with _lock:
            if _extensions is None:
                _extensions = load_extensions()
    return _extensions


def set_extensions(extensions):
    """Replace the loaded set (None: discover again on next use)."""
    global _extensions
    with _lock:
        _extensions = None if extensions is None else list(extensions)


def extensions_for(cluster):
    """The loaded extensions that a cluster enables, in load order."""
    enabled = set(cluster.extensions or [])
    return [e for e in get_all_extensions() if e.name in enabled]


def fire(callback, *args):
    """Fire a lifecycle callback on every loaded extension; what each one returned, in load order."""
    return [getattr(extension, callback)(*args) for extension in get_all_extensions()]


def fire_for_cluster(cluster, callback, *args):
    """Fire a callback on the extensions the cluster enables only (the ``on_before_*`` ones)."""
    for extension in extensions_for(cluster):
        getattr(extension, callback)(*args)


def call_provided(name, *args, **kwargs):
    """Call a method some extension ``provides``; the seam between extensions."""
    for extension in get_all_extensions():
        if name in extension.provides:
            return getattr(extension, name)(*args, **kwargs)
    raise errors.InvalidData("No extension provides {0!r}".format(name))


def pipelines_for(cluster):
    """The data pipelines of the extensions the cluster enables, in load order."""
    return [p for e in extensions_for(cluster) for p in e.data_pipelines]
