"""Handlers of /config/environments."""
from nailgun_host.api.base import json_body
from nailgun_host.db import db
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigHandler
from nailgun_ext_configdb.objects import environment


class ConfigEnvironmentCollectionHandler(ConfigHandler):
    def GET(self):
        return self.respond([environment.to_dict(e) for e in environment.all_environments()])

    def POST(self):
        return self.created(environment.to_dict(environment.create(json_body(schemas.ENVIRONMENT_CREATE))))


class ConfigEnvironmentHandler(ConfigHandler):
    def GET(self, environment_id):
        return self.respond(environment.to_dict(environment.get(environment_id)))

    def PUT(self, environment_id):
        found = environment.get(environment_id, lock=True)
        return environment.to_dict(environment.update(found, json_body(schemas.ENVIRONMENT_UPDATE)))

    PATCH = PUT

    def DELETE(self, environment_id):
        db.delete(environment.get(environment_id))
        self.no_content()
