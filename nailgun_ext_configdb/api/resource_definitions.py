"""Handlers of /config/resource_definitions."""
from nailgun_host.api.base import id_param
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigCollectionHandler, ConfigItemHandler
from nailgun_ext_configdb.objects import resource_definition


class ConfigResourceDefinitionCollectionHandler(ConfigCollectionHandler):
    objects = resource_definition
    create_schema = schemas.RESOURCE_CREATE

    def filters(self):
        return {"component_id": id_param("component_id")}


class ConfigResourceDefinitionHandler(ConfigItemHandler):
    objects = resource_definition
    update_schema = schemas.RESOURCE_UPDATE
