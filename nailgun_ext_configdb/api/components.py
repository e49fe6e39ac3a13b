"""Handlers of /config/components."""
from nailgun_host.public import authorize_changing_secrets, policy
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigCollectionHandler, ConfigItemHandler
from nailgun_ext_configdb.api.resource_definitions import authorize_content_change
from nailgun_ext_configdb.objects import component, resource_definition


class ConfigComponentCollectionHandler(ConfigCollectionHandler):
    objects = component
    create_schema = schemas.COMPONENT_CREATE


class ConfigComponentHandler(ConfigItemHandler):
    """A component; changing the content of one of its listed definitions, or listing a new version of one
    by name, also needs ``nailgun:change_secrets``."""

    objects = component
    update_schema = schemas.COMPONENT_UPDATE
    policy_checks = {"PUT": (policy.CHANGE_SECRETS,), "PATCH": (policy.CHANGE_SECRETS,)}

    def PUT(self, object_id):
        found = self.objects.get(object_id, lock=True)
        data = self.body()
        for item in data.get("resource_definitions", []):
            if "id" in item:
                authorize_content_change(resource_definition.get(item["id"]), item)
        return self.objects.to_dict(self.objects.update(found, data, on_new_version=authorize_changing_secrets))

    PATCH = PUT
