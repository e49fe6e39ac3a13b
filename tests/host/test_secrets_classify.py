"""Which values are secret (nailgun_platform.secrets.classify), on the test fixtures' real Hiera
data, Fuel's attribute metadata, schemas using every keyword that reaches a value, and
generated documents."""
import os
import re

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from nailgun_host.objects.attributes import generate_attributes
from nailgun_platform.secrets import classify, pointers
from nailgun_ext_configdb.objects import secrets as configdb_secrets

HIERA = os.path.join(os.path.dirname(__file__), os.pardir, "configdb_clients", "fixtures", "hiera")
RELEASE_DEFAULTS = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "nailgun_host", "fixtures",
                                "release_defaults.yaml")


def hiera(name):
    with open(os.path.join(HIERA, name)) as stream:
        return yaml.safe_load(stream)


def test_the_fixture_astute_yaml_has_its_four_passwords_secret_and_nothing_else():
    assert configdb_secrets.secret_pointers(hiera("astute.yaml")) == {
        "/mysql/root_password", "/mysql/wsrep_password", "/nova/db_password", "/nova/user_password"}


def test_globals_yaml_keeps_its_token_switch_readable():
    assert configdb_secrets.secret_pointers(hiera("globals.yaml")) == {"/keystone_hash/admin_token"}


def test_keystone_token_options_in_configuration_overrides_are_not_secret():
    assert configdb_secrets.secret_pointers(hiera("override/configuration/cluster.yaml")) == set()


def test_oslo_options_carrying_credentials_in_configuration_overrides_are_secret():
    overrides = {"configuration": {"nova_config": {
        "keystone_authtoken/password": {"value": "Bvo8xdTk"},
        "database/connection": {"value": "mysql+pymysql://nova:ZmQg3JCk@192.168.0.2/nova"},
        "DEFAULT/transport_url": {"value": "rabbit://nova:c2VjcmV0@192.168.0.2:5673/"},
        "DEFAULT/admin_token": {"value": "lw9FAYPs"},
        "DEFAULT/sql_connection": {"value": "mysql://nova:ZmQg3JCk@192.168.0.2/nova"},
        "DEFAULT/max_connections": {"value": 100},
        "keystone_authtoken/auth_url": {"value": "http://192.168.0.2:5000"},
        "token/provider": {"value": "fernet"},
    }}}
    assert configdb_secrets.secret_pointers(overrides) == {
        "/configuration/nova_config/keystone_authtoken~1password/value",
        "/configuration/nova_config/database~1connection/value",
        "/configuration/nova_config/DEFAULT~1transport_url/value",
        "/configuration/nova_config/DEFAULT~1admin_token/value",
        "/configuration/nova_config/DEFAULT~1sql_connection/value"}


#: credentials under the names Fuel 9's astute.yaml gives them, beside their readable neighbours
FUEL_ASTUTE = {
    "access": {"user": "admin", "password": "admin", "tenant": "admin", "email": "admin@localhost"},
    "keystone": {"admin_token": "lw9FAYPs", "db_password": "x1", "token_expiration": 3600},
    "rabbit": {"user": "nova", "password": "x2"},
    "mcollective": {"user": "mcollective", "password": "x3", "vhost": "mcollective"},
    "quantum_settings": {"database": {"passwd": "x4", "user": "neutron"},
                         "keystone": {"admin_password": "x5"},
                         "metadata": {"metadata_proxy_shared_secret": "x6"}},
    "heat": {"auth_encryption_key": "x7", "rabbit_password": "x8"},
    "cinder": {"fixed_key": "x9", "user_password": "x10"},
    "ceilometer": {"metering_secret": "x11", "enabled": False},
    "horizon": {"secret_key": "x12"},
    "ironic": {"swift_tempurl_key": "x13"},
    "public_ssl": {"horizon": True, "cert_source": "user_uploaded", "hostname": "public.fuel.local",
                   "cert_data": {"name": "ca.pem", "content": "-----BEGIN PRIVATE KEY-----"}},
    "murano": {"db_password": "x14", "api_key": None, "credentials": {"user": "murano"}},
    "vcenter": {"computes": [{"vc_host": "10.0.0.1", "vc_user": "root", "vc_password": "x15"}]},
    "ssh": {"private_key": "x16", "public_key": "ssh-rsa AAA"},
    "rabbitmq": {"erlang_cookie": "x17", "port": 5673},
}


