"""One conformance suite for every ConfigDB storage driver (Tuskar's mixin pattern, seed 004).

``DefinitionsConformance`` and ``DocumentsConformance`` hold the tests; ``test_drivers.py`` runs them
against every driver registered in the ``nailgun_configdb.storage`` group, through the stores a
handler uses (``objects.resource_definition``, ``objects.document``) and the driver itself.
"""
import concurrent.futures
import threading

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings as hypothesis_settings, strategies as st

from nailgun_host import errors
from nailgun_host.db import db
from nailgun_ext_configdb import storage
from nailgun_ext_configdb.models import Environment
from nailgun_ext_configdb.objects import component, document, environment, json_values

JSON_LEAVES = (st.none() | st.booleans() | st.integers(-2 ** 62, 2 ** 62)
               | st.floats(allow_nan=False, allow_infinity=False, width=64)
               | st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=20)
               | st.sampled_from(["yes", "no", "on", "~", "null", "0x1F", "1e3", "2020-01-02", "012", "- a",
                                  "a: b", "'", '"', "#", "&x", "*y", "!tag", "%", "@", "`", "\t", " x ", "\u2028"]))
#: keys any document may have: no NUL, and not the key that marks a sealed secret (both refused with a 400)
JSON_KEYS = st.text(max_size=8).filter(lambda k: "\x00" not in k and k != "$fernet")
JSON_DOCUMENTS = st.dictionaries(JSON_KEYS, st.recursive(
    JSON_LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_KEYS, inner, max_size=3),
    max_leaves=12), max_size=5)


def _create(driver, component_id, name, content):
    """What the store does: the next version after the first, locked (version 1 when there is none)."""
    return driver.create(component_id, name, content, driver.first_version(component_id, name, lock=True))


def _component(name="c"):
    return component.create({"name": name}).id


class DefinitionsConformance:
    """``create/retrieve/update/delete/list`` and ``retrieve_by_name`` of versioned definitions."""

    def test_create_retrieve_list(self, driver):
        comp = _component()
        first = _create(driver, comp, "astute", {"a": 1})
        second = _create(driver, comp, "astute", {"a": 2})
        other = _create(driver, comp, "globals", {})
        assert (first.version, second.version, other.version) == (1, 2, 1)
        assert second.lineage_id == first.lineage_id == first.id and other.lineage_id == other.id
        assert driver.retrieve(second.id).content == {"a": 2}
        assert [d.id for d in driver.list(component_id=comp)] == [first.id, second.id, other.id]
        assert [d.id for d in driver.list(component_id=comp, only_latest=True)] == [second.id, other.id]
        assert [d.id for d in driver.list(name="astute")] == [first.id, second.id]
        assert [d.id for d in driver.versions(first.lineage_id)] == [first.id, second.id]

    def test_retrieve_by_name_with_and_without_version(self, driver):
        comp = _component()
        first = _create(driver, comp, "astute", {"v": 1})
        second = _create(driver, comp, "astute", {"v": 2})
        assert driver.retrieve_by_name(comp, "astute").id == second.id
        assert driver.retrieve_by_name(comp, "astute", version=1).id == first.id
        assert driver.retrieve_by_name(comp, "astute", version=2).content == {"v": 2}

    @pytest.mark.parametrize("call", [
        lambda d, comp: d.retrieve(999),
        lambda d, comp: d.retrieve_by_name(comp, "nothing"),
        lambda d, comp: d.retrieve_by_name(comp, "astute", version=3),
    ])
    def test_unknown_id_name_or_version_is_not_found(self, driver, call):
        comp = _component()
        _create(driver, comp, "astute", {})
        _create(driver, comp, "astute", {})
        with pytest.raises(errors.ObjectNotFound):
            call(driver, comp)

    def test_versions_are_never_reused_after_a_delete(self, driver):
        comp = _component()
        _create(driver, comp, "astute", {})
        second = _create(driver, comp, "astute", {})
        driver.delete(second)
        with pytest.raises(errors.ObjectNotFound):
            driver.retrieve(second.id)
        assert _create(driver, comp, "astute", {}).version == 3
        for definition in driver.versions(second.lineage_id):
            driver.delete(definition)
        assert driver.versions(second.lineage_id) == [] and driver.list(name="astute") == []
        assert _create(driver, comp, "astute", {}).version == 4

    def test_update_renames_and_moves_every_version(self, driver):
        comp, other = _component("a"), _component("b")
        first = _create(driver, comp, "astute", {})
        _create(driver, comp, "astute", {})
        _create(driver, other, "globals", {})
        renamed = driver.rename(first, "facts", other)
        assert {(d.name, d.component_id) for d in driver.versions(first.lineage_id)} == {("facts", other)}
        assert renamed.id == first.id
        with pytest.raises(errors.AlreadyExists):
            driver.rename(renamed, "globals", other)

    def test_concurrent_creates_of_one_name_give_versions_or_a_409_never_a_duplicate(self, driver, db_url):
        comp = _component()
        _create(driver, comp, "astute", {})
        db.commit()
        writers = 6
        barrier = threading.Barrier(writers)

        def create(index):
            try:
                barrier.wait()
                found = _create(driver, comp, "astute" if index % 2 else "fresh", {"i": index})
                db.commit()
                return found.name, found.version
            except errors.Conflict:
                db.rollback()
                return None
            finally:
                db.remove()

        with concurrent.futures.ThreadPoolExecutor(writers) as pool:
            made = [found for found in pool.map(create, range(writers)) if found is not None]
        assert len(made) == len(set(made)) >= 2  # one winner per name at least, never a number twice
        stored = db.execute(sa.text("SELECT name, version FROM configdb_resource_definitions")).all()
        assert len(stored) == len(set(stored)) == len(made) + 1
        assert {version for name, version in stored if name == "fresh"} <= {1, 2, 3}

    def test_a_new_name_taken_after_it_was_looked_up_is_a_conflict_not_its_version_2(self, driver, db_url):
        """The store decides on what it saw (no version yet: make version 1); a creation committed
        meanwhile must fail that one, not turn it into a version 2 nobody decided on."""
        if not db_url.startswith("postgresql"):
            pytest.skip("SQLite runs one writing transaction at a time (BEGIN IMMEDIATE): nothing commits meanwhile")
        comp = _component()
        db.commit()
        seen = driver.first_version(comp, "astute", lock=True)

        def meanwhile():
            try:
                _create(driver, comp, "astute", {"by": "other"})
                db.commit()
            finally:
                db.remove()

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(meanwhile).result()
        assert seen is None
        with pytest.raises(errors.Conflict):
            driver.create(comp, "astute", {"by": "me"}, seen)
        db.rollback()
        assert [(d.version, d.content) for d in driver.list(name="astute")] == [(1, {"by": "other"})]


