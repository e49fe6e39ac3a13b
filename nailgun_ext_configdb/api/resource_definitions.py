"""Handlers of /config/resource_definitions."""
from nailgun_host.api.base import authorize_changing_secrets, id_param
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigCollectionHandler, ConfigItemHandler
from nailgun_ext_configdb.objects import resource_definition


def authorize_content_change(resource, data):
    """403 naming ``nailgun:change_secrets`` unless the identity may change ``resource``'s content, if
    ``data`` changes it: its schema says what is secret (removing a marker would show the stored
    values in clear) and constrains the secret values (a new ``pattern`` would tell whether a guess fits).
    Creating a definition needs ``nailgun:write`` only: no value is stored for it yet."""
    if "content" in data and resource_definition.content_changes(resource, data["content"]):
        authorize_changing_secrets()


class ConfigResourceDefinitionCollectionHandler(ConfigCollectionHandler):
    objects = resource_definition
    create_schema = schemas.RESOURCE_CREATE

    def filters(self):
        return {"component_id": id_param("component_id")}


class ConfigResourceDefinitionHandler(ConfigItemHandler):
    """A resource definition; changing its content also needs ``nailgun:change_secrets``."""

    objects = resource_definition
    update_schema = schemas.RESOURCE_UPDATE

    def PUT(self, object_id):
        found = self.objects.get(object_id, lock=True)
        data = self.body()
        authorize_content_change(found, data)
        return self.objects.to_dict(self.objects.update(found, data))

    PATCH = PUT
