"""What the platform needs of whoever runs it, handed in once: the platform imports no host.

The host hands in its settings mapping (``nailgun_host.settings`` at import), its request
session and its engine (``nailgun_host.db`` at import). Platform modules read them here, at
call time, so a test that swaps the host's settings or engine is seen at once.
"""
#: the settings mapping (sections such as ``PATCH``, ``FEED``, ``READ_CACHE``, ``SECRETS``); the host's
#: also answers ``sqlite_file``
settings = {}
#: the request's database session (a SQLAlchemy scoped session)
session = None
#: a callable answering the current SQLAlchemy engine
engine = None


def provide(**given):
    """Hand in ``settings``, ``session`` or ``engine`` (only the names this module declares)."""
    unknown = set(given) - {"settings", "session", "engine"}
    if unknown:
        raise TypeError("the platform takes no {0}".format(", ".join(sorted(unknown))))
    globals().update(given)
