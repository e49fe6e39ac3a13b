"""The documented policy, as an operator generates it: ``oslopolicy-sample-generator --namespace nailgun``
prints every rule the enforcer knows with its description and the operations it guards, and every route
of every URL map is guarded by some rule's operations (or is public)."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

from nailgun_host import extensions, policies, policy
from nailgun_host.app import collect_routes

BIN = pathlib.Path(sys.executable).parent
PUBLIC = {"/version", "/health"}


def _generate(tool, tmp_path, settings_text=""):
    config = tmp_path / "settings.yaml"
    config.write_text(settings_text)
    return subprocess.run([str(BIN / tool), "--namespace", "nailgun"], capture_output=True, text=True, check=True,
                          env=dict(os.environ, NAILGUN_CONFIG=str(config)), cwd=tmp_path, timeout=120).stdout


def _sample_blocks(text):
    """rule name -> (comment lines) of the sample: each rule is its comments, then ``#"name": "check"``."""
    blocks, comments = {}, []
    for line in text.splitlines():
        named = re.match(r'#"([^"]+)": ', line)
        if named:
            blocks[named.group(1)] = comments
            comments = []
        elif line.startswith("#"):
            comments.append(line[1:].strip())
        else:
            comments = []
    return blocks


def _words(text):
    return " ".join(text.split())


def test_the_sample_generator_prints_every_rule_the_enforcer_knows_with_description_and_operations(tmp_path):
    blocks = _sample_blocks(_generate("oslopolicy-sample-generator", tmp_path))
    known = policy.enforcer().registered_rules
    assert set(known) == set(blocks) and {"nailgun:read", "nailgun:bypass_patch_policy"} <= set(known)
    documented = {rule.name: rule for rule in policies.list_rules()}
    for name, rule in known.items():
        comments = blocks[name]
        assert _words(rule.description) in _words(" ".join(c for c in comments if not re.match(r"[A-Z]+ +/", c)))
        printed = [tuple(c.split()) for c in comments if re.match(r"[A-Z]+ +/", c)]
        expected = [(op["method"], op["path"]) for op in documented[name].operations]
        assert printed and printed == expected, name


def _route_operations():
    loaded = extensions.get_all_extensions()
    routes, _handlers = collect_routes(loaded)
    for entry in routes:
        if entry["template"] in PUBLIC:
            continue
        for method in entry["handler"].allowed_methods() + ["OPTIONS"]:
            yield method, "/api/v1" + re.sub(r"<([a-z_]+)>", r"{\1}", entry["template"]), entry


def test_every_route_of_every_url_map_is_in_the_operations_of_the_rule_its_handler_names():
    operations = {rule.name: {(op["method"], op["path"]) for op in rule.operations} for rule in policies.list_rules()}
    missing = [(method, path) for method, path, entry in _route_operations()
               if (method, path) not in operations[entry["handler"].policy_rule(method)]]
    assert missing == []
    assert {path for _method, path, _entry in _route_operations()} >= {"/api/v1/config/components",
                                                                       "/api/v1/clusters/{cluster_id}/upgrade"}


def test_a_check_declared_on_a_route_no_url_map_serves_is_refused():
    class Stray(extensions.BaseExtension):
        name, version, description = "stray", "1.0.0", "declares a check on a route nobody serves"

        @classmethod
        def policy_checks(cls):
            return {policy.CHANGE_SECRETS: [("DELETE", "/releases")]}

    loaded = [Stray()]
    routes, _handlers = collect_routes(loaded)
    with pytest.raises(ValueError, match="DELETE /releases"):
        policy.documented(routes, loaded)


def test_the_policy_generator_prints_the_rules_in_force_from_the_policy_file_over_those_in_code(tmp_path):
    """The settings' policy file, named relative to where the command runs as the server reads it."""
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"nailgun:write": "role:admin"\n')
    printed = _generate("oslopolicy-policy-generator", tmp_path, "AUTH:\n  policy_file: policy.yaml\n")
    assert '"nailgun:write": "role:admin"' in printed.splitlines()
    assert '"nailgun:bypass_patch_policy": "rule:admin_required"' in printed.splitlines()


def test_no_module_imports_a_private_module_of_oslo_policy():
    root = pathlib.Path(__file__).resolve().parents[2]
    private = [str(path) for package in ("nailgun_host", "nailgun_platform", "nailgun_ext_upgrade",
                                         "nailgun_ext_configdb") for path in (root / package).rglob("*.py")
               if re.search(r"oslo_policy\._|from oslo_policy import _", path.read_text())]
    assert private == []
