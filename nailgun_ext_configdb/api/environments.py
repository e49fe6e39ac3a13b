"""Handlers of /config/environments."""
from nailgun_host.db import db
from nailgun_ext_configdb import environments, validators
from nailgun_ext_configdb.api.common import ConfigHandler


class ConfigEnvironmentCollectionHandler(ConfigHandler):
    def GET(self):
        return self.respond([environments.to_dict(e) for e in environments.all_environments()])

    def POST(self):
        environment = environments.create(self.json_body(validators.ENVIRONMENT_CREATE))
        return self.created(environments.to_dict(environment))


class ConfigEnvironmentHandler(ConfigHandler):
    def GET(self, environment_id):
        return self.respond(environments.to_dict(environments.get(environment_id)))

    def PUT(self, environment_id):
        environment = environments.get(environment_id, lock=True)
        data = self.json_body(validators.ENVIRONMENT_UPDATE)
        return environments.to_dict(environments.update(environment, data))

    PATCH = PUT

    def DELETE(self, environment_id):
        db.delete(environments.get(environment_id))
        self.no_content()
