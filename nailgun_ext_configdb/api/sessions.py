"""Configuration sessions of ConfigDB environments (seed 001): the host's session routes, mounted
under ``/config/environments/<environment_id>``.

An unlinked environment has sessions of its own (scope ``config``); a linked one's are its
cluster's (scope ``cluster``, the same id), so ``/clusters/<id>/...`` and
``/config/environments/<id>/...`` see the same sessions, which may stage the environment model
and the documents together. An unknown environment is 404.
"""
from nailgun_host.public import session_routes
from nailgun_ext_configdb.objects import environment

PREFIX = "/config/environments/<environment_id>"

ROUTES = session_routes(PREFIX, environment.session_scope)
