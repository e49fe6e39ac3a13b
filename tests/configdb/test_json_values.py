"""Values compare as JSON, types included; diff and history stay bounded (issue 9, items 3 and 9)."""
import json
import re

import jsonpatch
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from nailgun_platform.public import type_strict_equal
from nailgun_ext_configdb.objects import document, json_values, merge
from nailgun_ext_configdb.objects import secrets as configdb_secrets
from nailgun_ext_configdb.objects.json_values import diff, stored_form
from tests.configdb.conftest import API

#: JSON values as decoded from a body; -0.0 is left out because PostgreSQL stores it as 0
SCALARS = (st.none() | st.booleans() | st.integers(-2 ** 53, 2 ** 53)
           | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: f != 0 or str(f) == "0.0")
           | st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=5))
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.sampled_from("abcd"), inner, max_size=4), max_leaves=12)
OBJECTS = st.dictionaries(st.sampled_from("abcd"), JSON, max_size=4)
#: pairs that Python's == calls equal but JSON does not
TYPE_CHANGES = [(1, True), (0, False), (1, 1.0), (True, 1.0), ([1], [True]), ({"x": 0}, {"x": False})]


def canonical(value):
    return json.dumps(value, sort_keys=True)


@pytest.fixture
def rid(demo):
    return demo[0]["resource_definitions"][0]["id"]


def _revision(cdb):
    return cdb.app.get(API + "/environments/1").json["revision"]


@pytest.mark.parametrize("old, new", TYPE_CHANGES)
def test_a_write_that_only_changes_a_type_is_a_new_version(cdb, demo, rid, old, new):
    cdb.put(1, rid, {"debug": old})
    cdb.put(1, rid, {"debug": new})
    assert canonical(cdb.get(1, rid).json) == canonical({"debug": new})
    history = cdb.app.get(cdb.url(1, rid) + "/history").json
    assert [h["changed_keys"] for h in history] == [["/debug"], ["/debug/x" if isinstance(old, dict) else "/debug"]]
    patch = cdb.app.get(cdb.url(1, rid) + "/diff?from=1&to=2").json
    assert patch and canonical(jsonpatch.apply_patch({"debug": old}, patch)) == canonical({"debug": new})
    reverted = cdb.app.post_json(cdb.url(1, rid) + "/revert", {"version": 1}, status=201).json
    assert reverted["version"] == 3
    assert canonical(cdb.get(1, rid).json) == canonical({"debug": old})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(first=OBJECTS, second=OBJECTS)
def test_a_put_stores_a_new_version_iff_the_json_differs(cdb, rid, first, second):
    cdb.put(1, rid, first)
    before = _revision(cdb)
    cdb.put(1, rid, second)
    assert _revision(cdb) == before + (canonical(stored_form(first)) != canonical(stored_form(second)))
    assert canonical(cdb.get(1, rid).json) == canonical(stored_form(second))


@given(old=JSON, new=JSON)
def test_json_equal_is_equality_of_canonical_json(old, new):
    assert type_strict_equal(old, new) == (canonical(old) == canonical(new))
    assert type_strict_equal(old, json.loads(canonical(old)))


def test_json_equal_walks_what_json_writes_apart_but_is_equal():
    """Equal values with different texts (the fast path's miss) are decided by the walk: -0.0 is 0.0,
    a type still differs under them."""
    assert type_strict_equal({"a": [-0.0, {"b": 1}]}, {"a": [0.0, {"b": 1}]})
    assert not type_strict_equal({"a": [-0.0, {"b": 1}]}, {"a": [0.0, {"b": True}]})
    assert not type_strict_equal([-0.0, 1], [0, 1])


@given(old=OBJECTS, new=OBJECTS)
def test_diff_is_a_patch_from_old_to_new_that_sees_types(old, new):
    patch = diff(old, new)
    assert canonical(jsonpatch.apply_patch(old, patch)) == canonical(new)
    assert (patch == []) == (canonical(old) == canonical(new))
    assert (document.changed_keys(old, new) == []) == (canonical(old) == canonical(new))


@pytest.mark.parametrize("value", [1e16, -5.5e20, 1e300])
def test_a_whole_number_with_an_exponent_is_stored_as_an_integer_everywhere(cdb, demo, rid, value):
    """PostgreSQL's jsonb gives 1e+16 back as 10000000000000000; a rewrite must not be a new version."""
    cdb.put(1, rid, {"n": value, "f": 1.0})
    cdb.put(1, rid, {"n": value, "f": 1.0})
    assert cdb.app.get(API + "/environments/1").json["revision"] == 1
    assert canonical(cdb.get(1, rid).json) == canonical({"n": int(value), "f": 1.0})


def test_diff_of_a_reordered_long_list_is_replaces_not_a_search():
    old = {"l": list(range(100000))}
    new = {"l": list(reversed(range(100000)))}
    patch = diff(old, new)
    assert len(patch) == 100000 and {op["op"] for op in patch} == {"replace"}
    assert jsonpatch.apply_patch(old, patch) == new


