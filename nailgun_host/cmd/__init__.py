"""Console commands, one module each (setup.cfg's console_scripts name them):

- ``nailgun-api`` (``api.serve``) serves the API;
- ``nailgun-syncdb`` (``syncdb.syncdb``) migrates the database;
- ``nailgun-users`` (``users.users``) keeps the users file of local authentication;
- ``nailgun-secrets`` (``secrets.secrets_keys``) keeps the secrets' keys;
- ``nailgun-feed`` (``feed.serve``) serves the change feed's long waits.

Each module's ``build_parser()`` is its command line, which ``man_pages`` turns into the manual pages
(``python -m nailgun_host.cmd.man_pages --output DIR``). What they all do at start is in ``startup``. The
server start-up itself (``nailgun_host.web_server``, ``nailgun_host.wsgi``) stays apart. ``fuel-ext`` runs on a
client: ``nailgun_platform.client.fuel_ext`` (which has a ``build_parser()`` too).
"""
