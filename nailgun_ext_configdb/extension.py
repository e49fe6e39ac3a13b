"""The configdb extension: a versioned store of serialized deployment facts."""
import os

import sqlalchemy as sa

from nailgun_host.public import __version__, BaseExtension, Node, SettingsError, db, errors
from nailgun_ext_configdb import policies, settings_section, storage
from nailgun_ext_configdb.api.patch_rights import bound_by_patch_policy
from nailgun_ext_configdb.models import Environment
from nailgun_ext_configdb.objects import document, levels, resealing, staging
from nailgun_ext_configdb.objects import environment as environment_obj
from nailgun_ext_configdb.urls import URLS


def _linked_environment(cluster_id):
    """The environment linked to the cluster, its row locked; None when there is none.

    The lock orders this against ConfigDB writes, which hold it while they check that
    a node is in the cluster: a write either lands before the node leaves (and is
    deleted with its level) or sees the node gone (404), never leaves a stale document.
    """
    return db.scalars(sa.select(Environment).where(Environment.id == cluster_id, Environment.linked)
                      .with_for_update()).first()


def _forget_nodes(nodes):
    """Delete the documents stored for these nodes in their clusters' linked environments."""
    by_cluster = {}
    for node in nodes:
        if node.cluster_id is not None:
            by_cluster.setdefault(node.cluster_id, []).append(node.id)
    for cluster_id, node_ids in sorted(by_cluster.items()):
        environment = _linked_environment(cluster_id)
        if environment is None:
            continue
        environment_id = environment.id
        paths = document.level_paths(environment_id, like="%{0}/%".format(levels.NODES))
        document.delete_at(environment_id, [p for node_id in node_ids for p in levels.paths_of_node(paths, node_id)])


class ConfigDBExtension(BaseExtension):
    name = "configdb"
    version = __version__
    description = "Versioned store of serialized deployment facts, with overrides and effective values"
    urls = URLS

    @classmethod
    def alembic_migrations_path(cls):
        return os.path.join(os.path.dirname(__file__), "migrations")

    @classmethod
    def settings_sections(cls):
        return {settings_section.NAME: settings_section.DEFAULTS}

    @classmethod
    def settings_environment(cls):
        return settings_section.ENVIRONMENT

    @classmethod
    def check_settings_sections(cls, settings):
        settings_section.check(settings[settings_section.NAME])

    @classmethod
    def session_document_types(cls):
        return {"configdb": {"sections": False}}

    @classmethod
    def policy_rules(cls):
        return policies.RULES

    @classmethod
    def check_settings(cls):
        """``CONFIGDB.storage`` names an installed storage driver."""
        try:
            storage.driver()
        except errors.ServiceUnavailable as exc:
            raise SettingsError(exc.message)

    @classmethod
    def on_cluster_delete(cls, cluster):
        """The cluster's linked environment goes with it (its stored documents too); an unlinked one of
        the same id stays."""
        found = _linked_environment(cluster.id)
        if found is not None:
            environment_obj.delete(found)

    @classmethod
    def on_node_delete(cls, node):
        _forget_nodes([node])

    @classmethod
    def on_node_collection_delete(cls, node_ids):
        _forget_nodes(db.scalars(sa.select(Node).where(Node.id.in_(node_ids))).all())

    @classmethod
    def on_remove_node_from_cluster(cls, node):
        """A node leaving its cluster is wiped and redeployed, so its facts there are stale."""
        _forget_nodes([node])

    @classmethod
    def on_remove_nodes_from_cluster(cls, nodes):
        """Nodes moving to another cluster together (an upgrade's assign): their facts in the environments
        they leave go, in one lock, one read and one delete per cluster, whatever their number."""
        _forget_nodes(nodes)

    @classmethod
    def on_secrets_reseal(cls, dry_run):
        """Documents and versions sealed again with their definitions' schemas and today's patterns."""
        return resealing.reseal_documents(dry_run=dry_run)

    # configuration sessions: ConfigDB stages whole documents (``objects.staging``)
    @classmethod
    def session_revision(cls, scope, environment_id):
        """An unlinked environment's revision (a linked one's sessions are its cluster's)."""
        if (scope.kind if hasattr(scope, "kind") else scope) != "config":
            return None
        environment = db.get(Environment, environment_id)
        return environment.revision if environment is not None else None

    @classmethod
    def on_session_lock(cls, session):
        """The ConfigDB environment row, as every document writer takes it (a cluster's linked one)."""
        staging.lock(session)

    @classmethod
    def session_conflicts(cls, session, changes):
        return staging.conflicts(session, changes)

    @classmethod
    def on_session_deploy(cls, session, changes):
        return staging.deploy(session, changes, session.owner, bound=bound_by_patch_policy())

    @classmethod
    def session_revisions(cls, session):
        """The ConfigDB environment's revision the deploy's documents landed in, as the change feed has it."""
        return staging.revisions(session)

    @classmethod
    def session_diff(cls, session, change, masked):
        return staging.diff(change, masked)
