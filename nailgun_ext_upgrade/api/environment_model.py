"""Handler of the environment model: GET it whole or by RFC 6901 path, PATCH it with RFC 6902."""
import web

from nailgun_host import errors
from nailgun_host.api.base import MASKED_HEADER, BaseHandler, authorize_declassified, shown
from nailgun_host.objects import cluster as cluster_obj
from nailgun_ext_upgrade import schemas
from nailgun_ext_upgrade.objects import environment_model


class ClusterModelHandler(BaseHandler):
    request_schemas = {"PATCH": schemas.MODEL_PATCH}
    request_media_types = {"PATCH": schemas.MODEL_PATCH_MEDIA_TYPES}
    #: a section of the model may be any JSON value
    response_schemas = {"GET": {}}

    def GET(self, cluster_id, path=None):
        cluster = cluster_obj.get(cluster_id)
        return _answer(environment_model.build(cluster), environment_model.editable_secrets(cluster), path)

    def PATCH(self, cluster_id, path=None):
        cluster = cluster_obj.get(cluster_id, lock=True)
        if path and path.strip("/"):
            raise errors.MethodNotAllowed("A patch applies to the whole model: PATCH /clusters/{0}/model".format(
                cluster.id), ["GET"])
        model = environment_model.apply_patch(cluster, self.body(), view=shown,
                                              authorize_declassified=authorize_declassified)
        return _answer(model, environment_model.editable_secrets(cluster))


def _answer(model, secret, path=None):
    """The section at ``path`` as this identity may see it: generated values are always masked (and
    said so), secret editable values for whoever may not see secrets."""
    part = environment_model.section(model, path)
    pointer = environment_model.section_pointer(path)
    if environment_model.within(environment_model.generated_pointers(model), pointer):
        web.header(MASKED_HEADER, "true")
    return shown(part, environment_model.within(secret, pointer))
