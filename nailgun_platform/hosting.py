"""What the platform needs of whoever runs it, handed in once: the platform imports no host.

The host hands in its settings mapping (``nailgun_host.settings`` at import), its request
session and its engine (``nailgun_host.db`` at import), and where the key manager's key objects are named
(``nailgun_host.db.managed_keys`` at import). Platform modules read them here, at
call time, so a test that swaps the host's settings or engine is seen at once.
"""
#: the settings mapping (sections such as ``PATCH``, ``FEED``, ``READ_CACHE``, ``SECRETS``); the host's
#: also answers ``sqlite_file``
settings = {}
#: the request's database session (a SQLAlchemy scoped session)
session = None
#: a callable answering the current SQLAlchemy engine
engine = None
#: a callable answering ``{number: object id}``, the key manager's objects holding the secrets' keys
#: (``SECRETS.key_manager: castellan``; ``nailgun_host.db.managed_keys``)
key_refs = None


def provide(**given):
    """Hand in ``settings``, ``session``, ``engine`` or ``key_refs`` (only the names this module declares)."""
    unknown = set(given) - {"settings", "session", "engine", "key_refs"}
    if unknown:
        raise TypeError("the platform takes no {0}".format(", ".join(sorted(unknown))))
    globals().update(given)
