"""Handlers of /config/resource_definitions: versioned definitions (``objects.resource_definition``).

``?name=``, ``?version=`` (with a name: 404 when there is no such version) and ``?only_latest=``
select versions; every answer says a definition's ``version`` and whether it is the ``latest``.
"""
from nailgun_host.public import authorize_changing_secrets, errors, flag_param, id_param, policy, query, set_status
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigCollectionHandler, ConfigItemHandler
from nailgun_ext_configdb.api.patch_rights import BYPASS_PATCH_POLICY, authorize_bypassing_patch_policy
from nailgun_ext_configdb.objects import resource_definition


def authorize_content_change(definition, data):
    """403 naming ``nailgun:change_secrets`` unless the identity may change ``definition``'s content, if
    ``data`` changes it: its schema says what is secret (removing a marker would show the stored
    values in clear) and constrains the secret values (a new ``pattern`` would tell whether a guess fits).
    Creating a first version needs ``nailgun:write`` only: no value is stored for it yet."""
    if "content" in data and resource_definition.content_changes(definition, data["content"]):
        authorize_changing_secrets()


def _name_param():
    name = query().get("name")
    if name is not None and not (0 < len(name) <= 255 and "\x00" not in name):
        raise errors.InvalidData("The query parameter name must be a resource name (1 to 255 characters)")
    return name


class ConfigResourceDefinitionCollectionHandler(ConfigCollectionHandler):
    """Creating a definition whose name its component has makes the next version (which, like new
    content, also needs ``nailgun:change_secrets``), unless the latest has that content."""

    objects = resource_definition
    create_schema = schemas.RESOURCE_CREATE
    policy_checks = {"POST": (policy.CHANGE_SECRETS,)}

    def filters(self):
        found = {"component_id": id_param("component_id"), "name": _name_param(), "version": id_param("version"),
                 "only_latest": flag_param("only_latest")}
        if found["version"] is not None and found["name"] is None:
            raise errors.InvalidData("The query parameter version selects a version of a name: give name too")
        if found["version"] is not None and found["only_latest"]:
            raise errors.InvalidData("Give the query parameter version or only_latest, not both")
        return found

    def POST(self):
        """201 with the new version; 200 with the latest when it has this content already (nothing made)."""
        definition, made = self.objects.create(self.body(), on_new_version=authorize_changing_secrets)
        if made:
            set_status(201)
        return self.objects.to_dict(definition)


class ConfigResourceDefinitionHandler(ConfigItemHandler):
    """One version. New content makes a new version (answered, 200); renaming or moving renames or moves
    every version; DELETE deletes this version (409 while an environment uses it and others live)."""

    objects = resource_definition
    update_schema = schemas.RESOURCE_UPDATE
    policy_checks = {"PUT": (policy.CHANGE_SECRETS,), "PATCH": (policy.CHANGE_SECRETS,),
                     "DELETE": (policy.CHANGE_SECRETS, BYPASS_PATCH_POLICY)}

    def PUT(self, object_id):
        found = self.objects.get(object_id, lock=True)
        data = self.body()
        authorize_content_change(found, data)
        return self.objects.to_dict(self.objects.update(found, data))

    PATCH = PUT

    def DELETE(self, object_id):
        """Deleting a version while others live may take a secret marker away (a leaf is secret while any
        live version marks it): that needs ``nailgun:change_secrets`` too. Deleting one whose content has a
        patch policy (which may be the last live version: its documents go with it) needs
        ``nailgun:bypass_patch_policy``."""
        found = self.objects.get(object_id, lock=True)
        if self.objects.has_other_versions(found):
            authorize_changing_secrets()
        if self.objects.has_patch_policy(found):
            authorize_bypassing_patch_policy()
        self.objects.delete(found)
        set_status(204)
