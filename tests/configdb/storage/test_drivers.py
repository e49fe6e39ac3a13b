"""The conformance suite, run against every registered storage driver."""
import pytest

from nailgun_host.db import db
from nailgun_host.settings import settings
from nailgun_ext_configdb import storage
from tests.configdb.storage.conformance import DefinitionsConformance, DocumentsConformance, registered


def test_both_shipped_drivers_are_registered():
    assert {"sql", "git"} <= set(registered())


@pytest.fixture(params=registered())
def driver(request, migrated_db, db_url, tmp_path):
    settings.reload(overrides={"DATABASE_URL": db_url,
                               "CONFIGDB": {"storage": request.param, "git_root": str(tmp_path / "git")}})
    yield storage.driver()
    db.remove()


class TestDefinitions(DefinitionsConformance):
    pass


class TestDocuments(DocumentsConformance):
    pass


def test_an_unknown_driver_is_a_clear_503(migrated_db, db_url):
    from nailgun_host import errors

    settings.reload(overrides={"DATABASE_URL": db_url, "CONFIGDB": {"storage": "nosuch"}})
    with pytest.raises(errors.ServiceUnavailable, match="nosuch"):
        storage.driver()
