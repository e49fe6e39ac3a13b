"""Upgrade relations: the orig <-> seed pairs, looked up from either side."""
from nailgun_host.public import db
from nailgun_ext_upgrade.models import UpgradeRelation


def _query(cluster_id):
    return db.query(UpgradeRelation).filter(
        (UpgradeRelation.orig_cluster_id == cluster_id) | (UpgradeRelation.seed_cluster_id == cluster_id))


def get_cluster_relation(cluster_id):
    """The relation the cluster takes part in, as orig or as seed; None if there is none."""
    return _query(cluster_id).first()


def is_cluster_in_upgrade(cluster_id):
    return db.query(_query(cluster_id).exists()).scalar()


def create(orig_cluster_id, seed_cluster_id):
    relation = UpgradeRelation(orig_cluster_id=orig_cluster_id, seed_cluster_id=seed_cluster_id)
    db.add(relation)
    db.flush()
    return relation


def delete(cluster_id):
    _query(cluster_id).delete(synchronize_session=False)
    db.flush()