def test_fuel_astute_credentials_are_secret_and_their_neighbours_are_not():
    assert configdb_secrets.secret_pointers(FUEL_ASTUTE) == {
        "/access/password", "/keystone/admin_token", "/keystone/db_password", "/rabbit/password",
        "/mcollective/password", "/quantum_settings/database/passwd",
        "/quantum_settings/keystone/admin_password", "/quantum_settings/metadata/metadata_proxy_shared_secret",
        "/heat/auth_encryption_key", "/heat/rabbit_password", "/cinder/fixed_key", "/cinder/user_password",
        "/ceilometer/metering_secret", "/horizon/secret_key", "/ironic/swift_tempurl_key",
        "/public_ssl/cert_data/name", "/public_ssl/cert_data/content", "/murano/db_password", "/murano/api_key",
        "/vcenter/computes/0/vc_password", "/ssh/private_key", "/rabbitmq/erlang_cookie"}


def test_a_secret_name_covers_every_leaf_below_it_and_names_match_in_any_case():
    document = {"Passwords": {"db": ["a", {"b": None}], "empty": {}, "none": []}, "userPassword": 7,
                "x-auth-token": True, "db_pass": "p", "compass": "north", "bypass": "no"}
    assert configdb_secrets.secret_pointers(document) == {
        "/Passwords/db/0", "/Passwords/db/1/b", "/Passwords/empty", "/Passwords/none", "/userPassword",
        "/x-auth-token", "/db_pass"}


def test_name_patterns_are_configurable():
    document = {"keystone_hash": {"admin_token": "t"}, "nova": {"db_password": "p"}}
    assert configdb_secrets.secret_pointers(document, patterns=("*_hash",)) == {"/keystone_hash/admin_token"}
    assert configdb_secrets.secret_pointers(document, patterns=()) == set()
    with pytest.raises(ValueError, match="non-empty strings"):
        configdb_secrets.secret_pointers(document, patterns=("",))


def test_pointers_escape_slashes_and_tildes():
    assert configdb_secrets.secret_pointers({"a/b": {"~password": 1}}) == {"/a~1b/~0password"}
    assert pointers.get({"a/b": {"~password": 1}}, "/a~1b/~0password") == 1


SCHEMA = {
    "type": "object",
    "definitions": {
        "secret": {"type": "string", "x-secret": True},
        "service": {"type": "object", "properties": {"pw": {"$ref": "#/definitions/secret"},
                                                     "user": {"type": "string"}}},
        "tree": {"type": "object", "properties": {"key": {"format": "password"}},
                 "additionalProperties": {"$ref": "#/definitions/tree"}},
    },
    "properties": {
        "nova": {"$ref": "#/definitions/service"},
        "db": {"format": "password"},
        "opaque": {"x-secret": True},
        "tuple": {"items": [{"type": "string"}, {"x-secret": True}], "additionalItems": {"format": "password"}},
        "list": {"items": {"properties": {"pin": {"x-secret": True}}}},
        "tree": {"$ref": "#/definitions/tree"},
        "either": {"anyOf": [{"type": "null"}, {"properties": {"k": {"x-secret": True}}}]},
        "both": {"allOf": [{"properties": {"a": {"x-secret": True}}}, {"properties": {"b": {"x-secret": True}}}]},
        "one": {"oneOf": [{"$ref": "#/definitions/service"}]},
        "not_marked": {"x-secret": "true", "format": "email"},
    },
    "patternProperties": {"^vault_": {"x-secret": True}},
    "additionalProperties": {"type": "object", "additionalProperties": {"format": "password"}},
}


