"""/releases: what clusters are installed from."""
from nailgun_host import policy, schemas
from nailgun_host.api.base import BaseHandler, CollectionHandler, ItemHandler, authorize_declassified, shown
from nailgun_host.objects import release as release_obj


def shown_release(release):
    """A release's answer: the editable defaults of password fields masked for whoever may not see secrets."""
    return shown(release_obj.to_dict(release), release_obj.secret_pointers(release))


class ReleaseCollectionHandler(CollectionHandler):
    objects = release_obj
    create_schema = schemas.RELEASE_CREATE
    policy_checks = {"GET": (policy.READ_SECRETS,), "POST": (policy.READ_SECRETS,)}

    def GET(self):
        return [shown_release(release) for release in release_obj.list_all()]

    def POST(self):
        answer = super().POST()
        return shown_release(release_obj.get(answer["id"]))


class ReleaseHandler(ItemHandler):
    objects = release_obj
    update_schema = schemas.RELEASE_UPDATE
    policy_checks = {"GET": (policy.READ_SECRETS,), "PUT": (policy.CHANGE_SECRETS, policy.READ_SECRETS)}

    def GET(self, release_id):
        return shown_release(release_obj.get(release_id))

    def PUT(self, release_id):
        found = release_obj.get(release_id, lock=True)
        return shown_release(release_obj.update(found, self.body(), authorize_declassified=authorize_declassified))


class ReleaseDeploymentTasksHandler(BaseHandler):
    def GET(self, release_id):
        return release_obj.get(release_id).deployment_tasks
