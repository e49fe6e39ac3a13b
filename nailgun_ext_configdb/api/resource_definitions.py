"""Handlers of /config/resource_definitions."""
import sqlalchemy as sa

from nailgun_host.api.base import id_param, json_body
from nailgun_host.db import db
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigHandler
from nailgun_ext_configdb.models import ResourceDefinition
from nailgun_ext_configdb.objects import resource_definition


class ConfigResourceDefinitionCollectionHandler(ConfigHandler):
    def GET(self):
        statement = sa.select(ResourceDefinition).order_by(ResourceDefinition.id)
        component_id = id_param("component_id")
        if component_id is not None:
            statement = statement.filter_by(component_id=component_id)
        return self.respond([resource_definition.to_dict(r) for r in db.scalars(statement)])

    def POST(self):
        data = json_body(schemas.RESOURCE_CREATE)
        return self.created(resource_definition.to_dict(resource_definition.create(data["component_id"], data)))


class ConfigResourceDefinitionHandler(ConfigHandler):
    def GET(self, resource_id):
        return self.respond(resource_definition.to_dict(resource_definition.get(resource_id)))

    def PUT(self, resource_id):
        found = resource_definition.get(resource_id)
        return resource_definition.to_dict(resource_definition.update(found, json_body(schemas.RESOURCE_UPDATE)))

    PATCH = PUT

    def DELETE(self, resource_id):
        db.delete(resource_definition.get(resource_id))
        self.no_content()