@pytest.mark.parametrize("marker", [{"$unset": 1}, {"$unset": 1.0}, {"$unset": "true"}, {"$unset": True, "x": 1}])
def test_only_exactly_unset_true_removes_a_key(cdb, demo, rid, marker):
    cdb.put(1, rid, {"a": 1, "b": 2})
    cdb.put(1, rid, {"a": marker, "b": {"$unset": True}}, levels="nodes/1/")
    effective = cdb.get(1, rid, "nodes/1/", query="effective").json
    assert canonical(effective) == canonical({"a": marker})
    assert merge.is_unset({"$unset": True}) and not merge.is_unset(marker)


def test_an_empty_key_is_400_not_the_whole_document(cdb, demo, rid):
    cdb.put(1, rid, {"a": 1})
    for query in ("key=", "key", "effective&key=", "version=1&key="):
        resp = cdb.get(1, rid, query=query, status=400)
        assert "key" in resp.json["message"] and resp.json["errors"] == []
    assert cdb.get(1, rid, query="key=a").json == 1


def test_history_never_loads_documents(cdb, demo, rid, query_counter):
    for value in range(5):
        cdb.put(1, rid, {"big": [value] * 1000})
    with query_counter.counting():
        history = cdb.app.get(cdb.url(1, rid) + "/history").json
    assert [h["version"] for h in history] == [1, 2, 3, 4, 5]
    selects = [s for s in query_counter.statements if s.lstrip().upper().startswith("SELECT")]
    assert selects and not [s for s in selects if re.search(r"configdb_document(s|_versions)\.data\b", s)]


def _nested(depth, leaf):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_json_equal_compares_deeper_than_python_can_recurse():
    deep = 5000  # beyond Python's == (a RecursionError): the walk decides alone
    assert type_strict_equal(_nested(deep, 1), _nested(deep, 1))
    assert not type_strict_equal(_nested(deep, 1), _nested(deep, 2))
    assert not type_strict_equal(_nested(deep, 1), _nested(deep, True))


def test_changed_keys_of_a_large_document_name_the_change_only_types_included():
    old = {"key_{0}".format(n): {"n": n, "list": [n, str(n)]} for n in range(5000)}
    new = dict(old, key_7={"n": 7, "list": [7, "7"], "added": 1}, key_4000={"n": 4000, "list": [4000.0, "4000"]})
    del new["key_9"]
    assert document.changed_keys(old, new) == ["/key_7/added", "/key_9", "/key_4000/list"]
    assert document.changed_keys(old, dict(old)) == []


def test_stored_form_copies_only_what_it_changes():
    plain = {"a": [1, 1.5, {"b": "c"}], "d": 1e15}
    assert stored_form(plain) is plain
    for looks_like_one in ({"e": "1e+16"}, {"1e+16": 1}, {"f": 1e-07}):  # no whole number in e+
        assert stored_form(looks_like_one) is looks_like_one
    value = {"a": [1, {"b": 1e16}], "c": {"d": 2.0}}
    converted = stored_form(value)
    assert converted == {"a": [1, {"b": 10 ** 16}], "c": {"d": 2.0}}
    assert type(converted["a"][1]["b"]) is int and type(value["a"][1]["b"]) is float


#: documents as merged: keys a classifier takes for secrets among them, non-ASCII ones, markers anywhere
LAYER = st.dictionaries(st.sampled_from(["a", "b", "password", "é", "\u2028"]),
                        JSON | st.just(merge.UNSET) | st.dictionaries(
                            st.sampled_from(["a", "password"]), JSON | st.just(merge.UNSET), max_size=3),
                        max_size=5)


@settings(max_examples=400, deadline=None)
@given(layers=st.lists(LAYER, min_size=1, max_size=4), others=st.lists(OBJECTS, max_size=2), masked=st.booleans())
def test_an_answer_spliced_from_the_members_of_its_documents_is_its_canonical_text(layers, others, masked):
    """Whatever the merge shared, masking copied or another document holds (the same scalars too), the text made
    from kept members is ``canonical``'s, byte for byte: secrets masked stay masked, ETags of bodies stay."""
    pairs = list(enumerate(layers))
    marker_free = {origin for origin, layer in pairs if not merge.has_marker(layer)}
    answer = merge.values(pairs, marker_free)
    if masked:
        answer = configdb_secrets.masked(answer, configdb_secrets.secret_pointers(answer))
    kept = [(document, json_values.members(document)) for document in
            [layer for origin, layer in pairs if origin in marker_free] + others]
    assert json_values.spliced(answer, kept) == canonical(answer)
    assert json_values.spliced(answer["a"] if "a" in answer else [answer], kept) == canonical(
        answer["a"] if "a" in answer else [answer])
