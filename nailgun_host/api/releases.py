"""/releases: what clusters are installed from."""
from nailgun_host import errors
from nailgun_host.api.base import BaseHandler, set_status
from nailgun_host.db import db
from nailgun_host.db.models import Cluster, Release
from nailgun_host.objects import release as release_obj

_METADATA = {key: {"type": "object"} for key in (
    "modes_metadata", "roles_metadata", "attributes_metadata", "networks_metadata")}
_METADATA.update({key: {"type": "array"} for key in (
    "network_roles_metadata", "components_metadata", "deployment_tasks")})
_METADATA["extensions"] = {"type": "array", "items": {"type": "string"}}

RELEASE_SCHEMA = {
    "type": "object",
    "properties": dict({
        "name": {"type": "string", "minLength": 1, "maxLength": 100},
        "version": {"type": "string", "minLength": 1, "maxLength": 30},
        "description": {"type": ["string", "null"]},
        "operating_system": {"type": "string", "minLength": 1, "maxLength": 50},
        "state": {"enum": list(release_obj.STATES)},
    }, **_METADATA),
}
CREATE_SCHEMA = dict(RELEASE_SCHEMA, required=["name", "version", "operating_system"])


def _check_unique(name, version, exclude_id=None):
    query = db.query(Release.id).filter_by(name=name, version=version)
    if exclude_id:
        query = query.filter(Release.id != exclude_id)
    if query.first():
        raise errors.AlreadyExists("Release with name '{0}' and version '{1}' already exists".format(name, version))


class ReleaseCollectionHandler(BaseHandler):
    def GET(self):
        releases = db.query(Release).all()
        releases.sort(key=release_obj.version_key, reverse=True)
        return [release_obj.to_dict(r) for r in releases]

    def POST(self):
        data = self.json_body(CREATE_SCHEMA)
        _check_unique(data["name"], data["version"])
        release = release_obj.create(data)
        set_status(201)
        return release_obj.to_dict(release)


class ReleaseHandler(BaseHandler):
    def GET(self, release_id):
        return release_obj.to_dict(self.get_object_or_404(Release, release_id))

    def PUT(self, release_id):
        release = self.get_object_or_404(Release, release_id)
        data = self.json_body(RELEASE_SCHEMA)
        _check_unique(data.get("name", release.name), data.get("version", release.version), release.id)
        return release_obj.to_dict(release_obj.update(release, data))

    def DELETE(self, release_id):
        release = self.get_object_or_404(Release, release_id)
        if db.query(Cluster.id).filter_by(release_id=release.id).first():
            raise errors.InvalidData("Can't delete release with clusters assigned")
        db.delete(release)
        set_status(204)


class ReleaseDeploymentTasksHandler(BaseHandler):
    def GET(self, release_id):
        return self.get_object_or_404(Release, release_id).deployment_tasks
