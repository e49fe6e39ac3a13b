"""WSGI entry point of the production recipe: ``waitress-serve ... nailgun_host.wsgi:application`` (docs/operator/production.md).

The database comes from ``NAILGUN_DB_URL`` (or the ``NAILGUN_CONFIG`` file). Workers do
not migrate: run ``nailgun-syncdb`` once before starting them. Each process logs as ``LOG`` says
and adds its request counts to the database every ``STATS.flush_seconds``. With ``AUTH.method``
``none`` it logs one WARNING as it starts: the application serves loopback clients only
(``nailgun_host.auth.middleware``), whatever the server listens on.
"""
from nailgun_host import db, request_log, stats
from nailgun_host.app import build_wsgi, settle
from nailgun_host.auth import middleware
from nailgun_host.settings import settings

settings.reload()
request_log.configure(settings["LOG"])
middleware.warn_at_start(settings["AUTH"])
db.configure(settings.database_url)
application = build_wsgi()
settle()
stats.start_flushing(settings["STATS"]["flush_seconds"])
