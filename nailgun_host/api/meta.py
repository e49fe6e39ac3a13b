"""The API's own description: version and loaded extensions."""
import nailgun_host
from nailgun_host.api.base import BaseHandler
from nailgun_host.extensions import get_all_extensions
from nailgun_host.settings import settings


class VersionHandler(BaseHandler):
    def GET(self):
        return {"release": "9.0", "api": "1", "openstack_version": "mitaka-9.0",
                "feature_groups": list(settings["FEATURE_GROUPS"]),
                "auth_required": bool(settings["AUTH"].get("enabled")),
                "nailgun_host": nailgun_host.__version__}


class ExtensionListHandler(BaseHandler):
    def GET(self):
        return [extension.to_dict() for extension in get_all_extensions()]
