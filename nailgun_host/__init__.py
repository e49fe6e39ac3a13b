"""A small, faithful re-creation of the Nailgun host that Fuel extensions plug into.

What Nailgun has lives here: the extension contract and its loader (``extensions``), the web.py
application (``app``, ``api``, ``urls``), the database (``db``), the core objects (``objects``),
authentication, policy, statistics, the request log, settings and validation, the console commands
(``cmd``) and the server start-up (``web_server``, ``wsgi``). What the extensions share and Nailgun
never had is the platform beneath it (``nailgun_platform``). Extensions import only the faces:
``nailgun_host.public``, ``nailgun_platform.public`` and, client side, ``nailgun_platform.client``
(setup.cfg's import-linter contracts; docs/contributing/where-things-go.md says where a new line goes).
"""
from importlib import metadata

#: the distribution's version, written once in setup.cfg
__version__ = metadata.version("fuel-nailgun-extensions")
