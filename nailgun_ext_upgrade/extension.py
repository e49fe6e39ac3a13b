"""The cluster_upgrade extension: clone an environment into an Upgrade Seed and move nodes into it."""
import os

from nailgun_host.public import (__version__, BaseExtension, BasePipeline, Cluster, authorize_declassified, cluster_obj,
                                 db, release_obj)
from nailgun_platform.public import masked_patch
from nailgun_ext_upgrade import policies
from nailgun_ext_upgrade.objects import model_session
from nailgun_ext_upgrade.objects import relation as relation_obj
from nailgun_ext_upgrade.urls import URLS


class UpgradePipeline(BasePipeline):
    """Tells the seed's deployment which environment it replaces (skipped once the relation is gone)."""

    @classmethod
    def process_deployment_for_cluster(cls, cluster, cluster_data):
        relation = relation_obj.get_cluster_relation(cluster.id)
        if relation is None:
            return
        orig, seed = db.get(Cluster, relation.orig_cluster_id), db.get(Cluster, relation.seed_cluster_id)
        cluster_data["upgrade"] = {"relation_info": {
            "orig_cluster_id": orig.id,
            "seed_cluster_id": seed.id,
            "orig_cluster_version": release_obj.environment_version(orig.release),
            "seed_cluster_version": release_obj.environment_version(seed.release),
        }}


class ClusterUpgradeExtension(BaseExtension):
    name = "cluster_upgrade"
    version = __version__
    description = "Clone an environment into an Upgrade Seed on a newer release and move nodes into it"
    urls = URLS
    data_pipelines = [UpgradePipeline]

    @classmethod
    def alembic_migrations_path(cls):
        return os.path.join(os.path.dirname(__file__), "migrations")

    @classmethod
    def settings_sections(cls):
        """``CLUSTER_UPGRADE.transformations``: per object and version, the transformers to run instead of
        the defaults (``transformations.get_config``)."""
        return {"CLUSTER_UPGRADE": {"transformations": {}}}

    @classmethod
    def session_document_types(cls):
        """The environment model, whose changed keys are a deployment's sections."""
        return {model_session.DESCRIPTOR["type"]: {"sections": True}}

    @classmethod
    def policy_checks(cls):
        return policies.CHECKS

    @classmethod
    def on_cluster_delete(cls, cluster):
        relation_obj.delete(cluster.id)

    # The environment model in configuration sessions (``objects.model_session``): the host holds the
    # cluster row lock (taken first by every writer of the model) whenever these run.
    @classmethod
    def session_conflicts(cls, session, changes):
        return model_session.conflicts(session, _cluster(session), changes)

    @classmethod
    def on_session_deploy(cls, session, changes):
        cluster = _cluster(session)
        return [model_session.deploy(session, cluster, change, authorize_declassified=authorize_declassified)
                for change in changes if change.document_key == model_session.KEY]

    @classmethod
    def session_diff(cls, session, change, masked):
        patch, secret = model_session.pending(session, _cluster(session), change)
        return masked_patch(patch, secret) if masked else (patch, False)


def _cluster(session):
    return cluster_obj.get(session.environment_id, lock=True)