def test_a_schema_marks_secrets_through_every_keyword_that_reaches_a_value():
    jsonschema.Draft4Validator.check_schema(SCHEMA)
    document = {
        "nova": {"pw": "p", "user": "nova"},
        "db": "d",
        "opaque": {"deep": [1, {"er": "x"}]},
        "tuple": ["readable", "hidden", "extra1", "extra2"],
        "list": [{"pin": 1, "name": "a"}, {"name": "b"}],
        "tree": {"key": "k0", "child": {"key": "k1", "grandchild": {"key": "k2", "other": 1}}},
        "either": {"k": "v", "j": "w"},
        "both": {"a": 1, "b": 2, "c": 3},
        "one": {"pw": "q", "user": "u"},
        "not_marked": "n",
        "vault_a": "va",
        "extra": {"anything": "e", "more": {"x": 1}},
    }
    assert configdb_secrets.secret_pointers(document, [SCHEMA], patterns=()) == {
        "/nova/pw", "/db", "/opaque/deep/0", "/opaque/deep/1/er", "/tuple/1", "/tuple/2", "/tuple/3",
        "/list/0/pin", "/tree/key", "/tree/child/key", "/tree/child/grandchild/key", "/either/k",
        "/both/a", "/both/b", "/one/pw", "/vault_a", "/extra/anything", "/extra/more/x"}


def test_schema_and_names_add_up():
    schema = {"properties": {"pin": {"x-secret": True}}}
    assert configdb_secrets.secret_pointers({"pin": 1, "password": 2, "other": 3}, [schema]) == {"/pin", "/password"}


def test_what_a_schema_cannot_tell_is_secret():
    # a $ref that leaves the schema (refused when a definition is written, but stored ones may predate that)
    outside = {"properties": {"a": {"$ref": "http://example.com/schema.json"}, "b": {"type": "string"}}}
    assert classify.by_schema({"a": {"x": 1, "y": [2]}, "b": "readable"}, outside) == {"/a/x", "/a/y/0"}
    # a pattern RE2 cannot run covers every key, and the additionalProperties marker too
    lookaround = {"patternProperties": {"^(?!public)": {"x-secret": True}},
                  "additionalProperties": {"properties": {"k": {"x-secret": True}}}}
    assert classify.by_schema({"public": {"k": 1, "j": 2}}, lookaround) == {"/public/k", "/public/j"}


def test_schemas_stored_before_definitions_were_checked_still_classify():
    assert classify.by_schema({"a": 1, "b": 2}, {"id": 5, "definitions": {"d": {"x-secret": True}},
                                                 "properties": {"a": {"$ref": "#/definitions/d"}}}) == {"/a"}
    assert classify.by_schema({"a": 1}, {"properties": {"a": {"id": ["x"], "x-secret": True}}}) == {"/a"}
    assert classify.by_schema({"a": [1]}, {"properties": 3, "items": "x", "allOf": {}, "x-secret": 1}) == set()


SCHEMA_WORDS = st.sampled_from(["properties", "patternProperties", "additionalProperties", "items",
                                "additionalItems", "allOf", "anyOf", "oneOf", "$ref", "id", "definitions",
                                "x-secret", "format", "a", "b", "0", "^a", "(?!a)"])
SCHEMA_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.sampled_from([
    "#", "#/definitions/a", "#/properties/a", "#a", "password", "http://x/", "a", "^a", "[", "(?=a)"]))
ANY_SCHEMA = st.recursive(SCHEMA_VALUES, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(SCHEMA_WORDS, children, max_size=5)), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(SCHEMA_WORDS, ANY_SCHEMA, max_size=6),
       st.recursive(st.integers(), lambda children: st.one_of(
           st.lists(children, max_size=3), st.dictionaries(st.sampled_from(["a", "b", "0"]), children, max_size=3)),
           max_leaves=10))
def test_any_schema_gives_an_answer(schema, document):
    assert classify.by_schema(document, schema) <= set(pointers.leaves(document))


def test_reference_cycles_end():
    assert classify.by_schema({"a": {"a": {"a": 1}}}, {"$ref": "#"}) == set()
    loop = {"definitions": {"x": {"$ref": "#/definitions/y"}, "y": {"allOf": [{"$ref": "#/definitions/x"}]}},
            "$ref": "#/definitions/x"}
    assert classify.by_schema({"a": 1}, loop) == set()


