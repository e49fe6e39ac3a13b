"""Key addressing and keys operations (pure logic)."""
import pytest

from nailgun_host import errors
from nailgun_ext_configdb.objects import keys

DOC = {"a": {"b": [{"c": 1}, 2]}, "dotted.key": 3, "s": "text"}


@pytest.mark.parametrize("key, expected", [
    ("a.b.0.c", 1), ("a.b.1", 2), ("/a/b/0/c", 1), ("/dotted.key", 3), ("a", DOC["a"]),
])
def test_lookup_dotted_and_pointer(key, expected):
    assert keys.lookup(DOC, keys.parse_key(key)) == expected


@pytest.mark.parametrize("key", ["a.x", "a.b.5", "a.b.x", "s.0", "/a/b/-", "dotted.key"])
def test_lookup_missing_is_404(key):
    with pytest.raises(errors.ObjectNotFound):
        keys.lookup(DOC, keys.parse_key(key))


def test_bad_pointer_is_400():
    with pytest.raises(errors.InvalidData):
        keys.parse_key("/a/~2")


def test_set_creates_intermediate_objects_and_leaves_input_alone():
    result = keys.apply_operation(DOC, "set", [["x", "y", "z", 1], ["a", "b", 0, "c", 5], ["a", "b", "1", 7]])
    assert result["x"] == {"y": {"z": 1}}
    assert result["a"]["b"] == [{"c": 5}, 7]
    assert DOC["a"]["b"] == [{"c": 1}, 2] and "x" not in DOC


def test_delete_removes_keys_and_list_items():
    result = keys.apply_operation(DOC, "delete", [["a", "b", 0], ["s"]])
    assert result == {"a": {"b": [2]}, "dotted.key": 3}


@pytest.mark.parametrize("operation, paths, error", [
    ("set", [["a", "b", 9, "c", 1]], errors.ObjectNotFound),
    ("set", [["s", "x", 1]], errors.Conflict),
    ("set", [["only"]], errors.InvalidData),
    ("set", "notalist", errors.InvalidData),
    ("set", [[{"k": 1}, 1]], errors.InvalidData),
    ("delete", [["nope"]], errors.ObjectNotFound),
    ("delete", [[]], errors.InvalidData),
])
def test_bad_operations(operation, paths, error):
    with pytest.raises(error):
        keys.apply_operation(DOC, operation, paths)


def test_all_or_nothing():
    doc = {"a": 1}
    with pytest.raises(errors.ObjectNotFound):
        keys.apply_operation(doc, "delete", [["a"], ["missing"]])
    assert doc == {"a": 1}


def test_lookup_annotated_goes_into_leaf_values():
    tree = {"n": {"l": [[10, 20], "/", "values"]}}
    assert keys.lookup_annotated(tree, ["n", "l", "1"]) == [20, "/", "values"]
    assert keys.lookup_annotated(tree, ["n"]) == tree["n"]
    with pytest.raises(errors.ObjectNotFound):
        keys.lookup_annotated(tree, ["n", "zz"])
