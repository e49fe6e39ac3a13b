"""A small, faithful re-creation of the Nailgun host that Fuel extensions plug into.

Extensions talk to the host only through the public names of this package:
the extension contract (``nailgun_host.extensions``), the shared session
(``nailgun_host.db``), the core objects (``nailgun_host.objects``), the
errors (``nailgun_host.errors``) and the validators (``nailgun_host.validators``).
"""

__version__ = "1.0.0"