class DocumentsConformance:
    """What the stores do with a driver's documents: every version kept and read back exactly."""

    @staticmethod
    def _environment():
        comp = component.create({"name": "docs", "resource_definitions": [{"name": "astute"}]})
        env = environment.create({"components": [comp.id], "hierarchy_levels": ["nodes"]})
        return env, environment.resource(env, "astute")

    def test_every_version_reads_back_and_history_and_revert_work(self, driver):
        env, resource = self._environment()
        for number in range(1, 4):
            document.write(env, resource, "nodes/1", "values", {"n": number, "s": "v{0}".format(number)}, "me")
        db.commit()
        db.expire_all()
        found = document.find(env.id, resource.id, "nodes/1", "values")
        assert found.data == {"n": 3, "s": "v3"} and found.version == 3
        assert [row.version for row in document.history(found)] == [1, 2, 3]
        assert document.version(found, 1).data == {"n": 1, "s": "v1"}
        document.write(env, resource, "nodes/1", "values", document.version(found, 1).data, "reverter")
        db.commit()
        db.expire_all()
        reverted = document.find(env.id, resource.id, "nodes/1", "values")
        assert (reverted.data, reverted.version) == ({"n": 1, "s": "v1"}, 4)
        assert [row.author for row in document.history(reverted)] == ["me", "me", "me", "reverter"]
        as_of = document.data_as_of([reverted], document.version(reverted, 2).revision)
        assert as_of == {reverted.id: {"n": 2, "s": "v2"}}

    def test_a_rolled_back_write_leaves_nothing(self, driver):
        env, resource = self._environment()
        document.write(env, resource, "", "values", {"kept": True}, "me")
        db.commit()
        document.write(env, resource, "", "values", {"kept": False}, "me")
        db.rollback()
        db.expire_all()
        assert document.find(env.id, resource.id, "", "values").data == {"kept": True}
        document.write(db.get(Environment, env.id), resource, "", "values", {"next": 1}, "me")
        db.commit()
        assert document.find(env.id, resource.id, "", "values").version == 2

    def test_deleted_documents_are_gone_and_others_stay(self, driver):
        env, resource = self._environment()
        document.write(env, resource, "nodes/1", "values", {"a": 1}, "me")
        document.write(env, resource, "nodes/2", "values", {"b": 1}, "me")
        document.write(env, resource, "nodes/1", "overrides", {"c": 1}, "me")
        document.delete_at(env.id, ["nodes/1"])
        db.commit()
        db.expire_all()
        assert document.find(env.id, resource.id, "nodes/1", "values") is None
        assert document.find(env.id, resource.id, "nodes/1", "overrides") is None
        assert document.find(env.id, resource.id, "nodes/2", "values").data == {"b": 1}

    @hypothesis_settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
    @given(data=JSON_DOCUMENTS)
    def test_any_json_document_reads_back_exactly(self, driver, data):
        env = db.scalars(sa.select(Environment)).first()
        if env is None:
            env, resource = self._environment()
        else:
            resource = environment.resource(env, "astute")
        document.write(env, resource, "", "values", data, "me")
        db.commit()
        db.expire_all()
        found = document.find(env.id, resource.id, "", "values")
        assert _typed(found.data) == _typed(json_values.stored_form(data))  # what every database gives back


def _typed(value):
    """``value`` with every leaf's type beside it, so ``1 == 1.0 == True`` cannot hide a changed type."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    return type(value).__name__, value


def registered():
    from stevedore import ExtensionManager
    return sorted(ExtensionManager(storage.NAMESPACE).names())
