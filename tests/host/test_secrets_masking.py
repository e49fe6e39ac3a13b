"""Masking secrets for readers and keeping them on a read-modify-write (nailgun_platform.secrets.masking)."""
import copy
import os

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nailgun_host import errors
from nailgun_platform.secrets import pointers
from nailgun_platform.secrets.masking import MASK, MaskWithoutValue, mask, unmask
from nailgun_ext_configdb.objects import secrets as configdb_secrets

ASTUTE = os.path.join(os.path.dirname(__file__), os.pardir, "configdb_clients", "fixtures", "hiera", "astute.yaml")


def test_the_mask_hides_every_secret_of_astute_yaml_whatever_its_type():
    with open(ASTUTE) as stream:
        astute = yaml.safe_load(stream)
    astute["mysql"]["root_password"] = None  # even "no password" is not told
    astute["nova"]["user_password"] = 12345
    masked = mask(astute, configdb_secrets.secret_pointers(astute))
    assert masked["mysql"] == {"root_password": MASK, "wsrep_password": MASK}
    assert masked["nova"] == {"db_password": MASK, "user_password": MASK, "state_path": "/var/lib/nova"}
    assert masked["nodes"] == astute["nodes"]
    assert astute["nova"]["db_password"] == "ZmQg3JCk"  # the stored document is left alone
    assert "ZmQg3JCk" not in repr(masked) and "Mv1yTbAk" not in repr(masked)


def test_a_read_modify_write_keeps_the_secrets_and_the_change():
    stored = {"mysql": {"root_password": "Mv1yTbAk", "port": 3306}, "access": [{"user": "a", "password": "b"}]}
    written = mask(stored, configdb_secrets.secret_pointers(stored))
    written["mysql"]["port"] = 3307
    result = unmask(written, stored, configdb_secrets.secret_pointers(written))
    assert result == {"mysql": {"root_password": "Mv1yTbAk", "port": 3307}, "access": [{"user": "a", "password": "b"}]}
    assert written["mysql"]["root_password"] == MASK  # unmask copies


def test_a_new_secret_replaces_the_stored_one():
    stored = {"db_password": "old", "motd": "hello"}
    written = {"db_password": "new", "motd": "hi"}
    assert unmask(written, stored, configdb_secrets.secret_pointers(written)) == written


@pytest.mark.parametrize("written", [{"motd": MASK}, {"motd": [1, MASK]}, {"port": MASK, "db_password": MASK}])
def test_the_mask_where_no_secret_is_is_refused(written):
    """A masked value copied to a plain key would store the mask and show it as a value."""
    stored = {"db_password": "old", "motd": "hello", "port": 3306}
    with pytest.raises(MaskWithoutValue) as raised:
        unmask(written, stored, configdb_secrets.secret_pointers(written))
    stray = [p for p in ("/motd", "/motd/1", "/port") if p in raised.value.errors]
    assert len(stray) == 1 and raised.value.message.endswith("{0} hold(s) no secret: send the value itself".format(
        stray[0]))


def test_a_mask_in_a_list_keeps_the_secret_of_the_same_entry_only():
    stored = {"users": [{"name": "u1", "password": "PW1"}, {"name": "u2", "password": "PW2"}]}
    kept = {"users": [{"name": "u1", "password": MASK}, {"name": "u2", "password": MASK}, {"name": "u3",
                                                                                          "password": "PW3"}]}
    assert unmask(kept, stored, configdb_secrets.secret_pointers(kept))["users"] == [
        {"name": "u1", "password": "PW1"}, {"name": "u2", "password": "PW2"}, {"name": "u3", "password": "PW3"}]
    for moved in ({"users": [{"name": "u2", "password": MASK}]},  # u1 removed: u2 would get PW1
                  {"users": [{"name": "u2", "password": MASK}, {"name": "u1", "password": MASK}]}):
        with pytest.raises(MaskWithoutValue) as raised:
            unmask(moved, stored, configdb_secrets.secret_pointers(moved))
        assert "/users/0/password" in raised.value.errors
        assert "the list entries around /users/0/password" in raised.value.message


