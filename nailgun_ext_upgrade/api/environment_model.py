"""Handler of the environment model: GET it whole or by RFC 6901 path, PATCH it with RFC 6902.

With ``X-Configuration-Session`` a PATCH stages the patched model in that session and a GET shows
the staged model (seed 000); without it a PATCH writes at once and bumps the cluster's revision,
unless ``SESSIONS.direct_model_patch`` is false, which makes the header required.
"""
import web

from nailgun_host.public import (MASKED_HEADER, BaseHandler, authorize_declassified, cluster_obj,
                                 config_session_obj as config_session, errors, policy, request_session, settings, shown)
from nailgun_ext_upgrade import schemas
from nailgun_ext_upgrade.objects import environment_model, model_session


class ClusterModelHandler(BaseHandler):
    request_schemas = {"PATCH": schemas.MODEL_PATCH}
    request_media_types = {"PATCH": schemas.MODEL_PATCH_MEDIA_TYPES}
    #: a section of the model may be any JSON value
    response_schemas = {"GET": {}}
    policy_checks = {"GET": (policy.READ_SECRETS,), "PATCH": (policy.CHANGE_SECRETS, policy.READ_SECRETS)}

    def GET(self, cluster_id, path=None):
        cluster = cluster_obj.get(cluster_id)
        session = request_session(config_session.Scope("cluster", cluster.id), write=False)
        return _answer(model_session.view(session, cluster), environment_model.editable_secrets(cluster), path)

    def PATCH(self, cluster_id, path=None):
        cluster = cluster_obj.get(cluster_id, lock=True)
        if path and path.strip("/"):
            raise errors.MethodNotAllowed("A patch applies to the whole model: PATCH /clusters/{0}/model".format(
                cluster.id), ["GET"])
        session = request_session(config_session.Scope("cluster", cluster.id), write=True,
                                  required=not settings["SESSIONS"]["direct_model_patch"])
        operations = self.body()
        if session is not None:
            model = model_session.stage(session, cluster, operations, shown,
                                        authorize_declassified=authorize_declassified)
            return _answer(model, environment_model.editable_secrets(cluster))
        before = model_session.editable(environment_model.build(cluster))
        model = environment_model.apply_patch(cluster, operations, view=shown,
                                              authorize_declassified=authorize_declassified)
        if model_session.editable(model) != before:
            config_session.bump_cluster_revision(cluster)
        return _answer(model, environment_model.editable_secrets(cluster))


def _answer(model, secret, path=None):
    """The section at ``path`` as this identity may see it: generated values are always masked (and
    said so), secret editable values for whoever may not see secrets."""
    part = environment_model.section(model, path)
    pointer = environment_model.section_pointer(path)
    if environment_model.within(environment_model.generated_pointers(model), pointer):
        web.header(MASKED_HEADER, "true")
    return shown(part, environment_model.within(secret, pointer))
