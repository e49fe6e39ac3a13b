"""/releases: what clusters are installed from."""
from nailgun_host import schemas
from nailgun_host.api.base import BaseHandler, CollectionHandler, ItemHandler
from nailgun_host.objects import release as release_obj


class ReleaseCollectionHandler(CollectionHandler):
    objects = release_obj
    create_schema = schemas.RELEASE_CREATE


class ReleaseHandler(ItemHandler):
    objects = release_obj
    update_schema = schemas.RELEASE_UPDATE


class ReleaseDeploymentTasksHandler(BaseHandler):
    def GET(self, release_id):
        return release_obj.get(release_id).deployment_tasks
