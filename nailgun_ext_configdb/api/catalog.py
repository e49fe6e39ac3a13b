"""Handlers of /config/components and /config/resource_definitions."""
import sqlalchemy as sa

from nailgun_host.db import db
from nailgun_ext_configdb import catalog, validators
from nailgun_ext_configdb.api.common import ConfigHandler, int_param, query
from nailgun_ext_configdb.models import ResourceDefinition


class ConfigComponentCollectionHandler(ConfigHandler):
    def GET(self):
        return self.respond([catalog.component_to_dict(c) for c in catalog.components()])

    def POST(self):
        component = catalog.create_component(self.json_body(validators.COMPONENT_CREATE))
        return self.created(catalog.component_to_dict(component))


class ConfigComponentHandler(ConfigHandler):
    def GET(self, component_id):
        return self.respond(catalog.component_to_dict(catalog.get_component(component_id)))

    def PUT(self, component_id):
        component = catalog.get_component(component_id)
        data = self.json_body(validators.COMPONENT_UPDATE)
        return catalog.component_to_dict(catalog.update_component(component, data))

    PATCH = PUT

    def DELETE(self, component_id):
        db.delete(catalog.get_component(component_id))
        self.no_content()


class ConfigResourceDefinitionCollectionHandler(ConfigHandler):
    def GET(self):
        statement = sa.select(ResourceDefinition).order_by(ResourceDefinition.id)
        component_id = int_param(query(), "component_id")
        if component_id is not None:
            statement = statement.filter_by(component_id=component_id)
        return self.respond([catalog.resource_to_dict(r) for r in db.scalars(statement)])

    def POST(self):
        data = self.json_body(validators.RESOURCE_CREATE)
        return self.created(catalog.resource_to_dict(catalog.create_resource(data["component_id"], data)))


class ConfigResourceDefinitionHandler(ConfigHandler):
    def GET(self, resource_id):
        return self.respond(catalog.resource_to_dict(catalog.get_resource(resource_id)))

    def PUT(self, resource_id):
        resource = catalog.get_resource(resource_id)
        data = self.json_body(validators.RESOURCE_UPDATE)
        return catalog.resource_to_dict(catalog.update_resource(resource, data))

    PATCH = PUT

    def DELETE(self, resource_id):
        db.delete(catalog.get_resource(resource_id))
        self.no_content()
