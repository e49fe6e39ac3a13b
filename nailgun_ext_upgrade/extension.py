"""The cluster_upgrade extension: clone an environment into an Upgrade Seed and move nodes into it."""
import os

import nailgun_host
from nailgun_host.db import db
from nailgun_host.db.models import Cluster
from nailgun_host.api.base import authorize_declassified
from nailgun_host.extensions import BaseExtension, BasePipeline
from nailgun_host.objects import cluster as cluster_obj
from nailgun_host.objects import config_session
from nailgun_host.objects import release as release_obj
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
    version = nailgun_host.__version__
    description = "Clone an environment into an Upgrade Seed on a newer release and move nodes into it"
    urls = URLS
    data_pipelines = [UpgradePipeline]

    @classmethod
    def alembic_migrations_path(cls):
        return os.path.join(os.path.dirname(__file__), "migrations")

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
        return config_session.masked_patch(patch, secret) if masked else (patch, False)


def _cluster(session):
    return cluster_obj.get(session.environment_id, lock=True)