def test_draft4_ids_resolve_inside_the_schema():
    schema = {"id": "http://example.com/root.json", "definitions": {"s": {"id": "#sec", "x-secret": True}},
              "properties": {"a": {"$ref": "#sec"}, "b": {"$ref": "http://example.com/root.json#/definitions/s"}}}
    assert classify.by_schema({"a": 1, "b": 2, "c": 3}, schema) == {"/a", "/b"}


def release_defaults():
    with open(RELEASE_DEFAULTS) as stream:
        return yaml.safe_load(stream)["attributes_metadata"]


def test_nailgun_password_fields_have_their_value_secret_and_their_form_readable():
    assert classify.attribute_pointers(release_defaults()["editable"]) == {"/access/password/value"}
    plugin = {"vmware": {"metadata": {"enabled": True, "versions": [{
        "metadata": {"plugin_version": "1.0"},
        "vc_password": {"type": "text", "value": "by name", "label": "vCenter password"},
        "pin": {"type": "password", "value": {"nested": ["by", "type"]}},
        "vc_host": {"type": "text", "value": "10.0.0.1"},
        "admin_token_ttl": {"type": "number", "value": 3600}}]}},
        "other": {"value": "not a field: no type", "password": "not a field either"}}
    assert classify.attribute_pointers(plugin) == {
        "/vmware/metadata/versions/0/vc_password/value", "/vmware/metadata/versions/0/pin/value/nested/0",
        "/vmware/metadata/versions/0/pin/value/nested/1"}


def test_generated_attributes_are_secret_throughout():
    generated = generate_attributes(release_defaults()["generated"], {"settings.MASTER_IP": "10.20.0.2",
                                                                       "cluster.id": 1})
    secret = classify.every_leaf(generated)
    assert "/mysql/root_password" in secret and "/fuel_uuid" in secret
    assert "/provision/image_data/~1/uri" in secret
    assert secret == set(pointers.leaves(generated)) and len(secret) == 12


# --- generated documents ------------------------------------------------------------------

_is_secret_name = classify.name_matcher(classify.DEFAULT_PATTERNS)
#: key names no default pattern matches, including ones that look close
PLAIN_KEYS = st.one_of(
    st.sampled_from(["token/expiration", "service_token_off", "keystone_authtoken", "passport", "bypass",
                     "public_key", "user", "a/b", "~0", "", "value", "type"]),
    st.text(max_size=8)).filter(lambda key: not _is_secret_name(key))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=10), st.sampled_from(["password", "<secret>", "Mv1yTbAk"]))


def json_documents(keys):
    return st.recursive(SCALARS, lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(keys, children, max_size=4)), max_leaves=25)


@st.composite
def unmarked_schemas(draw, value):
    """A draft-4 schema describing ``value`` through the keywords classification follows, marking nothing."""
    schema = draw(st.sampled_from([{}, {"format": "email"}, {"x-secret": False}, {"x-secret": "true"}]))
    if isinstance(value, dict) and value:
        for key, item in value.items():
            keyword = draw(st.sampled_from(["properties", "additionalProperties", "patternProperties"]))
            sub = draw(unmarked_schemas(item))
            if keyword == "patternProperties":
                schema.setdefault(keyword, {})["^" + re.escape(key) + "$"] = sub
            elif keyword == "additionalProperties":
                schema[keyword] = sub
            else:
                schema.setdefault(keyword, {})[key] = sub
    elif isinstance(value, list) and value:
        schema["items"] = draw(unmarked_schemas(value[0])) if draw(st.booleans()) else [
            draw(unmarked_schemas(item)) for item in value]
    return {"allOf": [schema]} if draw(st.booleans()) else schema


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_document_without_secrets_has_no_secret_pointer(data):
    document = data.draw(json_documents(PLAIN_KEYS))
    schema = data.draw(unmarked_schemas(document))
    jsonschema.Draft4Validator.check_schema(schema)
    assert configdb_secrets.secret_pointers(document, [schema]) == set()
    assert classify.attribute_pointers(document) == set() or _has_password_field(document)


