"""Handlers of /config/components."""
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigCollectionHandler, ConfigItemHandler
from nailgun_ext_configdb.objects import component


class ConfigComponentCollectionHandler(ConfigCollectionHandler):
    objects = component
    create_schema = schemas.COMPONENT_CREATE


class ConfigComponentHandler(ConfigItemHandler):
    objects = component
    update_schema = schemas.COMPONENT_UPDATE
