"""/releases: what clusters are installed from."""
from nailgun_host import schemas
from nailgun_host.api.base import BaseHandler, get_object_or_404, json_body, set_status
from nailgun_host.db import db
from nailgun_host.db.models import Release
from nailgun_host.objects import release as release_obj


class ReleaseCollectionHandler(BaseHandler):
    def GET(self):
        releases = db.query(Release).all()
        releases.sort(key=release_obj.version_key, reverse=True)
        return [release_obj.to_dict(r) for r in releases]

    def POST(self):
        release = release_obj.create(json_body(schemas.RELEASE_CREATE))
        set_status(201)
        return release_obj.to_dict(release)


class ReleaseHandler(BaseHandler):
    def GET(self, release_id):
        return release_obj.to_dict(get_object_or_404(Release, release_id))

    def PUT(self, release_id):
        release = get_object_or_404(Release, release_id)
        return release_obj.to_dict(release_obj.update(release, json_body(schemas.RELEASE_UPDATE)))

    def DELETE(self, release_id):
        release_obj.delete(get_object_or_404(Release, release_id))
        set_status(204)


class ReleaseDeploymentTasksHandler(BaseHandler):
    def GET(self, release_id):
        return get_object_or_404(Release, release_id).deployment_tasks
