"""WSGI entry point of the production recipe: ``waitress-serve ... nailgun_host.wsgi:application`` (README).

The database comes from ``NAILGUN_DB_URL`` (or the ``NAILGUN_CONFIG`` file). Workers do
not migrate: run ``nailgun-syncdb`` once before starting them.
"""
from nailgun_host import db
from nailgun_host.app import build_wsgi, settle
from nailgun_host.settings import settings

db.configure(settings.reload().database_url)
application = build_wsgi()
settle()
