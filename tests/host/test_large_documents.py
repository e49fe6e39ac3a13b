"""The walks every write of a large document makes (issue 14, goal 4) keep their rules: what is storable
(``validation.check_storable``), how secret leaves are sealed and opened (``secrets.sealing``), where the
mask is (``secrets.masking.holds_mask``). Each is checked against a plain recursive statement of its rule."""
import copy
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nailgun_host import errors
from nailgun_host.validation import MAX_DEPTH, check_storable
from nailgun_platform.secrets import classify, keys, pointers, sealing
from nailgun_platform.secrets.masking import MASK, holds_mask
from nailgun_ext_configdb.objects import secrets as configdb_secrets
from tests.host.test_secrets_masking import DOCUMENTS, SCHEMA


def storable(value, depth=0):
    """The rule ``check_storable`` enforces, said recursively."""
    if isinstance(value, str):
        return "\x00" not in value
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return depth < MAX_DEPTH and sealing.MARKER not in value and all(
            storable(key, depth + 1) and storable(item, depth + 1) for key, item in value.items())
    if isinstance(value, list):
        return depth < MAX_DEPTH and all(storable(item, depth + 1) for item in value)
    return True


FAULTY_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=4),
                           st.sampled_from(["a\x00", "\x00"]))
FAULTY_KEYS = st.one_of(st.text(max_size=3), st.sampled_from(["$fernet", "k\x00", "$fernet "]))
FAULTY = st.recursive(FAULTY_SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(FAULTY_KEYS, children, max_size=3)), max_leaves=12)


@st.composite
def nested(draw):
    """A value wrapped in objects and lists to about MAX_DEPTH levels, on either side of the limit."""
    value = draw(FAULTY)
    for _ in range(draw(st.integers(MAX_DEPTH - 3, MAX_DEPTH + 1))):
        value = [value] if draw(st.booleans()) else {draw(st.sampled_from(["a", "b"])): value}
    return value


@settings(max_examples=400, deadline=None)
@given(st.one_of(FAULTY, nested()))
def test_check_storable_accepts_exactly_what_every_database_stores(value):
    if storable(value):
        assert check_storable(value) is value
    else:
        with pytest.raises(errors.InvalidData):
            check_storable(value)


class Text(str):
    pass


class Number(float):
    pass


class Mapping(dict):
    pass


class Sequence(list):
    pass


#: what Python callers may hand over besides what JSON decodes to: subclasses, keys that are no strings
SUBCLASSED_SCALARS = st.one_of(FAULTY_SCALARS, st.builds(Text, st.sampled_from(["a", "a\x00", "$fernet"])),
                               st.builds(Number, st.sampled_from([1.5, math.inf, -math.inf, math.nan])))
SUBCLASSED_KEYS = st.one_of(FAULTY_KEYS, st.integers(), st.builds(Text, st.sampled_from(["k", "k\x00", "$fernet"])))
SUBCLASSED = st.recursive(SUBCLASSED_SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=3), st.lists(children, max_size=3).map(Sequence),
    st.dictionaries(SUBCLASSED_KEYS, children, max_size=3),
    st.dictionaries(SUBCLASSED_KEYS, children, max_size=3).map(Mapping)), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(SUBCLASSED)
def test_check_storable_judges_subclasses_and_other_keys_by_the_same_rule(value):
    if storable(value):
        assert check_storable(value) is value
    else:
        with pytest.raises(errors.InvalidData):
            check_storable(value)


def test_each_fault_has_its_own_message_at_any_depth():
    deep = {"a": [{"b": "x"}]}
    for fault, message in (("n\x00", "NUL"), (float("inf"), "finite"), (float("nan"), "finite")):
        deep["a"][0]["b"] = fault
        with pytest.raises(errors.InvalidData, match=message):
            check_storable(copy.deepcopy(deep))
    with pytest.raises(errors.InvalidData, match="reserved"):
        check_storable([{"x": {"$fernet": "token"}}])
    with pytest.raises(errors.InvalidData, match="NUL"):
        check_storable({"a": {"key\x00": 1}})
    too_deep = []
    for _ in range(MAX_DEPTH):
        too_deep = [too_deep]
    with pytest.raises(errors.InvalidData, match="nest deeper than {0}".format(MAX_DEPTH)):
        check_storable(too_deep)
    assert check_storable(too_deep[0]) is too_deep[0]


@pytest.fixture(scope="module")
def keyset(tmp_path_factory):
    return keys.load(str(tmp_path_factory.mktemp("sealing") / "keys"))


def canonical(value):
    return json.dumps(value, sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS)
def test_sealing_seals_the_secret_leaves_only_and_leaves_the_document_as_it_was(keyset, document):
    secret = configdb_secrets.secret_pointers(document, [SCHEMA])
    before = canonical(document)
    sealed = sealing.seal(document, secret, keyset)
    assert canonical(document) == before
    for pointer in pointers.leaves(document):
        if pointer in secret and pointer:
            assert sealing.is_sealed(pointers.get(sealed, pointer))
        elif pointer not in secret:
            assert canonical(pointers.get(sealed, pointer)) == canonical(pointers.get(document, pointer))
    assert sealing.count_sealed(sealed) == len(secret)
    stored = json.loads(json.dumps(sealed))
    opened = sealing.unseal(stored, keyset)
    assert canonical(opened) == before
    assert canonical(stored) == canonical(sealed)  # opening copies what it changes
    assert sealing.seal(sealed, secret, keyset) == sealed  # a sealed leaf stays as it is


def test_only_the_way_to_a_secret_is_copied(keyset):
    document = {"plain": {"deep": [1, 2]}, "db": {"password": "x", "user": "u"}, "list": [{"token": "t"}, {}]}
    sealed = sealing.seal(document, classify.by_name(document), keyset)
    assert sealed["plain"] is document["plain"] and sealed["list"][1] is document["list"][1]
    assert document == {"plain": {"deep": [1, 2]}, "db": {"password": "x", "user": "u"},
                        "list": [{"token": "t"}, {}]}
    opened = sealing.unseal(sealed, keyset)
    assert opened == document and opened["plain"] is document["plain"]
    assert sealing.unseal(document, keyset) is document
    whole = sealing.seal(document, {""}, keyset)
    assert sealing.is_sealed(whole) and sealing.unseal(whole, keyset) == document


def test_the_mask_is_found_as_a_value_at_any_depth_and_never_as_a_key():
    assert holds_mask(MASK) and holds_mask({"a": [1, {"b": [None, MASK]}]})
    assert not holds_mask({MASK: 1, "a": [MASK + " ", {"b": "<SECRET>"}], "c": 1.5})
