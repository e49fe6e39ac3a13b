"""Merge semantics of effective values (pure logic)."""
import copy

from hypothesis import given, strategies as st

from nailgun_ext_configdb.objects import merge

ROOT_V, ROOT_O, NODE_V, NODE_O = ("", "values"), ("", "overrides"), ("nodes/1", "values"), ("nodes/1", "overrides")


def test_order_is_values_then_overrides_level_by_level():
    merged, lookup = merge.effective([
        (ROOT_V, {"a": 1, "b": 1, "c": 1, "d": 1}),
        (ROOT_O, {"b": 2, "c": 2, "d": 2}),
        (NODE_V, {"c": 3, "d": 3}),
        (NODE_O, {"d": 4}),
    ])
    assert merged == {"a": 1, "b": 2, "c": 3, "d": 4}
    assert lookup == {"a": ROOT_V, "b": ROOT_O, "c": NODE_V, "d": NODE_O}


def test_nested_objects_merge_deeply_and_keep_siblings():
    merged, lookup = merge.effective([
        (ROOT_V, {"nova": {"debug": False, "workers": 4, "db": {"host": "a", "port": 1}}}),
        (NODE_O, {"nova": {"db": {"host": "b"}}}),
    ])
    assert merged == {"nova": {"debug": False, "workers": 4, "db": {"host": "b", "port": 1}}}
    assert lookup["nova"]["db"] == {"host": NODE_O, "port": ROOT_V}
    assert lookup["nova"]["workers"] == ROOT_V


def test_lists_scalars_and_null_replace_whole_values():
    merged, _ = merge.effective([
        (ROOT_V, {"l": [1, 2, 3], "o": {"x": 1}, "s": "v"}),
        (NODE_V, {"l": [9], "o": None, "s": {"now": "object"}}),
    ])
    assert merged == {"l": [9], "o": None, "s": {"now": "object"}}


def test_unset_marker_removes_a_key_at_any_depth_and_never_shows():
    merged, lookup = merge.effective([
        (ROOT_V, {"a": 1, "n": {"x": 1, "y": 2}}),
        (NODE_V, {"a": merge.UNSET, "n": {"y": merge.UNSET}, "new": {"k": merge.UNSET, "j": 1}}),
    ])
    assert merged == {"n": {"x": 1}, "new": {"j": 1}}
    assert "a" not in lookup and lookup["n"] == {"x": ROOT_V}


def test_a_narrower_level_can_set_a_key_again_after_an_unset():
    merged, _ = merge.effective([(ROOT_V, {"a": 1}), (ROOT_O, {"a": merge.UNSET}), (NODE_V, {"a": 3})])
    assert merged == {"a": 3}


def test_merge_does_not_change_the_documents():
    root, node = {"n": {"x": [1], "e": {}}}, {"n": {"y": 2, "e": {"z": 1}}, "m": {"$unset": True}}
    merged, _ = merge.effective([(ROOT_V, root), (NODE_V, node), (NODE_O, {"n": {"y": 3}})])
    assert merged == {"n": {"x": [1], "y": 3, "e": {"z": 1}}}
    assert root == {"n": {"x": [1], "e": {}}}
    assert node == {"n": {"y": 2, "e": {"z": 1}}, "m": {"$unset": True}}


def test_empty_object_is_a_leaf_until_a_narrower_level_fills_it():
    merged, lookup = merge.effective([(ROOT_V, {"e": {}}), (NODE_V, {"e": {"k": 1}})])
    assert merged == {"e": {"k": 1}} and lookup == {"e": {"k": NODE_V}}
    assert merge.annotate({"e": {}}, {"e": ROOT_V}, lambda o: o) == {"e": [{}, "", "values"]}


def test_annotate_marks_every_leaf_with_its_origin():
    merged, lookup = merge.effective([(ROOT_V, {"n": {"a": 1, "b": [1]}}), (NODE_O, {"n": {"a": 2}})])
    annotated = merge.annotate(merged, lookup, lambda origin: ("/" + origin[0], origin[1]))
    assert annotated == {"n": {"a": [2, "/nodes/1", "overrides"], "b": [[1], "/", "values"]}}


_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.text("ab", max_size=2),
                    st.just({"$unset": True}), st.just({"$unset": 1}), st.lists(st.integers(0, 2), max_size=2))
_DOCUMENTS = st.recursive(_LEAVES, lambda children: st.dictionaries(st.sampled_from("abc"), children, max_size=3),
                          max_leaves=12).filter(lambda doc: isinstance(doc, dict))


@given(st.lists(_DOCUMENTS, max_size=4))
def test_the_values_alone_are_the_effective_values_and_leave_the_documents_as_they_were(documents):
    """``merge.values`` (a read without ``show_lookup``) answers what ``merge.effective`` does."""
    before = copy.deepcopy(documents)
    layers = [(("", str(number)), doc) for number, doc in enumerate(documents)]
    merged = merge.values(layers)
    assert merged == merge.effective(layers)[0] and documents == before
    merged.update(changed=True)
    for value in merged.values():
        if isinstance(value, dict):
            value["changed"] = True
    assert documents == before  # the merge's objects are its own
