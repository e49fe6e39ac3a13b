"""How schemas that users write (ConfigDB resource definitions) are read, by validation and by
``secrets.classify`` alike: references resolve inside the schema only (nothing is ever fetched),
and ``pattern``/``patternProperties`` run in RE2, whose linear time lets no pattern hold a worker.
"""
import functools

import re2
import referencing
import referencing.exceptions

_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False


def _refuse_retrieval(uri):
    raise referencing.exceptions.NoSuchResource(ref=uri)


#: every user schema is resolved in this registry: it never retrieves anything
REGISTRY = referencing.Registry(retrieve=_refuse_retrieval)


@functools.lru_cache(maxsize=1024)
def compiled_pattern(pattern):
    """The RE2 program of ``pattern``; ``re2.error`` when RE2 cannot run it."""
    return re2.compile(pattern, options=_RE2_OPTIONS)
