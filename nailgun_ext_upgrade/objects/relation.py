"""Upgrade relations: the orig <-> seed pairs, looked up from either side."""
from nailgun_host.public import db
from nailgun_ext_upgrade.models import UpgradeRelation


def _query(cluster_id):
    return db.query(UpgradeRelation).filter(
        (UpgradeRelation.orig_cluster_id == cluster_id) | (UpgradeRelation.seed_cluster_id == cluster_id))


def get_cluster_relation(cluster_id):
    """The relation the cluster takes part in, as orig or as seed; None if there is none."""
    return _query(cluster_id).first()


def listed(cluster_id=None):
    """Every relation, or (``cluster_id``) the one that cluster takes part in, as ``{orig_cluster_id,
    seed_cluster_id}``, by orig."""
    query = db.query(UpgradeRelation) if cluster_id is None else _query(cluster_id)
    return [{"orig_cluster_id": found.orig_cluster_id, "seed_cluster_id": found.seed_cluster_id}
            for found in query.order_by(UpgradeRelation.orig_cluster_id)]


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
