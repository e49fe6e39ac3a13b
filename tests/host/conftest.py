import importlib
import os
import sys

import pytest
import webtest

from nailgun_host.extensions import set_extensions
from tests.conftest import LOOPBACK

TOY_DIR = os.path.join(os.path.dirname(__file__), "toy")


@pytest.fixture
def toy_extensions():
    """Toy extension distributions (one broken at import) found by stevedore for real."""
    sys.path.insert(0, TOY_DIR)
    importlib.invalidate_caches()
    set_extensions(None)
    import toy_ext

    del toy_ext.EVENTS[:]
    yield toy_ext.EVENTS
    sys.path.remove(TOY_DIR)
    set_extensions(None)


@pytest.fixture
def toy_app(toy_extensions, migrated_db, env):
    from nailgun_host.app import build_wsgi

    return webtest.TestApp(build_wsgi(), extra_environ=LOOPBACK)
