"""Handlers of /config/environments."""
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigCollectionHandler, ConfigItemHandler
from nailgun_ext_configdb.objects import environment


class ConfigEnvironmentCollectionHandler(ConfigCollectionHandler):
    objects = environment
    create_schema = schemas.ENVIRONMENT_CREATE


class ConfigEnvironmentHandler(ConfigItemHandler):
    objects = environment
    update_schema = schemas.ENVIRONMENT_UPDATE
