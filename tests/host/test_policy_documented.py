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


@pytest.mark.parametrize("policy_text, refusal", [
    (None, "cannot read the policy file policy.yaml"),
    ('"nailgun:writ": "role:admin"\n', "names rules that do not exist and that no rule refers to: nailgun:writ"),
])
def test_the_policy_generator_refuses_a_policy_file_the_server_would_refuse(tmp_path, policy_text, refusal):
    """Else it would print the rules in code as those in force, while the server does not start."""
    if policy_text is not None:
        (tmp_path / "policy.yaml").write_text(policy_text)
    (tmp_path / "settings.yaml").write_text("AUTH:\n  policy_file: policy.yaml\n")
    done = subprocess.run([str(BIN / "oslopolicy-policy-generator"), "--namespace", "nailgun"], capture_output=True,
                          text=True, env=dict(os.environ, NAILGUN_CONFIG=str(tmp_path / "settings.yaml")),
                          cwd=tmp_path, timeout=120)
    assert done.returncode != 0 and refusal in done.stderr and '"nailgun:write"' not in done.stdout


def test_no_module_imports_a_private_module_of_oslo_policy():
    root = pathlib.Path(__file__).resolve().parents[2]
    private = [str(path) for package in ("nailgun_host", "nailgun_platform", "nailgun_ext_upgrade",
                                         "nailgun_ext_configdb") for path in (root / package).rglob("*.py")
               if re.search(r"oslo_policy\._|from oslo_policy import _", path.read_text())]
    assert private == []


PATCH_TYPE = "application/json-patch+json"
#: a definition with a secret and a patch policy, so that writes ask every rule a document write asks
CONTENT = {"schema": {"type": "object", "properties": {"pin": {"type": "string", "x-secret": True}}},
           "x-patch-policy": {"/pin": ["replace"]}}


def _scenario(app):
    """Requests that reach the checks handlers ask inside (as an identity every rule allows)."""
    release = app.post_json("/api/v1/releases/", {"name": "Mitaka", "version": "mitaka-9.0",
                                                  "operating_system": "Ubuntu"}).json
    app.get("/api/v1/releases/")
    app.put_json("/api/v1/releases/{0}".format(release["id"]), {"name": "Mitaka 2"}, expect_errors=True)
    cluster = app.post_json("/api/v1/clusters/", {"name": "env-1", "release_id": release["id"]}).json
    attributes = "/api/v1/clusters/{0}/attributes".format(cluster["id"])
    editable = app.get(attributes).json["editable"]
    app.put_json(attributes, {"editable": editable}, expect_errors=True)
    app.get("/api/v1/clusters/{0}/model".format(cluster["id"]))
    sid = app.post_json("/api/v1/clusters/{0}/configure".format(cluster["id"]), {}).json["id"]
    app.get("/api/v1/clusters/{0}/sessions".format(cluster["id"]))
    app.get("/api/v1/clusters/{0}/sessions/{1}/diff".format(cluster["id"], sid))
    app.post("/api/v1/clusters/{0}/sessions/{1}/deploy".format(cluster["id"], sid), expect_errors=True)
    component = app.post_json("/api/v1/config/components", {"name": "c", "resource_definitions": [
        {"name": "db", "content": CONTENT}]}).json
    rid = component["resource_definitions"][0]["id"]
    app.post_json("/api/v1/config/environments", {"components": ["c"], "hierarchy_levels": []})
    url = "/api/v1/config/environments/1/resources/{0}/values".format(rid)
    app.put_json(url, {"pin": "1234"}, headers={"If-Match": "*"})
    app.patch(url, '[{"op": "replace", "path": "/pin", "value": "4321"}]', headers={"Content-Type": PATCH_TYPE})
    app.get(url)
    app.get(url + "/diff?from=1&to=2")
    app.post_json(url + "/revert", {"version": 1})
    app.patch_json(url + "/keys/set", [["pin", "0000"]], expect_errors=True)
    sid = app.post_json("/api/v1/config/environments/1/configure", {}).json["id"]
    app.put_json(url, {"pin": "5555"}, headers={"X-Configuration-Session": sid})
    app.post("/api/v1/config/environments/1/sessions/{0}/deploy".format(sid))
    app.put_json("/api/v1/config/resource_definitions/{0}".format(rid), {"content": dict(CONTENT, schema={})})
    app.put_json("/api/v1/config/environments/1/pins/db", {"version": "latest", "dry_run": True}, expect_errors=True)
    app.delete("/api/v1/config/resource_definitions/{0}".format(rid), expect_errors=True)


def test_every_rule_a_handler_asks_inside_is_documented_on_its_route(migrated_db, tmp_path, monkeypatch):
    """The documented operations of the checks inside handlers (``policy_checks``) are what they ask: a spy
    on the policy records each rule asked during requests, by route, as an identity every rule allows."""
    import webtest

    from nailgun_host.app import build_wsgi
    from nailgun_host.settings import settings
    from tests.auth import basic, write_users_file

    users = write_users_file(str(tmp_path / "users.yaml"), {"lcm": ("lcm-pw", ["admin", "service"])})
    monkeypatch.setitem(settings, "AUTH", dict(settings["AUTH"], method="local", users_file=users))
    routes, _handlers = collect_routes(extensions.get_all_extensions())
    current, asked, allowed = {}, set(), policy.allowed

    def recording(environ, start_response):
        current["request"] = environ["REQUEST_METHOD"], environ["PATH_INFO"]
        return inner(environ, start_response)

    def spy(rule, identity):
        method, path = current["request"]
        entry = next(e for e in routes if re.fullmatch("/api/v1" + e["uri"], path))
        asked.add((rule, method, "/api/v1" + re.sub(r"<([a-z_]+)>", r"{\1}", entry["template"])))
        return allowed(rule, identity)

    inner = build_wsgi()
    monkeypatch.setattr(policy, "allowed", spy)
    _scenario(webtest.TestApp(recording, extra_environ={"HTTP_AUTHORIZATION": basic("lcm", "lcm-pw")[
        "Authorization"], "HTTP_X_CONFIG_AUTHOR": "alice"}))
    documented = {(rule.name, op["method"], op["path"]) for rule in policies.list_rules() for op in rule.operations}
    assert {rule for rule, _method, _path in asked} >= {
        "nailgun:read_secrets", "nailgun:change_secrets", "nailgun:act_for_others", "nailgun:bypass_patch_policy",
        "nailgun:admin"}
    assert sorted(asked - documented) == []
