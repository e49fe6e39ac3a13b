"""A small, faithful re-creation of the Nailgun host that Fuel extensions plug into.

Extensions talk to the host only through the public names of this package: the
extension contract (``nailgun_host.extensions``), the shared session and the tables
(``nailgun_host.db``, ``nailgun_host.db.models``), the core objects
(``nailgun_host.objects``), the errors (``nailgun_host.errors``), the input rules
(``nailgun_host.validation``), the handler base and URL routes (``nailgun_host.api.base``),
the settings (``nailgun_host.settings``) and, client side, ``nailgun_platform.client``.
Which of them each extension uses is written in setup.cfg's import-linter contracts.
"""
from importlib import metadata

#: the distribution's version, written once in setup.cfg
__version__ = metadata.version("fuel-nailgun-extensions")
