"""The API's own description: where to start, version and loaded extensions."""
import web

import nailgun_host
from nailgun_host import openapi, policy
from nailgun_host.api.base import BaseHandler, identity
from nailgun_host.db import get_engine, migration, sealed
from nailgun_host.extensions import get_all_extensions
from nailgun_host.settings import settings

#: the core collections a client starts from, relative to the API root
COLLECTIONS = ("releases", "clusters", "nodes", "nodegroups", "tasks")


class APIRootHandler(BaseHandler):
    """What ``nailgun-api`` prints as its address answers: where to go from here."""

    def GET(self):
        return {"name": "Nailgun API (fuel-nailgun-extensions)", "version": nailgun_host.__version__,
                "links": {name: "/api/v1/{0}/".format(name) for name in COLLECTIONS + ("version", "extensions")},
                "extensions": [extension.to_dict() for extension in get_all_extensions()]}


class VersionHandler(BaseHandler):
    """Public: fuel2 reads ``auth_required`` here before it logs in."""

    public = True

    def GET(self):
        return {"release": "9.0", "api": "1", "openstack_version": "mitaka-9.0",
                "feature_groups": list(settings["FEATURE_GROUPS"]),
                "auth_required": settings["AUTH"]["method"] != "none",
                "nailgun_host": nailgun_host.__version__}


class ExtensionListHandler(BaseHandler):
    def GET(self):
        return [extension.to_dict() for extension in get_all_extensions()]


class OpenAPIHandler(BaseHandler):
    """The OpenAPI 3.1 description of every route the application serves (``nailgun_host.openapi``)."""

    def GET(self):
        return openapi.describe(web.ctx.nailgun_routes, get_all_extensions())


class HealthHandler(BaseHandler):
    """Public, for load balancers and monitoring: can this server answer database routes?

    200 with each part's revision when the database answers, the core and every extension
    are at their head and the secrets' keys open the database's; 503 (with ``Retry-After``)
    naming what is wrong otherwise.
    """

    public = True

    def GET(self):
        fault, state = migration.check_database(get_engine())
        if fault is None:
            fault = sealed.keys_fault(get_engine())
        if fault is not None:
            raise fault
        return {"status": "ok", "database": get_engine().dialect.name,
                "migrations": {name: part["current"] for name, part in state.items()}}


class IdentityHandler(BaseHandler):
    """Who the request's identity is and which rules of the policy in force let it through: the console offers
    only what they allow (the server still decides on every request)."""

    def GET(self):
        found = identity()
        return {"name": found.name, "roles": list(found.roles), "authenticated": found.authenticated,
                "project": found.project_name, "auth_method": settings["AUTH"]["method"],
                "rules": {rule.name: policy.allowed(rule.name, found) for rule in policy.rules_in_code()}}
