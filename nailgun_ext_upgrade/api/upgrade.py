"""Handlers of the upgrade resources under /clusters/<id>/upgrade."""
from nailgun_host.public import (BaseHandler, Cluster, authorize_declassified, cluster_obj, db, errors, id_param,
                                 network_obj as network, node_obj, policy, release_obj, respond_with_task, shown,
                                 task_obj)
from nailgun_ext_upgrade import schemas, validators
from nailgun_ext_upgrade.objects import relation as relation_obj, upgrade

SUB_RESOURCES = ("clone", "assign", "vips", "clone_release/<release_id>")


class ClusterUpgradeHandler(BaseHandler):
    """The root of the upgrade resources: no single-click upgrade yet, so nothing to do here."""

    def _not_implemented(self, cluster_id):
        cluster = cluster_obj.get(cluster_id)
        raise errors.ObjectNotFound(
            "No method is implemented for the upgrade of environment {0} as a whole; use its "
            "sub-resources: {1}".format(cluster.id, ", ".join(SUB_RESOURCES)),
            ["/clusters/{0}/upgrade/{1}".format(cluster.id, name) for name in SUB_RESOURCES])

    GET = POST = PUT = PATCH = DELETE = _not_implemented


class UpgradeRelationsHandler(BaseHandler):
    """Which cluster is whose seed, all in one answer (a console lists tens of clusters at once)."""

    response_schemas = {"GET": {"type": "array", "items": {
        "type": "object", "properties": {"orig_cluster_id": {"type": "integer"}, "seed_cluster_id": {"type": "integer"}}}}}

    def GET(self):
        return relation_obj.listed(id_param("cluster_id"))


class ClusterUpgradeCloneHandler(BaseHandler):
    request_schemas = {"POST": schemas.CLONE}
    policy_checks = {"POST": (policy.CHANGE_SECRETS,)}

    def POST(self, cluster_id):
        """The orig's Upgrade Seed on a newer release; 200 with the seed (no secrets)."""
        orig = cluster_obj.get(cluster_id, lock=True)
        data = self.body()
        new_release, attributes = validators.validate_clone(orig, data, authorize_declassified=authorize_declassified)
        seed = upgrade.clone_cluster(orig, data["name"], new_release, attributes)
        return cluster_obj.to_dict(seed)


class NodeReassignHandler(BaseHandler):
    request_schemas = {"POST": schemas.ASSIGN}

    def POST(self, cluster_id):
        """Orig nodes into the seed: 202 with the provisioning task, or 200 with the nodes."""
        seed = upgrade.lock_for_assign(cluster_id)
        data = self.body()
        orig, nodes, mapping = validators.validate_assign(seed, data)
        reprovision = data.get("reprovision", True)
        upgrade.move_nodes(nodes, orig, seed, mapping, data.get("roles"), reprovision)
        if not reprovision:
            return [node_obj.to_dict(node) for node in nodes]
        return respond_with_task(task_obj.provision(seed, nodes))


class CopyVIPsHandler(BaseHandler):
    def POST(self, cluster_id):
        """The orig's VIPs copied to the seed; 200 with every VIP of the seed."""
        seed = cluster_obj.get(cluster_id, lock=True)
        relation = validators.seed_relation(seed)
        orig = db.get(Cluster, relation.orig_cluster_id)
        return [network.vip_to_dict(vip) for vip in upgrade.copy_vips(orig, seed)]


class CreateUpgradeReleaseHandler(BaseHandler):
    policy_checks = {"POST": (policy.READ_SECRETS,)}

    def POST(self, cluster_id, release_id):
        """A copy of a release keeping the orig's network role mappings; 200 with the release."""
        base = release_obj.get(release_id)
        orig = cluster_obj.get(cluster_id)
        validators.check_upgrade_release_name(upgrade.upgrade_release_name(orig, base))
        release = upgrade.clone_release(orig, base)
        return shown(release_obj.to_dict(release), release_obj.secret_pointers(release))
