"""The host's face: everything an extension's server code may use of Nailgun, and nothing else.

Extensions import this module (and ``nailgun_platform.public``, ``nailgun_platform.client``), never a
module below it: the import-linter contract ``extensions-import-faces`` says so, and ``__all__`` is the
list. A name an extension needs and Nailgun has goes here; one both extensions need and Nailgun never
had goes to the platform (docs/contributing/where-things-go.md).
"""
from nailgun_host import __version__, errors, policy
from nailgun_host import schemas
from nailgun_host.api import config_sessions
from nailgun_host.api.base import (MASKED_HEADER, BaseHandler, CollectionHandler, ItemHandler, allowed, author,
                                   authorize, authorize_changing_secrets, authorize_declassified, flag_param, id_param,
                                   query, respond_with_task, route, sees_secrets, set_status, shown)
from nailgun_host.api.config_sessions import request_session, session_routes
from nailgun_host.db import Base, JSONType, db, get_or_404, read_rows
from nailgun_host.db.migration import run_env
from nailgun_host.db.models import Cluster, IPAddr, IPAddrRange, NetworkGroup, Node, Release
from nailgun_host.db.sealed import reseal
from nailgun_host.extensions import BaseExtension, BasePipeline, SettingsError
from nailgun_host.objects import attributes as attributes_obj
from nailgun_host.objects import cluster as cluster_obj
from nailgun_host.objects import config_session as config_session_obj
from nailgun_host.objects import network as network_obj
from nailgun_host.objects import node as node_obj
from nailgun_host.objects import nodegroup as nodegroup_obj
from nailgun_host.objects import release as release_obj
from nailgun_host.objects import task as task_obj
from nailgun_host.objects.attributes import attribute_values, merge_dicts, value_secrets
from nailgun_host.objects.release import parse_version
from nailgun_host.objects.roles import validate_roles
from nailgun_host.settings import DEFAULTS, settings
from nailgun_host.validation import ID_SCHEMA, MAX_ID, check_storable, parse_id

__all__ = [
    "__version__",
    # the extension contract
    "BaseExtension", "BasePipeline", "SettingsError",
    # errors that become JSON answers, and the input rules every route follows
    "errors", "ID_SCHEMA", "MAX_ID", "check_storable", "parse_id", "schemas",
    # settings: the host's, and the extensions' declared sections
    "settings", "DEFAULTS",
    # handlers and routes
    "BaseHandler", "CollectionHandler", "ItemHandler", "route", "query", "id_param", "flag_param", "set_status",
    "shown", "MASKED_HEADER", "respond_with_task",
    # who is asking, and what the policy lets them do (the host's rule names: ``policy``)
    "author", "policy", "allowed", "authorize", "sees_secrets", "authorize_changing_secrets", "authorize_declassified",
    # the shared session, the tables, migrations, resealing
    "db", "read_rows", "Base", "JSONType", "get_or_404", "run_env", "reseal",
    "Cluster", "IPAddr", "IPAddrRange", "NetworkGroup", "Node", "Release",
    # core objects: every change of a core object's state goes through them
    "attributes_obj", "cluster_obj", "network_obj", "node_obj", "nodegroup_obj", "release_obj", "task_obj", "attribute_values", "merge_dicts", "value_secrets", "parse_version",
    "validate_roles",
    # configuration sessions: the host service and its routes
    "config_session_obj", "config_sessions", "request_session", "session_routes",
]