def _has_password_field(value):
    if isinstance(value, dict):
        return value.get("type") == "password" and "value" in value or any(map(_has_password_field, value.values()))
    return isinstance(value, list) and any(map(_has_password_field, value))


KEY_ALPHABET = "abcdefghijklmnoqrsuvwxyz0123456789"  # no p, t or _: no default pattern matches


@st.composite
def marked_documents(draw, definitions, depth=0):
    """(value, schema, secret pointers relative to value): a document with a schema that marks
    random nodes, through properties, patternProperties, additionalProperties, items, $ref and allOf."""
    kind = draw(st.sampled_from(["scalar", "object", "list"] if depth < 3 else ["scalar"]))
    if kind == "scalar":
        value, schema, secret = draw(SCALARS), {}, set()
    elif kind == "object":
        keys = draw(st.lists(st.text(KEY_ALPHABET, min_size=1, max_size=4), unique=True, max_size=4))
        value, schema, secret = {}, {"type": "object"}, set()
        additional = draw(st.sampled_from([None] + keys))
        for key in keys:
            value[key], sub, below = draw(marked_documents(definitions, depth + 1))
            secret.update(pointers.child("", key) + pointer for pointer in below)
            if key == additional:
                schema["additionalProperties"] = sub
            elif draw(st.booleans()):
                schema.setdefault("patternProperties", {})["^" + key + "$"] = sub
            else:
                schema.setdefault("properties", {})[key] = sub
    else:
        items = draw(st.lists(marked_documents(definitions, depth + 1), max_size=4))
        value = [item for item, _, _ in items]
        split = draw(st.integers(0, len(items)))
        schema = {"items": [sub for _, sub, _ in items[:split]]} if split else {}
        if split < len(items):  # the rest under additionalItems, so they must all be marked or all not
            marked = draw(st.booleans())
            schema["additionalItems"] = {"x-secret": True} if marked else {}
            for index, (item, _, below) in enumerate(items):
                if index >= split:
                    below = set(pointers.leaves(item)) if marked else set()
                items[index] = (item, None, below)
        secret = {pointers.child("", index) + pointer
                  for index, (_, _, below) in enumerate(items) for pointer in below}
    if draw(st.integers(0, 4)) == 0:
        schema.update(draw(st.sampled_from([{"x-secret": True}, {"format": "password"}])))
        secret = set(pointers.leaves(value))
    if draw(st.integers(0, 3)) == 0:
        definitions["d{0}".format(len(definitions))] = schema
        schema = {"$ref": "#/definitions/d{0}".format(len(definitions) - 1)}
    elif draw(st.integers(0, 3)) == 0:
        schema = {"allOf": [{}, schema]}
    return value, schema, secret


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_schema_marks_exactly_the_leaves_under_its_marked_nodes(data):
    definitions = {}
    document, schema, expected = data.draw(marked_documents(definitions))
    schema = {"definitions": definitions, "allOf": [schema]}
    jsonschema.Draft4Validator.check_schema(schema)
    assert configdb_secrets.secret_pointers(document, [schema]) == expected


@pytest.mark.parametrize("name", ["admin_key", "mon_key", "bootstrap_osd_key", "radosgw_key", "passphrase",
                                  "ssl_passphrase", "db_pwd", "bind_pw", "access_key", "s3_access_key",
                                  "fernet_keys", "keystone_credential_key"])
def test_fuel_credentials_that_are_not_named_password_are_secret_by_default(name):
    """Ceph's keys in astute.yaml's storage section, and the other usual spellings of credentials."""
    assert classify.by_name({"storage": {name: "AQBvalue=="}}) == {"/storage/" + name}


@pytest.mark.parametrize("schema", [
    {"dependencies": {"a": {"properties": {"b": {"x-secret": True}}}}},
    {"not": {"properties": {"b": {"x-secret": True}}}},
])
def test_a_marker_under_dependencies_or_not_counts(schema):
    """Schema dependencies apply to the whole object; under ``not``, when in doubt, secret."""
    assert classify.by_schema({"a": 1, "b": "DEPSEC"}, schema) == {"/b"}
