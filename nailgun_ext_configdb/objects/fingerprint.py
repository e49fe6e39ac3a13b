"""The fingerprint seam of ConfigDB's documents: what every GET of a document's URL depends on, read in
one statement of one row. ``urls.py`` hands ``of_documents`` to the document route
(``route(..., fingerprint=)``); the platform's cache of answers (``nailgun_platform.read_cache``) replays
a kept answer, or a 304, while it returns what it returned when the answer was computed.

A document's answer (values, overrides, effective, with lookup, as of a version, one key) is a
function of the environment (its documents, levels, whether it is linked, and ``created_at``
telling a re-created one apart), of the data sources and versions its URL may name and what they
mark secret, and on a ``nodes`` level of the node the value names (by id or FQDN) and its cluster.
The database counts every change to any of these in ``StateGeneration`` (migration cdb007's
triggers): one number for every URL, so a worker may trust what it read for a moment, whatever
the URL (``READ_CACHE.lease_ms``).

Anything else an answer depends on must be counted there too, or the cache will replay stale
answers: ``tests/configdb/test_read_cache.py`` compares replayed answers with computed ones after
random writes of every kind.
"""
import sqlalchemy as sa

from nailgun_ext_configdb.models import StateGeneration

GENERATION = sa.select(StateGeneration.__table__.c.generation).where(StateGeneration.__table__.c.id == 1)


def of_documents(first):
    """The generation every document URL's answers depend on, read with ``first(statement)``."""
    return first(GENERATION)
