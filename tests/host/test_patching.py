"""nailgun_platform.patching: RFC 6902 patches, their policy and their error statuses (unit and property tests)."""
import copy

import jsonpatch
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nailgun_host import errors
from nailgun_host.validation import MAX_DEPTH
from nailgun_platform import json_equality, patching


def status_of(document, patch):
    try:
        patching.apply(document, patch)
    except errors.NailgunError as exc:
        return exc.status
    return 200


# -- RFC 6902, appendix A ----------------------------------------------------------------------

RFC_EXAMPLES = [
    ("A.1 adding an object member", {"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}],
     {"baz": "qux", "foo": "bar"}),
    ("A.2 adding an array element", {"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}],
     {"foo": ["bar", "qux", "baz"]}),
    ("A.3 removing an object member", {"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}],
     {"foo": "bar"}),
    ("A.4 removing an array element", {"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}],
     {"foo": ["bar", "baz"]}),
    ("A.5 replacing a value", {"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}],
     {"baz": "boo", "foo": "bar"}),
    ("A.6 moving a value", {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
     [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
     {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}),
    ("A.7 moving an array element", {"foo": ["all", "grass", "cows", "eat"]},
     [{"op": "move", "from": "/foo/1", "path": "/foo/3"}], {"foo": ["all", "cows", "eat", "grass"]}),
    ("A.8 testing a value: success", {"baz": "qux", "foo": ["a", 2, "c"]},
     [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
     {"baz": "qux", "foo": ["a", 2, "c"]}),
    ("A.10 adding a nested member object", {"foo": "bar"},
     [{"op": "add", "path": "/child", "value": {"grandchild": {}}}], {"foo": "bar", "child": {"grandchild": {}}}),
    ("A.11 ignoring unrecognized elements", {"foo": "bar"},
     [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}], {"foo": "bar", "baz": "qux"}),
    ("A.14 ~ escape ordering", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}],
     {"/": 9, "~1": 10}),
    ("A.16 adding an array value", {"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
     {"foo": ["bar", ["abc", "def"]]}),
]
# A.13 (an operation object with two "op" members) never reaches this module: the body's JSON
# decoder keeps the last member, as RFC 8259 lets it.
RFC_ERRORS = [
    ("A.9 testing a value: error", {"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}], 409),
    ("A.12 adding to a nonexistent target", {"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}], 404),
    ("A.15 comparing strings and numbers", {"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": "10"}], 409),
]


@pytest.mark.parametrize("name, document, patch, expected", RFC_EXAMPLES, ids=[e[0] for e in RFC_EXAMPLES])
def test_rfc_6902_examples(name, document, patch, expected):
    before = copy.deepcopy(document)
    assert patching.apply(document, patch) == expected
    assert document == before


@pytest.mark.parametrize("name, document, patch, status", RFC_ERRORS, ids=[e[0] for e in RFC_ERRORS])
def test_rfc_6902_error_examples(name, document, patch, status):
    assert status_of(document, patch) == status


# -- each kind of mistake, its status ----------------------------------------------------------

DOCUMENT = {"a": {"b": 1, "l": [10, 20, 30]}, "s": "text", "n": None, "a~b": {"c/d": True}}


@pytest.mark.parametrize("patch, status, message", [
    ([{"op": "replace", "path": "/a/x", "value": 1}], 404, "'/a/x' does not exist"),
    ([{"op": "remove", "path": "/nope"}], 404, "'/nope' does not exist"),
    ([{"op": "add", "path": "/nope/x", "value": 1}], 404, "'/nope' does not exist"),
    ([{"op": "add", "path": "/a/l/4", "value": 1}], 404, "'/a/l/4' is past the end of a list of 3"),
    ([{"op": "replace", "path": "/a/l/3", "value": 1}], 404, "'/a/l/3' is past the end of a list of 3"),
    ([{"op": "remove", "path": "/a/l/-"}], 404, "'/a/l/-' names the end of a list"),
    ([{"op": "move", "from": "/a/nope", "path": "/x"}], 404, "'/a/nope' does not exist"),
    ([{"op": "copy", "from": "/a/l/7", "path": "/x"}], 404, "past the end of a list of 3"),
    ([{"op": "add", "path": "/s/x", "value": 1}], 409, "'/s' is neither an object nor a list"),
    ([{"op": "replace", "path": "/n/x", "value": 1}], 409, "'/n' is neither an object nor a list"),
    ([{"op": "replace", "path": "/a/b/c/d", "value": 1}], 409, "'/a/b' is neither an object nor a list"),
    ([{"op": "replace", "path": "/a/l/first", "value": 1}], 409, "'first' is not a list index (at '/a/l')"),
    ([{"op": "add", "path": "/a/l/01", "value": 1}], 409, "'01' is not a list index"),
    ([{"op": "test", "path": "/a/b", "value": 2}], 409, "A test operation of the patch failed at '/a/b' (operation 0)"),
    ([{"op": "test", "path": "/a/nope", "value": 2}], 409, "A test operation of the patch failed at '/a/nope'"),
    ([{"op": "test", "path": "/s/x", "value": 2}], 409, "A test operation of the patch failed at '/s/x'"),
    ([{"op": "test", "path": "/a/b", "value": True}], 409, "A test operation of the patch failed"),
    ([{"op": "test", "path": "/a~0b/c~1d", "value": 1}], 409, "A test operation of the patch failed"),
    ([{"op": "replace", "path": "/a/b", "value": 2}, {"op": "remove", "path": "/a/b/x"}], 409,
     "operation 1 ('remove' on '/a/b/x')"),
])
def test_client_mistakes_have_their_status_and_name_the_operation(patch, status, message):
    with pytest.raises(errors.NailgunError) as raised:
        patching.apply(DOCUMENT, patch)
    assert raised.value.status == status
    assert message in raised.value.message
    assert raised.value.errors[0]["path"] == patch[-1]["path"]


@pytest.mark.parametrize("patch, message", [
    ({"op": "add"}, "is not of type 'array'"),
    ("[]", "is not of type 'array'"),
    (["add"], "is not of type 'object'"),
    ([{"path": "/a", "value": 1}], "'op' is a required property"),
    ([{"op": "add", "value": 1}], "'path' is a required property"),
    ([{"op": "jump", "path": "/a"}], "'jump' is not one of"),
    ([{"op": "add", "path": 5, "value": 1}], "5 is not of type 'string'"),
    ([{"op": "move", "path": "/a", "from": 5}], "5 is not of type 'string'"),
    ([{"op": "add", "path": "/a"}], "Operation 'add' on '/a' needs a 'value' member (operation 0)"),
    ([{"op": "test", "path": "/a"}], "Operation 'test' on '/a' needs a 'value' member"),
    ([{"op": "remove", "path": "/s"}, {"op": "replace", "path": "/a"}],
     "Operation 'replace' on '/a' needs a 'value' member (operation 1)"),
    ([{"op": "copy", "path": "/a"}], "Operation 'copy' on '/a' needs a 'from' member"),
    ([{"op": "move", "path": "/a"}], "Operation 'move' on '/a' needs a 'from' member"),
    ([{"op": "add", "path": "a", "value": 1}], "Invalid path 'a' (operation 0)"),
    ([{"op": "add", "path": "/a~2", "value": 1}], "Invalid path '/a~2'"),
    ([{"op": "add", "path": "/a~", "value": 1}], "Invalid path '/a~'"),
    ([{"op": "copy", "path": "/a", "from": "a"}], "Invalid from 'a'"),
    ([{"op": "remove", "path": ""}], "would remove the whole document"),
    ([{"op": "move", "from": "/a", "path": "/a/b/c"}], "would move a value into itself"),
    ([{"op": "move", "from": "", "path": "/x"}], "would move a value into itself"),
])
def test_malformed_patches_are_400_before_anything_applies(patch, message):
    with pytest.raises(errors.InvalidData) as raised:
        patching.check_operations(patch)
    assert message in raised.value.message
    with pytest.raises(errors.InvalidData):
        patching.apply(DOCUMENT, patch)


def test_remove_needs_no_value_and_every_operation_may_carry_members_it_ignores():
    assert patching.apply(DOCUMENT, [{"op": "remove", "path": "/s", "value": "ignored", "from": "/a"}]) == {
        key: value for key, value in DOCUMENT.items() if key != "s"}


def test_every_operation_applies_with_escaped_keys_and_the_end_of_a_list():
    result = patching.apply(DOCUMENT, [
        {"op": "add", "path": "/a/l/-", "value": 40},
        {"op": "add", "path": "/a/l/0", "value": 0},
        {"op": "replace", "path": "/a~0b/c~1d", "value": False},
        {"op": "copy", "from": "/a~0b", "path": "/copy"},
        {"op": "move", "from": "/a/b", "path": "/moved"},
        {"op": "remove", "path": "/n"},
        {"op": "test", "path": "/a/l", "value": [0, 10.0, 20, 30, 40]},
        {"op": "move", "from": "/s", "path": "/s"},
    ])
    assert result == {"a": {"l": [0, 10, 20, 30, 40]}, "s": "text", "a~b": {"c/d": False},
                      "copy": {"c/d": False}, "moved": 1}


def test_add_and_replace_at_the_root_replace_the_whole_document():
    assert patching.apply(DOCUMENT, [{"op": "replace", "path": "", "value": [1]}]) == [1]
    assert patching.apply(DOCUMENT, [{"op": "add", "path": "", "value": {"x": 1}},
                                     {"op": "add", "path": "/y", "value": 2}]) == {"x": 1, "y": 2}


def test_a_later_operation_does_not_change_the_value_of_an_earlier_one_in_the_patch():
    patch = [{"op": "add", "path": "/v", "value": {"k": 1}}, {"op": "add", "path": "/v/k2", "value": 2}]
    before = copy.deepcopy(patch)
    assert patching.apply({}, patch) == {"v": {"k": 1, "k2": 2}}
    assert patch == before


def test_a_patch_that_copies_a_document_into_itself_until_it_is_huge_is_400():
    patch = [{"op": "copy", "from": "", "path": "/c{0}".format(n)} for n in range(25)]
    with pytest.raises(errors.InvalidData) as raised:
        patching.apply({"x": list(range(10))}, patch)
    assert "the result would hold more than {0} values".format(patching.MAX_VALUES) in raised.value.message


def test_a_patch_that_nests_too_deep_is_400():
    with pytest.raises(errors.InvalidData) as raised:
        patching.apply({"a": {}}, [{"op": "copy", "from": "", "path": "/a/b"}] * (MAX_DEPTH + 1))
    assert "nest deeper than {0} levels".format(MAX_DEPTH) in raised.value.message
    deep = {}
    for _ in range(MAX_DEPTH - 2):
        deep = {"d": deep}
    with pytest.raises(errors.InvalidData):
        patching.apply({"a": {"b": {}}}, [{"op": "add", "path": "/a/b/c", "value": deep}])
    assert patching.apply({"a": {}}, [{"op": "add", "path": "/a/c", "value": deep}])["a"]["c"] == deep


# -- the policy --------------------------------------------------------------------------------

POLICY = {
    "/name": ["replace"],
    "/nova/**": ["add", "replace", "remove"],
    "/nova/keystone/admin_token": ["replace"],
    "/groups/*/cidr": ["replace"],
    "/*/readonly": [],
    "/a~1b/~0": ["remove"],
}


@pytest.mark.parametrize("pointer, default, expected", [
    ("/name", (), ("replace",)),
    ("/name/x", (), ()),
    ("/nova", (), ()),
    ("/nova/x", (), ("add", "replace", "remove")),
    ("/nova/x/y/z", (), ("add", "replace", "remove")),
    ("/nova/keystone/admin_token", (), ("replace",)),
    ("/nova/readonly", (), ("add", "replace", "remove")),
    ("/other/readonly", patching.OPERATIONS, ()),
    ("/groups/default/cidr", (), ("replace",)),
    ("/groups/default/gateway", ("test",), ("test",)),
    ("/a~1b/~0", (), ("remove",)),
    ("/unknown", patching.OPERATIONS, patching.OPERATIONS),
])
def test_allowed_takes_the_most_specific_pattern(pointer, default, expected):
    assert patching.allowed(POLICY, pointer, default) == expected


def test_check_policy_names_every_refused_operation_and_what_is_allowed_there():
    with pytest.raises(errors.NotAllowed) as raised:
        patching.check_policy([
            {"op": "test", "path": "/secret", "value": 1},
            {"op": "replace", "path": "/name", "value": "x"},
            {"op": "remove", "path": "/name"},
            {"op": "move", "from": "/nova/keystone/admin_token", "path": "/nova/x"},
            {"op": "copy", "from": "/secret", "path": "/groups/g/cidr"},
        ], POLICY, default=())
    assert raised.value.message == "Operation 'remove' is not allowed on '/name'; allowed operations: replace"
    assert raised.value.errors == [
        {"op": "remove", "path": "/name", "allowed": ["replace"]},
        {"op": "remove", "path": "/nova/keystone/admin_token", "allowed": ["replace"]},
        {"op": "add", "path": "/groups/g/cidr", "allowed": ["replace"]}]
    with pytest.raises(errors.NotAllowed) as raised:
        patching.check_policy([{"op": "add", "path": "/x", "value": 1}], {}, default=())
    assert raised.value.message.endswith("allowed operations: none")


def test_test_is_always_allowed_and_move_and_copy_need_what_they_do():
    patching.check_policy([{"op": "test", "path": "/anything", "value": 1}], {}, default=())
    patching.check_policy([{"op": "move", "from": "/nova/a", "path": "/nova/b"},
                           {"op": "copy", "from": "/secret", "path": "/nova/c"}], POLICY, default=())


@pytest.mark.parametrize("policy, message", [
    ([], "maps path patterns"),
    ({"name": ["replace"]}, "Patch policy pattern 'name' is not a JSON pointer"),
    ({"/a~2": ["replace"]}, "is not a JSON pointer"),
    ({"/a": "replace"}, "must be a list of"),
    ({"/a": ["jump"]}, "must be a list of"),
])
def test_a_policy_that_is_not_one_is_400(policy, message):
    with pytest.raises(errors.InvalidData) as raised:
        patching.check_policy_patterns(policy)
    assert message in raised.value.message


# -- properties --------------------------------------------------------------------------------

KEYS = st.sampled_from(["a", "b", "0", "1", "2", "-", "~", "/", "01"])
SECRET = "s3cr3t-value"
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2, allow_nan=False),
                    st.sampled_from(["x", SECRET, "1"]))
JSON = st.recursive(SCALARS, lambda children: st.one_of(st.lists(children, max_size=4),
                                                        st.dictionaries(KEYS, children, max_size=4)),
                    max_leaves=12)
POINTERS = st.lists(KEYS, max_size=4).map(lambda parts: "".join(
    "/" + part.replace("~", "~0").replace("/", "~1") for part in parts))
OPERATION = st.one_of(
    st.builds(lambda op, path, value: {"op": op, "path": path, "value": value},
              st.sampled_from(["add", "replace", "test"]), POINTERS, JSON),
    st.builds(lambda path: {"op": "remove", "path": path}, POINTERS),
    st.builds(lambda op, source, path: {"op": op, "from": source, "path": path},
              st.sampled_from(["move", "copy"]), POINTERS, POINTERS),
)


@settings(max_examples=600, deadline=None)
@given(JSON, st.lists(OPERATION, max_size=5))
def test_any_patch_applies_whole_or_fails_with_a_client_error_leaving_its_inputs_as_they_were(document, patch):
    """Compared with ``jsonpatch`` alone: the same result, or a 4xx where it fails; never a value quoted."""
    document_before, patch_before = copy.deepcopy(document), copy.deepcopy(patch)
    try:
        expected = jsonpatch.apply_patch(copy.deepcopy(document), copy.deepcopy(patch))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
        expected = None
    try:
        result = patching.apply(document, patch)
    except errors.NailgunError as exc:
        assert exc.status in (400, 404, 409), exc.message
        assert "unexpected" not in exc.message
        assert SECRET not in exc.message
        assert expected is None, exc.message
    else:
        assert result == expected
    assert (document, patch) == (document_before, patch_before)


@settings(max_examples=300, deadline=None)
@given(JSON, JSON)
def test_the_diff_of_two_documents_patches_one_into_the_other(first, second):
    assert patching.apply(first, jsonpatch.make_patch(first, second).patch) == second


@settings(max_examples=300, deadline=None)
@given(JSON, st.data())
def test_testing_a_present_value_passes_and_anything_else_fails_409(document, data):
    present = [pointer for pointer in _pointers(document)]
    pointer = data.draw(st.sampled_from(present))
    value = jsonpatch.JsonPointer(pointer).resolve(document)
    assert patching.apply(document, [{"op": "test", "path": pointer, "value": copy.deepcopy(value)}]) == document
    other = data.draw(JSON)
    if not jsonpatch._json_equal(other, value):
        assert status_of(document, [{"op": "test", "path": pointer, "value": other}]) == 409


def _pointers(document, prefix=""):
    yield prefix
    items = document.items() if isinstance(document, dict) else enumerate(document) \
        if isinstance(document, list) else ()
    for key, value in items:
        yield from _pointers(value, prefix + "/" + str(key).replace("~", "~0").replace("/", "~1"))


# -- what a write changes, judged by the policy -------------------------------------------------

KEYSTONE = {"keystone": {"admin_token": "t", "workers": 2}, "other": {"workers": 3}}


@pytest.mark.parametrize("after", [
    {"other": {"workers": 3}},  # remove /keystone
    {"keystone": {"workers": 2}, "other": {"workers": 3}},  # replace or add /keystone, replace or add ""
    {"keystone": {"workers": 3}},  # move or copy /other onto /keystone
    {"keystone": "flat", "other": {"workers": 3}},  # /keystone becomes a scalar
])
def test_a_protected_key_removed_through_its_parent_or_the_root_is_a_remove_of_it(after):
    refused = patching.refused_changes(KEYSTONE, after, {"/keystone/admin_token": ["replace"]})
    assert {"op": "remove", "path": "/keystone/admin_token", "allowed": ["replace"]} in refused


@pytest.mark.parametrize("after, refused", [
    ({"keystone": {"admin_token": "t", "workers": 5}, "other": {}}, []),  # the token kept
    ({"keystone": {"admin_token": "u"}}, []),  # replaced, as allowed
    ({"keystone": {"admin_token": ["u"]}, "other": {"workers": 3}}, []),  # replaced by a list
    ({"keystone": {"admin_token": "t", "workers": 2}, "locked": {"x": 1}, "other": {"workers": 3}},
     [{"op": "add", "path": "/locked", "allowed": []}]),
])
def test_what_keeps_a_protected_key_or_changes_it_as_allowed_is_not_refused(after, refused):
    policy = {"/keystone/admin_token": ["replace"], "/locked": []}
    assert patching.refused_changes(KEYSTONE, after, policy) == refused


def test_a_change_within_a_protected_value_is_a_replace_of_it():
    before = {"open": {"x": {"a": 1}}, "frozen": {"a": [1]}}
    assert patching.refused_changes(before, {"open": {"x": {"a": 2, "b": 1}}, "frozen": {"a": [1, 2]}},
                                    {"/open/*": ["add", "replace"], "/frozen": []}, ("test",)) == [
        {"op": "replace", "path": "/frozen", "allowed": []}]
    # an append-only policy: what is added within is judged where it is added
    assert patching.refused_changes({"a": {}}, {"a": {"b": {"c": 1}}}, {"/**": ["add"]}, ()) == []
    assert patching.refused_changes({"a": {"b": 1}}, {"a": {}}, {"/**": ["add"]}, ()) == [
        {"op": "remove", "path": "/a/b", "allowed": ["add"]}]


def test_every_refused_change_is_listed_up_to_max_refused(monkeypatch):
    monkeypatch.setattr(patching, "MAX_REFUSED", 3)
    assert patching.refused_changes({"a": 1, "b": 2}, {}, {}, default=("test",)) == [
        {"op": "remove", "path": "/a", "allowed": ["test"]}, {"op": "remove", "path": "/b", "allowed": ["test"]}]
    assert len(patching.refused_changes({}, {str(key): key for key in range(10)}, {}, default=())) == 3


def test_a_patch_beyond_max_operations_is_400_naming_the_limit(monkeypatch):
    from nailgun_host.settings import settings as host_settings
    monkeypatch.setitem(host_settings["PATCH"], "max_operations", 3)
    patch = [{"op": "test", "path": "", "value": {}}] * 3
    assert patching.apply({}, patch) == {}
    with pytest.raises(errors.InvalidData) as raised:
        patching.apply({}, patch + patch[:1])
    assert raised.value.message == ("A patch may hold at most 3 operations (PATCH.max_operations); this one holds 4")


_ABSENT = object()
#: patterns of one to three segments; ``*`` and ``**`` among them
PATTERNS = st.lists(st.sampled_from(["a", "b", "0", "1", "~", "*", "**"]), min_size=0, max_size=3).map(
    lambda parts: "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts))
EDITS = st.lists(st.sampled_from(["add", "remove", "replace"]), unique=True)
DEFAULTS = st.sampled_from([patching.OPERATIONS, ("test",)])
#: what ``allowed`` answers where no pattern matches, to tell "protected" locations from the others
_UNMATCHED = ("(no pattern)",)


def _tokens(value):
    if isinstance(value, dict):
        return list(value)
    return [str(index) for index in range(len(value))] if isinstance(value, list) else []


def _at(document, parts):
    for token in parts:
        if isinstance(document, dict) and token in document:
            document = document[token]
        elif isinstance(document, list) and token.isdigit() and str(int(token)) == token and int(token) < len(document):
            document = document[int(token)]
        else:
            return _ABSENT
    return document


def _locations(document, prefix=()):
    yield prefix
    for token in _tokens(document):
        yield from _locations(_at(document, (token,)), prefix + (token,))


def _pointer(parts):
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def _naive_refusals(before, after, policy, default):
    """The rules of ``patching.refused_changes``, location by location over both whole documents."""
    def fate(parts):
        old, new = _at(before, parts), _at(after, parts)
        if old is _ABSENT:
            return None if new is _ABSENT else "add"
        if new is _ABSENT:
            return "remove"
        return None if jsonpatch._json_equal(old, new) and type(old) is type(new) or (
            old == new and json_equality.rfc6902_equal(old, new)) else "replace"

    def within(parts):  # an object or a list on both sides
        old, new = _at(before, parts), _at(after, parts)
        return (isinstance(old, dict) and isinstance(new, dict)) or (isinstance(old, list) and isinstance(new, list))

    def pattern_of(parts):
        decided = patching.allowed(policy, _pointer(parts), _UNMATCHED)
        return None if decided == _UNMATCHED else decided

    everywhere = set(_locations(before)) | set(_locations(after))
    topmost = [parts for parts in everywhere if fate(parts) and not within(parts)
               and all(within(parts[:depth]) for depth in range(len(parts)))]
    refused = set()
    for parts in topmost:
        for depth in range(len(parts), -1, -1):
            operations = pattern_of(parts[:depth])
            if operations is not None:
                operation = fate(parts) if depth == len(parts) else "replace"
                if operation not in operations:
                    refused.add((operation, _pointer(parts[:depth])))
                break
        else:
            if fate(parts) not in default:
                refused.add((fate(parts), _pointer(parts)))
    for parts in everywhere:
        inside = any(len(parts) > len(top) and parts[:len(top)] == top for top in topmost)
        operations = pattern_of(parts)
        if inside and operations is not None and fate(parts) and fate(parts) not in operations:
            refused.add((fate(parts), _pointer(parts)))
    return refused


def _after(document, patch):
    try:
        return patching.apply(document, patch)
    except errors.NailgunError:
        return document


def _policies(document):
    """Policies whose patterns are often the document's own locations (else a random one rarely names any)."""
    return st.dictionaries(st.one_of(PATTERNS, st.sampled_from(list(_pointers(document)))), EDITS, max_size=4)


@settings(max_examples=300, deadline=None)
@given(JSON, st.one_of(JSON, st.lists(OPERATION, min_size=1, max_size=3)), st.data(), DEFAULTS)
def test_a_write_is_refused_exactly_where_the_rules_say_location_by_location(before, change, data, default):
    """The walk (pruned where no pattern reaches) against every location of both documents."""
    policy = data.draw(_policies(before))
    after = _after(before, change) if isinstance(change, list) and change and isinstance(change[0], dict) \
        and "op" in change[0] else change
    refused = patching.refused_changes(before, after, policy, default)
    assert {(entry["op"], entry["path"]) for entry in refused} == _naive_refusals(before, after, policy, default)


@settings(max_examples=300, deadline=None)
@given(JSON, st.lists(OPERATION, min_size=1, max_size=4), st.data(), DEFAULTS)
@example({"a": {"b": 1}}, [{"op": "remove", "path": "/a"}], {"/a/b": ["replace"]}, patching.OPERATIONS)
@example({"a": {"b": 1}, "0": {}}, [{"op": "move", "from": "/0", "path": "/a"}], {"/a/b": ["replace"]},
         patching.OPERATIONS)
def test_no_protected_value_changes_in_a_way_its_pattern_does_not_allow_when_a_write_passes(
        before, patch, data, default):
    """Whenever the check passes, every location a pattern matches that appears, disappears, or (a leaf, or a
    value of another kind) holds another value, does so by an operation its pattern allows."""
    policy = data if isinstance(data, dict) else data.draw(_policies(before))
    after = _after(before, patch)
    if patching.refused_changes(before, after, policy, default):
        return
    for parts in set(_locations(before)) | set(_locations(after)):
        operations = patching.allowed(policy, _pointer(parts), _UNMATCHED)
        if operations == _UNMATCHED:
            continue
        old, new = _at(before, parts), _at(after, parts)
        if old is _ABSENT and new is not _ABSENT:
            assert "add" in operations, (parts, policy)
        elif new is _ABSENT and old is not _ABSENT:
            assert "remove" in operations, (parts, policy)
        elif old is not _ABSENT and not (isinstance(old, (dict, list)) and type(old) is type(new)) \
                and not (old == new and json_equality.rfc6902_equal(old, new)):
            assert "replace" in operations, (parts, policy)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, JSON, max_size=4), st.data(), st.dictionaries(PATTERNS, EDITS, max_size=4), DEFAULTS)
def test_one_operation_on_its_own_path_passes_when_allowed_there_and_nothing_else_is_protected(
        document, data, policy, default):
    """A single add, remove or replace of an object's member that is a leaf (or changes its kind), with no
    pattern matching any other location it touches (above or below it): the check passes exactly when the
    policy allows there what it amounts to (a remove where the value disappears, an add where it appears, a
    replace where another value takes its place)."""
    key = data.draw(KEYS)
    op = data.draw(st.sampled_from(["add", "remove", "replace"]))
    operation = {"op": op, "path": _pointer((key,))}
    if op != "remove":
        operation["value"] = data.draw(JSON)
    try:
        after = patching.apply(document, [operation])
    except errors.NailgunError:
        return
    old, new = document.get(key, _ABSENT), after.get(key, _ABSENT)
    if (isinstance(old, dict) and isinstance(new, dict)) or (isinstance(old, list) and isinstance(new, list)):
        return  # changed only within: judged below, location by location
    effect = "add" if old is _ABSENT else "remove" if new is _ABSENT else "replace"
    if old is not _ABSENT and new is not _ABSENT and old == new and json_equality.rfc6902_equal(old, new):
        effect = None
    touched = [parts for parts in set(_locations(old, (key,)) if old is not _ABSENT else []) |
               set(_locations(new, (key,)) if new is not _ABSENT else []) if parts != (key,)] + [()]
    if any(patching.allowed(policy, _pointer(parts), _UNMATCHED) != _UNMATCHED for parts in touched):
        return
    allowed = patching.allowed(policy, _pointer((key,)), default)
    refused = patching.refused_changes(document, after, policy, default)
    assert (refused == []) == (effect is None or effect in allowed), (operation, refused)


def test_a_patch_walking_more_values_than_max_walked_is_400_and_a_move_at_one_depth_walks_none(monkeypatch):
    """What bounds a patch's time besides its length: moving a large value back and forth at one depth
    walks none of it; copying, replacing or removing it walks it every time, up to MAX_WALKED in all."""
    monkeypatch.setattr(patching, "MAX_WALKED", 300)
    document = {"big": {str(index): [index] for index in range(100)}}  # 201 values
    moves = [{"op": "move", "from": "/big", "path": "/b2"}, {"op": "move", "from": "/b2", "path": "/big"}] * 50
    assert patching.apply(document, moves) == document
    assert status_of(document, [{"op": "move", "from": "/big", "path": "/b2"},
                                {"op": "move", "from": "/b2", "path": "/big"}] * 50) == 200
    cycles = [{"op": "copy", "from": "/big", "path": "/b2"}, {"op": "remove", "path": "/b2"}]
    assert patching.apply(document, cycles[:1]) == dict(document, b2=document["big"])
    with pytest.raises(errors.InvalidData) as raised:
        patching.apply(document, cycles * 2)
    assert raised.value.message.endswith("the patch would move, copy, replace or remove more than 300 values in all")