def test_the_mask_where_nothing_is_stored_is_refused():
    stored = {"nova": {"db_password": "x"}}
    written = {"nova": {"db_password": MASK, "user_password": MASK}, "rabbit": {"password": MASK}}
    with pytest.raises(MaskWithoutValue) as raised:
        unmask(written, stored, configdb_secrets.secret_pointers(written))
    assert isinstance(raised.value, errors.InvalidData) and raised.value.status == 400
    assert raised.value.message == ("<secret> is the mask of a secret, and no value is stored at "
                                    "/nova/user_password, /rabbit/password to keep: send the value itself")
    assert raised.value.errors == ["/nova/user_password", "/rabbit/password"]


def test_a_whole_secret_document_and_pointers_another_version_lacks():
    assert mask("s3cret", {""}) == MASK
    assert unmask(MASK, "s3cret", {""}) == "s3cret"
    assert mask({"a": 1}, {"/b", "/a/c"}) == {"a": 1}


def test_pointers_name_list_items_and_refuse_what_is_no_pointer():
    document = {"a": [10, {"b": 20}]}
    assert pointers.get(document, "/a/1/b") == 20
    for missing in ("/a/2", "/a/01", "/a/-", "/a/x", "/c"):
        assert pointers.get(document, missing, None) is None
    with pytest.raises(ValueError, match="not a JSON pointer"):
        pointers.tokens("a/b")


KEYS = st.one_of(st.sampled_from(["password", "db_password", "admin_token", "secret_key", "token/expiration",
                                  "service_token_off", "s", "user", "a/b", "~1", "value", "type", ""]),
                 st.text(max_size=6))
#: stored values: never the mask itself (every write refuses it where no secret is kept)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=8).filter(lambda text: text != MASK))
DOCUMENTS = st.recursive(SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=5)), max_leaves=30)
#: a recursive schema that makes every key ``s`` secret, at any depth, besides the name patterns
SCHEMA = {"definitions": {"node": {"properties": {"s": {"x-secret": True}},
                                   "additionalProperties": {"$ref": "#/definitions/node"},
                                   "items": {"$ref": "#/definitions/node"}}},
          "$ref": "#/definitions/node"}


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS)
def test_mask_then_unmask_gives_back_the_stored_document(stored):
    secret = configdb_secrets.secret_pointers(stored, [SCHEMA])
    masked = mask(stored, secret)
    assert configdb_secrets.secret_pointers(masked, [SCHEMA]) == secret  # values never change the answer
    for pointer in pointers.leaves(stored):
        assert pointers.get(masked, pointer) == (MASK if pointer in secret else pointers.get(stored, pointer))
    before = copy.deepcopy(stored)
    assert unmask(masked, stored, configdb_secrets.secret_pointers(masked, [SCHEMA])) == stored
    assert stored == before


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS, st.data())
def test_a_client_edit_of_a_masked_document_keeps_every_untouched_secret(stored, data):
    secret = configdb_secrets.secret_pointers(stored, [SCHEMA])
    written = mask(stored, secret)
    plain = sorted(set(pointers.leaves(stored)) - secret)
    if plain:
        edited = data.draw(st.sampled_from(plain))
        written = pointers.replace(written, edited, ["edited"])
    try:
        result = unmask(written, stored, configdb_secrets.secret_pointers(written, [SCHEMA]))
    except MaskWithoutValue as refused:
        # only a secret in the list entry the client edited: which stored secret belongs there is a guess
        assert plain and refused.errors and all(_in_one_list_entry(stored, p, edited) for p in refused.errors)
        return
    for pointer in secret:
        assert pointers.get(result, pointer) == pointers.get(stored, pointer)
    if plain:
        assert pointers.get(result, edited) == ["edited"]


def _in_one_list_entry(document, a, b):
    """Whether pointers ``a`` and ``b`` lead through one entry of a list of ``document``."""
    tokens_a, tokens_b = pointers.tokens(a), pointers.tokens(b)
    for depth in range(1, min(len(tokens_a), len(tokens_b)) + 1):
        if tokens_a[:depth] != tokens_b[:depth]:
            return False
        parent = "".join("/" + pointers.escape(t) for t in tokens_a[:depth - 1])
        if isinstance(pointers.get(document, parent), list):
            return True
    return False
