"""Handlers of /config/components."""
from nailgun_host.api.base import json_body
from nailgun_host.db import db
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigHandler
from nailgun_ext_configdb.objects import component


class ConfigComponentCollectionHandler(ConfigHandler):
    def GET(self):
        return self.respond([component.to_dict(c) for c in component.all_components()])

    def POST(self):
        return self.created(component.to_dict(component.create(json_body(schemas.COMPONENT_CREATE))))


class ConfigComponentHandler(ConfigHandler):
    def GET(self, component_id):
        return self.respond(component.to_dict(component.get(component_id)))

    def PUT(self, component_id):
        found = component.get(component_id)
        return component.to_dict(component.update(found, json_body(schemas.COMPONENT_UPDATE)))

    PATCH = PUT

    def DELETE(self, component_id):
        db.delete(component.get(component_id))
        self.no_content()
