"""The fingerprint seam of ConfigDB's documents: what a GET of a document's URL depends on. ``urls.py``
hands ``DOCUMENTS`` to the document route (``route(..., fingerprint=)``); the platform's cache of answers
(``nailgun_platform.read_cache``) replays a kept answer, or a 304, while ``of`` returns what it returned
when the answer was computed.

A document's answer (values, overrides, effective, with lookup, as of a version, one key) is a
function of its environment (its documents, levels, whether it is linked, and ``created_at`` telling
a re-created one apart), its components and pins, the data sources and versions its URL may name and
what they mark secret, and on a ``nodes`` level of the node the value names (by id or FQDN) and its
cluster. The database counts every change to any of these in ``Generation`` rows (migration cdb009's
triggers): row 0 for what every environment's answers depend on, and a row per environment for the
rest. A URL's fingerprint is the pair (row 0, its environment's row): a write to one environment
leaves every other's answers replayable.

``read`` asks every row in one statement, once per lease whatever the URL (environments on a Fuel
master are few): rows are not filtered by value, as a transaction may commit a generation smaller
than one committed before it.

Anything else an answer depends on must be counted there too, or the cache will replay stale
answers: ``tests/configdb/test_read_cache.py`` compares replayed answers with computed ones after
random writes of every kind.
"""
import functools
import re

import sqlalchemy as sa

from nailgun_host.public import parse_id
from nailgun_ext_configdb.models import EVERY_ENVIRONMENT, Generation

GENERATIONS = sa.select(Generation.__table__.c.environment_id, Generation.__table__.c.generation)
#: the environment a document URL names (the route's pattern has matched it already)
_ENVIRONMENT = re.compile(r"/config/environments/([0-9]+)/")


class DocumentsFingerprint:
    """The ``route(..., fingerprint=)`` of document URLs (``nailgun_platform.read_cache``'s contract)."""

    @staticmethod
    def read(rows):
        """Every generation, by environment id, read with ``rows(statement)``."""
        return dict(rows(GENERATIONS))

    @staticmethod
    def of(generations, path):
        """What the answers of the document URL ``path`` depend on, in ``generations``; None (not replayed)
        without both rows: a missing row tells nothing (a table emptied would bring back a past value)."""
        environment = generations.get(_environment_of(path))
        every = generations.get(EVERY_ENVIRONMENT)
        return (every, environment) if every is not None and environment is not None else None


@functools.lru_cache(maxsize=1024)
def _environment_of(path):
    """The environment id a document URL's path names (remembered, the paths being at most 4 KB: a replayed
    read asks on every request)."""
    found = _ENVIRONMENT.search(path)
    return parse_id(found.group(1)) if found else None


DOCUMENTS = DocumentsFingerprint()
