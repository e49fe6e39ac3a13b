"""Handler of the environment model: GET it whole or by RFC 6901 path, PATCH it with RFC 6902."""
from nailgun_host import errors
from nailgun_host.api.base import BaseHandler
from nailgun_host.objects import cluster as cluster_obj
from nailgun_ext_upgrade import schemas
from nailgun_ext_upgrade.objects import environment_model


class ClusterModelHandler(BaseHandler):
    request_schemas = {"PATCH": schemas.MODEL_PATCH}
    request_media_types = {"PATCH": schemas.MODEL_PATCH_MEDIA_TYPES}
    #: a section of the model may be any JSON value
    response_schemas = {"GET": {}}

    def GET(self, cluster_id, path=None):
        return environment_model.section(environment_model.build(cluster_obj.get(cluster_id)), path)

    def PATCH(self, cluster_id, path=None):
        cluster = cluster_obj.get(cluster_id, lock=True)
        if path and path.strip("/"):
            raise errors.MethodNotAllowed("A patch applies to the whole model: PATCH /clusters/{0}/model".format(
                cluster.id), ["GET"])
        return environment_model.apply_patch(cluster, self.body())
