"""Handlers of /config/environments/<id>/pins: the version of each data source an environment uses.

``PUT .../pins/<resource>`` with ``{"version": N | "latest", "force": false, "dry_run": false}``
(or ``?dry_run=true``) moves a pin (``objects.pins.move``); it needs ``nailgun:change_secrets`` as a
definition's new content does: the new schema decides what is valid, and which stored values it
rejects tells something about them. A move is not staged in a configuration session.
"""
from nailgun_host.public import author, authorize_changing_secrets, flag_param, policy
from nailgun_ext_configdb import schemas
from nailgun_ext_configdb.api.base import ConfigHandler
from nailgun_ext_configdb.objects import environment, pins


class ConfigPinsHandler(ConfigHandler):
    def GET(self, environment_id):
        return self.respond(pins.to_list(environment.get(environment_id)))


class ConfigPinHandler(ConfigHandler):
    request_schemas = {"PUT": schemas.PIN}
    policy_checks = {"PUT": (policy.CHANGE_SECRETS, policy.ACT_FOR_OTHERS)}

    def GET(self, environment_id, resource):
        env = environment.get(environment_id)
        found = environment.resource(env, resource)
        return self.respond(next((pin for pin in pins.to_list(env) if pin["id"] == found.definition_id),
                                 {"resource": found.name, "id": found.definition_id, "version": found.version,
                                  "latest_version": found.version}))

    def PUT(self, environment_id, resource):
        environment.get(environment_id)  # an unknown environment is 404 whatever the body
        data = self.body()
        authorize_changing_secrets()
        dry_run = data.get("dry_run", False) or flag_param("dry_run")
        return pins.move(environment.get(environment_id, lock=not dry_run), resource, data["version"], author(),
                         force=data.get("force", False), dry_run=dry_run)
