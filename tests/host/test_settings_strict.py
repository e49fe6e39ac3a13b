"""A settings file that gives a key twice is refused, by every command that reads one.

PyYAML keeps the last of two equal keys: an ``AUTH`` section appended below another one
would replace it whole and switch authentication off (issue 24, item 2).
"""
import json
import os
import re
import subprocess
import sys

import pytest
import yaml
from hypothesis import given, settings as settings_profile, strategies as st

from nailgun_host.settings import settings
from nailgun_platform import strict_yaml

BIN = os.path.dirname(sys.executable)
#: a local-mode section, and below it another AUTH a careless operator appended
REPEATED_AUTH = """AUTH:
  method: local
  users_file: /nowhere/users.yaml
LOG: {level: INFO}
AUTH: {policy_file: policy.yaml}
"""
MESSAGE = "{0}: AUTH is given twice (lines 1 and 5): give each setting once; the second would silently replace the first"
#: every console script that reads a settings file, as an operator calls it
COMMANDS = [("nailgun-api", ["--port", "1"]), ("nailgun-syncdb", []), ("nailgun-users", ["list"]),
            ("nailgun-secrets", ["status"]), ("nailgun-feed", ["--port", "1"])]


@pytest.fixture
def repeated_auth(tmp_path):
    path = tmp_path / "settings.yaml"
    path.write_text(REPEATED_AUTH)
    return str(path)


def _environ(**extra):
    environ = {key: value for key, value in os.environ.items() if key not in ("NAILGUN_CONFIG", "NAILGUN_DB_URL")}
    environ.update(extra)
    return environ


@pytest.mark.parametrize("script, arguments", COMMANDS, ids=[script for script, _ in COMMANDS])
def test_every_command_refuses_a_repeated_key_in_one_line(script, arguments, repeated_auth):
    for how in (["--config", repeated_auth], []):  # the option, or NAILGUN_CONFIG
        ran = subprocess.run([os.path.join(BIN, script)] + how + arguments, env=_environ(NAILGUN_CONFIG=repeated_auth),
                             capture_output=True, text=True, timeout=60)
        assert ran.returncode == 1, ran.stdout + ran.stderr
        assert ran.stderr.splitlines() == ["{0}: error: cannot read the settings file: {1}".format(
            script, MESSAGE.format(repeated_auth))], ran.stderr
        assert ran.stdout == ""


def test_the_wsgi_module_refuses_to_import_with_a_repeated_key(repeated_auth):
    ran = subprocess.run([sys.executable, "-c", "import nailgun_host.wsgi"], env=_environ(NAILGUN_CONFIG=repeated_auth),
                         capture_output=True, text=True, timeout=60)
    assert ran.returncode == 1
    assert ran.stderr.splitlines()[-1] == "ValueError: " + MESSAGE.format(repeated_auth), ran.stderr


def test_the_same_sections_given_once_are_read(tmp_path):
    path = tmp_path / "settings.yaml"
    path.write_text(REPEATED_AUTH.replace("LOG: {level: INFO}\nAUTH: {policy_file: policy.yaml}\n",
                                          "  policy_file: policy.yaml\nLOG: {level: INFO}\n"))
    try:
        assert settings.reload(str(path))["AUTH"]["method"] == "local"
        assert settings["AUTH"]["policy_file"] == "policy.yaml"
    finally:
        settings.reload()


def test_a_yaml_merge_may_override_the_keys_it_brings():
    assert strict_yaml.load("base: &b {x: 1, y: 2}\nuse:\n  <<: *b\n  x: 3\n") == {
        "base": {"x": 1, "y": 2}, "use": {"x": 3, "y": 2}}


@pytest.mark.parametrize("text, message", [
    ("a: {b: 1, b: 2}", "a.b is given twice (lines 1 and 1)"),
    ("a:\n  - {c: 1}\n  - c: 1\n    c: 2\n", "a.1.c is given twice (lines 3 and 4)"),
    ("1: x\n1.0: y\n", "1.0 is given twice (lines 1 and 2)"),
])
def test_a_repeated_key_in_any_form(text, message):
    with pytest.raises(strict_yaml.DuplicateKey, match=re.escape(message)):
        strict_yaml.load(text)


# -- any mapping, any depth -------------------------------------------------------------------------

KEYS = st.text("abcdkqz", min_size=1, max_size=3)  # no YAML 1.1 boolean (yes, no, on, off) among them
SCALARS = st.one_of(st.integers(-5, 5), st.text("xyz 0", max_size=4), st.none())
TREES = st.recursive(SCALARS, lambda children: st.dictionaries(KEYS, children, min_size=1, max_size=4), max_leaves=12)


def _lines(pairs, indent=0):
    """Block YAML of ``pairs`` (a list of (key, value): a key may come twice); values: scalars or pair lists."""
    for key, value in pairs:
        if isinstance(value, list):
            yield "{0}{1}:".format(" " * indent, key)
            yield from _lines(value, indent + 2)
        else:
            yield "{0}{1}: {2}".format(" " * indent, key, json.dumps(value))


def _pairs(tree):
    return [(key, _pairs(value) if isinstance(value, dict) else value) for key, value in tree.items()]


def _mappings(pairs, path=()):
    """``[(dotted path, pairs)]`` of every mapping in ``pairs``, itself first."""
    found = [(path, pairs)]
    for key, value in pairs:
        if isinstance(value, list):
            found.extend(_mappings(value, path + (key,)))
    return found


@settings_profile(max_examples=300, deadline=None)
@given(tree=st.dictionaries(KEYS, TREES, min_size=1, max_size=4), data=st.data())
def test_a_key_repeated_at_any_depth_is_refused_naming_it_and_both_lines(tree, data):
    pairs = _pairs(tree)
    text = "\n".join(_lines(pairs)) + "\n"
    assert strict_yaml.load(text) == yaml.safe_load(text) == tree  # given once, read as PyYAML reads it
    path, mapping = data.draw(st.sampled_from(_mappings(pairs)), label="mapping")
    key = data.draw(st.sampled_from([key for key, _value in mapping]), label="key")
    position = data.draw(st.integers(0, len(mapping)), label="position")
    first = next(index for index, (name, _value) in enumerate(mapping) if name == key)
    position = max(position, first + 1)  # the copy comes after the original, anywhere in the mapping
    mapping.insert(position, (key, data.draw(TREES.map(lambda v: _pairs(v) if isinstance(v, dict) else v))))
    lines = list(_lines(pairs))
    with pytest.raises(strict_yaml.DuplicateKey) as refused:
        strict_yaml.load("\n".join(lines) + "\n")
    found = re.fullmatch(r"(.+) is given twice \(lines (\d+) and (\d+)\): .+", str(refused.value))
    assert found and found.group(1) == ".".join(path + (key,)), str(refused.value)
    pad = " " * (2 * len(path))
    for number in (int(found.group(2)), int(found.group(3))):
        assert re.match(r"{0}{1}:( |$)".format(pad, re.escape(key)), lines[number - 1]), (number, lines)
    assert int(found.group(2)) < int(found.group(3))
