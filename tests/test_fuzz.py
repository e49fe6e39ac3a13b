"""Property-based fuzzing of a live ``nailgun-api`` driven by its own OpenAPI description.

One campaign per database (SQLite, and PostgreSQL in run_tests.sh's second run): a real
``nailgun-api`` on a loopback port, seeded through the API with a release, a cluster with
a node, free nodes, a provisioning task and a ConfigDB component, resource and environment
with values, so that most generated paths name existing objects. Then hypothesis draws
requests from ``GET /api/v1/openapi.json``: an operation, its path parameters (mostly the
seeded ids), a few query parameters, and a body: valid for the operation's request schema
(hypothesis-jsonschema), any JSON, a valid one carrying a raw UTF-8 surrogate, one nested deeper than
the JSON decoder goes, or for
values documents a type-only change of the stored value. Targeted examples of issue 9's
known classes run first through the same checks.

Checks on every answer: no 5xx; JSON (Content-Type and body) unless 204/304; a status the
description lists, and a body conforming to its schema; no SQL in error bodies; no
``Location`` built from the client's ``Host``; ``?key=`` (empty) refused; a values
document reads back exactly as written, JSON types included.

Bounds: derandomized (the same draws on every run), ``NAILGUN_FUZZ_EXAMPLES`` generated
requests in all (default 400), spread evenly over the described operations (every DELETE
last, so the seeded objects live long enough), and the campaign stops drawing after
``NAILGUN_FUZZ_SECONDS`` (default 120).
``-s`` prints the report: requests made, server errors, non-JSON answers, findings by class.

Each finding is put in the issue 9 class it belongs to (``classify``); the known classes
1, 3, 8 and 12, fixed on other branches, have their own xfail tests (``KNOWN``): when a fix
lands, remove its number from ``KNOWN`` so that its test must pass. A finding of no known
class fails ``test_fuzz_finds_nothing_outside_known_classes`` now.
"""
import collections
import json
import os
import re
import time
import urllib.parse

import jsonschema
import pytest
import requests
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis_jsonschema import from_schema

from nailgun_host.console.cookies import LOGIN_COOKIE
from nailgun_host.validation import MAX_ID
from tests.conftest import SUMMARY_LINES, LiveServer, _empty_tables

MAX_EXAMPLES = int(os.environ.get("NAILGUN_FUZZ_EXAMPLES", "400"))
BUDGET_SECONDS = float(os.environ.get("NAILGUN_FUZZ_SECONDS", "120"))
#: issue 9's classes the campaign finds on today's code, each fixed on another branch:
#: remove a number once its fix is merged, and its test below must pass
KNOWN = set()
EVIL_HOST = "evil.example"
SQL_TEXT = re.compile(r"constraint|UNIQUE|duplicate key|violates|INSERT INTO|SELECT |sqlite3|psycopg|"
                      r"_pkey|_key\b|_fkey", re.IGNORECASE)
SURROGATE = "\udc80"
#: a JSON body nested deeper than the decoder's recursion allows (a client's, within every body limit)
TOO_DEEP = b"[" * 20000 + b"]" * 20000
QUERY_NAMES = ("key", "effective", "show_lookup", "version", "from", "to", "nodes", "cluster_id", "ids",
               "force", "extension_names", "component_id")
QUERY_VALUES = ("", "1", "0", "true", "a", "a.b", "-1", str(MAX_ID + 1), "١")
#: routes whose 5xx issue 9 item 1 names (release metadata breaking what uses the release)
CLASS_1_ROUTES = {"/clusters", "/clusters/<cluster_id>/assignment", "/clusters/<cluster_id>/upgrade/clone",
                  "/clusters/<cluster_id>/upgrade/clone_release/<release_id>", "/clusters/<cluster_id>/upgrade/assign",
                  "/clusters/<cluster_id>/orchestrator/deployment/defaults", "/nodes", "/nodes/<node_id>",
                  "/clusters/<cluster_id>/provision", "/clusters/<cluster_id>/deploy", "/clusters/<cluster_id>/changes"}
#: routes whose 5xx from a body issue 9 item 8 names
CLASS_8_ROUTES = {"/clusters/<cluster_id>/network_configuration/<provider>", "/nodes/<node_id>/interfaces",
                  "/config/components/<component_id>", "/config/components"}
DOCUMENT = "/config/environments/<environment_id>/<levels>resources/<resource>/<kind>"


def _template(path):
    """An OpenAPI path back as the URL map's template: ``{x}`` is ``<x>``."""
    return re.sub(r"\{([a-z_]+)\}", r"<\1>", path)


# -- the live server and its seed ----------------------------------------------------------------

class Campaign:
    """Sends requests to the server, checks every answer, and keeps what it found."""

    def __init__(self, base, description, db_url):
        self.base = base
        self.description = description
        #: the server's DATABASE_URL, which no answer may carry (item 1's from_settings)
        self.secret = db_url
        self.http = requests.Session()
        self.requests = 0
        self.server_errors = 0
        self.not_json = 0
        self.findings = []
        self.seed = {}
        self.statuses = collections.Counter()
        self.generated = collections.Counter()
        self.by_route = collections.Counter()
        #: what sends the requests now: "seed", "targeted" or "generated"
        self.phase = "seed"
        #: the console's cookie (authentication is off: the login cookie) and the CSRF token its shell gives
        shell = requests.get(base + "/ui/", timeout=30)
        self.console_headers = {
            "Cookie": "{0}={1}".format(LOGIN_COOKIE, shell.cookies[LOGIN_COOKIE]),
            "X-CSRF-Token": re.search(r'<meta name="csrf-token" content="([^"]+)"', shell.text).group(1)}

    # sending -------------------------------------------------------------------------------
    def call(self, method, path, body=None, query=None, content_type="application/json", template=None,
             poisoned=False, check=True):
        """One request; every answer is checked against the description unless ``check`` is False."""
        # every other generated request goes through the console's mount (/ui/api/v1) with its cookie and CSRF
        # token: the console must add no answer the API's own routes would not give
        console = self.phase == "generated" and self.requests % 2
        url = self.base + ("/ui/api/v1" if console else "/api/v1") + path + (
            ("?" + urllib.parse.urlencode(query)) if query else "")
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode(
                "utf-8", "surrogatepass")
        headers = {"Host": EVIL_HOST, "Content-Type": content_type}
        if console:
            headers.update(self.console_headers)
        self.requests += 1
        try:
            answer = self.http.request(method, url, data=data, headers=headers, allow_redirects=False, timeout=60)
        except requests.RequestException as exc:
            self.found(None, method, path, template, "no answer: {0}".format(exc), poisoned)
            return None
        self.statuses[answer.status_code] += 1
        if check:
            self.check(answer, method, path, template or path, query or {}, poisoned)
        return answer

    def found(self, answer, method, path, template, problem, poisoned=False, cls=None):
        finding = {"method": method, "path": path, "template": template, "problem": problem,
                   "status": getattr(answer, "status_code", None), "poisoned": poisoned,
                   "answer": getattr(answer, "text", "")[:200], "phase": self.phase}
        finding["class"] = cls if cls is not None else classify(finding)
        self.findings.append(finding)

    # checking ------------------------------------------------------------------------------
    def operation(self, template, method):
        for path, item in self.description["paths"].items():
            if _template(path) == template:
                return item.get(method.lower())
        return None

    def check(self, answer, method, path, template, query, poisoned):
        status = answer.status_code
        if status >= 500:
            self.server_errors += 1
            self.found(answer, method, path, template, "server error {0}".format(status), poisoned)
        if status in (204, 304):
            if answer.content:
                self.found(answer, method, path, template, "a body with {0}".format(status), poisoned)
            data = None
        else:
            try:
                if not answer.headers.get("Content-Type", "").startswith("application/json"):
                    raise ValueError(answer.headers.get("Content-Type"))
                data = answer.json()
            except ValueError:
                self.not_json += 1
                self.found(answer, method, path, template, "not JSON", poisoned)
                return
        operation = self.operation(template, method)
        if operation is None:
            self.found(answer, method, path, template, "not in the description", poisoned)
            return
        responses = operation["responses"]
        described = responses.get(str(status)) or responses.get("{0}XX".format(str(status)[0]))
        if described is None:
            self.found(answer, method, path, template, "undescribed status {0}".format(status), poisoned)
        elif data is not None:
            schema = described.get("content", {}).get("application/json", {}).get("schema")
            if schema == {"$ref": "#/components/schemas/Error"}:
                schema = self.description["components"]["schemas"]["Error"]
            try:
                jsonschema.validate(data, schema or {})
            except jsonschema.ValidationError as exc:
                self.found(answer, method, path, template, "nonconforming answer: {0}".format(exc.message), poisoned)
        if status >= 400 and SQL_TEXT.search(answer.text):
            self.found(answer, method, path, template, "SQL in the error body", poisoned, cls=12)
        if self.secret and self.secret in answer.text:
            self.found(answer, method, path, template, "a server setting (the database URL) leaked", poisoned, cls=1)
        if EVIL_HOST in answer.headers.get("Location", ""):
            self.found(answer, method, path, template, "Location built from the client's Host", poisoned, cls=12)
        if template == DOCUMENT and method == "GET" and query.get("key") == "" and status == 200:
            self.found(answer, method, path, template, "?key= (empty) answered the whole document", poisoned, cls=12)

    def check_stored(self, path, sent):
        """A values document PUT with 204 reads back exactly as sent, JSON types included (item 3)."""
        answer = self.call("GET", path, template=DOCUMENT)
        if answer is not None and answer.status_code == 200:
            stored = answer.json()
            if json.dumps(stored, sort_keys=True) != json.dumps(sent, sort_keys=True):
                self.found(answer, "PUT", path, DOCUMENT, "stored {0} after a 204 for {1}".format(
                    json.dumps(stored)[:80], json.dumps(sent)[:80]), cls=3)

    # the report ----------------------------------------------------------------------------
    def report(self):
        lines = ["fuzz: {0} requests, {1} server errors, {2} non-JSON answers, {3} findings; statuses {4}; "
                 "generated requests by status {5}".format(
                     self.requests, self.server_errors, self.not_json, len(self.findings),
                     dict(sorted(self.statuses.items())), dict(sorted(self.generated.items())))]
        seen = set()
        for finding in self.findings:
            key = (finding["class"], finding["phase"], finding["method"], finding["template"], finding["problem"][:40])
            if key not in seen:
                seen.add(key)
                lines.append("  class {0} ({1}): {2} {3}: {4}".format(
                    finding["class"], finding["phase"], finding["method"], finding["template"],
                    finding["problem"][:120]))
        return "\n".join(lines)


def classify(finding):
    """The issue 9 item a finding belongs to, or None when it is of no known class."""
    if finding["poisoned"]:
        return 8  # a raw UTF-8 surrogate in the body
    if finding["problem"].startswith("server error"):
        if finding["template"] in CLASS_8_ROUTES:
            return 8
        if finding["template"] in CLASS_1_ROUTES:
            return 1
    return None


def seed(campaign):
    """Objects for the generated paths to name; every id the strategies prefer."""
    def call(method, path, body=None, query=None):
        answer = campaign.call(method, path, body, query, check=False)
        assert answer is not None and answer.status_code < 300, (method, path, getattr(answer, "text", None))
        return answer

    release = call("POST", "/releases", {"name": "fuzz", "version": "9.0-fuzz", "operating_system": "Ubuntu"}).json()
    cluster = call("POST", "/clusters", {"name": "fuzz-1", "release_id": release["id"]}).json()
    nodes = []
    for number in range(3):
        mac = "52:54:00:00:fa:{0:02x}".format(number)
        nodes.append(call("POST", "/nodes", {"mac": mac, "meta": {
            "interfaces": [{"name": "eth0", "mac": mac, "pxe": True}],
            "disks": [{"name": "sda", "size": 100 * 1024 ** 3}]}}).json())
    call("POST", "/clusters/{0}/assignment".format(cluster["id"]), [{"id": nodes[0]["id"], "roles": ["controller"]}])
    task = call("PUT", "/clusters/{0}/provision".format(cluster["id"])).json()
    nodegroup = call("GET", "/nodegroups", query={"cluster_id": cluster["id"]}).json()[0]
    component = call("POST", "/config/components", {"name": "fuzz-comp", "resource_definitions": [
        {"name": "fuzz-res", "content": {}}]}).json()
    resource = component["resource_definitions"][0]
    environment = call("POST", "/config/environments", {"components": [component["id"]],
                                                        "hierarchy_levels": ["nodes"]}).json()
    call("PUT", "/config/environments/{0}/resources/{1}/values".format(environment["id"], resource["id"]),
         {"debug": True, "list": [1, 2]})
    campaign.seed = {
        "release_id": [release["id"]], "cluster_id": [cluster["id"]], "node_id": [n["id"] for n in nodes],
        "nodegroup_id": [nodegroup["id"]], "task_id": [task["id"]], "component_id": [component["id"]],
        "resource_definition_id": [resource["id"]], "environment_id": [environment["id"]],
        "provider": ["neutron", "nova_network"], "kind": ["values", "overrides", "override"],
        "operation": ["set", "delete"], "resource": [str(resource["id"]), "fuzz-res", "999"],
        "levels": ["", "nodes/{0}/".format(nodes[0]["id"]), "nodes/x/"],
        "path": ["editable", "nodes", "networks", "name", "nope/0"],
    }


# -- targeted examples of the known classes -----------------------------------------------------

def targeted(campaign):
    """Issue 9's known classes, each by the example its text gives, through the same checks."""
    call, seeded = campaign.call, campaign.seed
    cluster, node = seeded["cluster_id"][0], seeded["node_id"][0]
    env, resource, component = (seeded["environment_id"][0], seeded["resource_definition_id"][0],
                                seeded["component_id"][0])
    values = "/config/environments/{0}/resources/{1}/values".format(env, resource)
    # 1: releases read any server setting; malformed metadata breaks what uses the release later
    free_nodes = iter(seeded["node_id"][1:])
    for number, generated in enumerate(({"leak": {"generator": "from_settings", "generator_arg": "DATABASE_URL"},
                                         "deployment_id": {"generator": "from_settings",
                                                           "generator_arg": "DATABASE_URL"}},
                                        {"x": {"generator": "no-such-generator"}},
                                        {"x": {"generator": "password", "length": "abc"}})):
        release = call("POST", "/releases", {"name": "fuzz-meta-{0}".format(number), "version": "9.0",
                                              "operating_system": "Ubuntu",
                                              "attributes_metadata": {"generated": generated, "editable": {}}},
                       template="/releases")
        if release is not None and release.status_code == 201:
            created = call("POST", "/clusters", {"name": "fuzz-meta-{0}".format(number),
                                                 "release_id": release.json()["id"]}, template="/clusters")
            if created is not None and created.status_code == 201 and number == 0:
                call("POST", "/clusters/{0}/assignment".format(created.json()["id"]),
                     [{"id": next(free_nodes), "roles": ["controller"]}], template="/clusters/<cluster_id>/assignment")
                call("GET", "/clusters/{0}/orchestrator/deployment/defaults".format(created.json()["id"]),
                     template="/clusters/<cluster_id>/orchestrator/deployment/defaults")
    release = call("POST", "/releases", {"name": "fuzz-roles", "version": "9.0", "operating_system": "Ubuntu",
                                          "roles_metadata": {"controller": "a string"}}, template="/releases")
    if release is not None and release.status_code == 201:
        created = call("POST", "/clusters", {"name": "fuzz-roles", "release_id": release.json()["id"]},
                       template="/clusters")
        if created is not None and created.status_code == 201:
            call("POST", "/clusters/{0}/assignment".format(created.json()["id"]),
                 [{"id": next(free_nodes), "roles": ["controller"]}], template="/clusters/<cluster_id>/assignment")
    # 3: a write that only changes a JSON type
    for before, after in (({"debug": 1}, {"debug": True}), ({"n": 0}, {"n": False}), ({"n": 1}, {"n": 1.0})):
        for sent in (before, after):
            answer = call("PUT", values, sent, template=DOCUMENT)
            if answer is not None and answer.status_code == 204:
                campaign.check_stored(values, sent)
    # 3 through a batch: each document reads back as sent
    batch = "/config/environments/{0}/documents".format(env)
    for sent in ({"debug": 1}, {"debug": True}, {"n": 1.0}):
        answer = call("POST", batch, {"documents": [{"resource": resource, "data": sent}]},
                      template="/config/environments/<environment_id>/documents")
        if answer is not None and answer.status_code == 200:
            campaign.check_stored(values, sent)
    # 8: raw surrogate bytes, a /32 CIDR, an object as a bond slave's name, an empty resource definition
    call("PUT", "/clusters/{0}".format(cluster), {"name": "fuzz" + SURROGATE}, template="/clusters/<cluster_id>",
         poisoned=True)
    call("PUT", values, {"name": "fuzz" + SURROGATE}, template=DOCUMENT, poisoned=True)
    call("POST", "/config/components", {"name": "c" + SURROGATE}, template="/config/components", poisoned=True)
    networks = call("GET", "/clusters/{0}/network_configuration/neutron".format(cluster), check=False)
    if networks is not None and networks.status_code == 200 and networks.json().get("networks"):
        call("PUT", "/clusters/{0}/network_configuration/neutron".format(cluster),
             {"networks": [{"id": networks.json()["networks"][0]["id"], "cidr": "10.20.0.1/32"}]},
             template="/clusters/<cluster_id>/network_configuration/<provider>")
    call("PUT", "/nodes/{0}/interfaces".format(node), [
        {"name": "bond0", "type": "bond", "slaves": [{"name": {"an": "object"}}], "assigned_networks": []}],
         template="/nodes/<node_id>/interfaces")
    call("PUT", "/config/components/{0}".format(component), {"resource_definitions": [{}]},
         template="/config/components/<component_id>")
    # 12: SQL in a 409, a Location from the client's Host, ?key= (empty)
    call("POST", "/releases", {"name": "fuzz", "version": "9.0-fuzz", "operating_system": "Ubuntu"},
         template="/releases")
    call("PUT", "/config/environments/{0}/resources/fuzz-res/values".format(env), {"a": 1}, template=DOCUMENT)
    call("GET", values, query={"key": ""}, template=DOCUMENT)
    taken = env + 2  # an explicit id ahead of the sequence, then id-less creations that reach it
    call("POST", "/config/environments", {"id": taken, "components": [], "hierarchy_levels": []},
         template="/config/environments")
    for _ in range(3):
        call("POST", "/config/environments", {"components": [], "hierarchy_levels": []},
             template="/config/environments")


# -- generated requests ---------------------------------------------------------------------------

def json_values():
    scalars = st.none() | st.booleans() | st.integers(-2 ** 40, 2 ** 40) | st.floats(
        allow_nan=False, allow_infinity=False) | st.text(max_size=20)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.text(max_size=8), inner, max_size=4), max_leaves=12)


#: bodies that differ from one another by JSON type only (1, 1.0, true): item 3's class
TYPE_FLIPS = st.dictionaries(st.sampled_from(["debug", "n"]), st.sampled_from([0, 1, 1.0, True, False, None]),
                             min_size=1, max_size=2)


def _poison(value):
    """``value`` with a raw surrogate appended to its first string (key or value); None when it has none."""
    if isinstance(value, str):
        return value + SURROGATE
    if isinstance(value, list):
        for index, item in enumerate(value):
            poisoned = _poison(item)
            if poisoned is not None:
                return value[:index] + [poisoned] + value[index + 1:]
    if isinstance(value, dict):
        for key, item in value.items():
            poisoned = _poison(item)
            if poisoned is not None:
                return dict(value, **{key: poisoned})
        if value:
            key = next(iter(value))
            return {(k + SURROGATE if k == key else k): v for k, v in value.items()}
    return None


def generable(schema, depth=3):
    """``schema`` with its local ``#/definitions/`` references unfolded ``depth`` levels deep, then any JSON.

    hypothesis-jsonschema cannot draw from a recursive schema (release metadata's generated values are one).
    """
    definitions = schema.get("definitions", {}) if isinstance(schema, dict) else {}

    def unfold(node, level):
        if isinstance(node, dict):
            ref = node.get("$ref", "")
            if ref.startswith("#/definitions/"):
                return unfold(definitions[ref.rsplit("/", 1)[1]], level + 1) if level < depth else {}
            return {key: unfold(value, level) for key, value in node.items() if key != "definitions"}
        if isinstance(node, list):
            return [unfold(value, level) for value in node]
        return node

    return unfold(schema, 0)


def requests_of(campaign, operations):
    """A strategy of ``(method, template, path, query, body, content_type, poisoned)`` over ``operations``."""
    def parameter(spec):
        choices = campaign.seed.get(spec["name"])
        generated = from_schema(spec["schema"]).map(str)
        if not choices:
            return generated
        return st.integers(0, 9).flatmap(lambda n: generated if n == 9 else st.sampled_from(choices).map(str))

    def body(schema):
        valid = from_schema(generable(schema))
        choices = [valid, valid, valid, json_values(), valid.map(lambda v: (_poison(v), True)),
                   st.just((TOO_DEEP, False))]
        if schema == {"type": "object"}:
            choices.extend([TYPE_FLIPS, TYPE_FLIPS])
        return st.one_of(*choices).map(lambda v: v if isinstance(v, tuple) else (v, False))

    def for_operation(item):
        path, method, operation = item
        parameters = operation.get("parameters", [])
        content = operation.get("requestBody", {}).get("content", {})
        media_type = "application/json" if "application/json" in content or not content else next(iter(content))
        bodies = body(content[media_type]["schema"]) if content else st.just((None, False))
        query = st.dictionaries(st.sampled_from(QUERY_NAMES), st.sampled_from(
            QUERY_VALUES + tuple(str(i) for i in campaign.seed.get("node_id", []))), max_size=2)
        return st.tuples(st.just(method.upper()), st.just(_template(path)),
                         st.fixed_dictionaries({p["name"]: parameter(p) for p in parameters}), query, bodies,
                         st.just(media_type))

    return st.sampled_from(operations).flatmap(for_operation)


def fill(template, values):
    path = template
    for name, value in values.items():
        if name == "levels":
            path = path.replace("<levels>", value)
        else:
            path = path.replace("<{0}>".format(name), urllib.parse.quote(value, safe="/") if name != "path" else value)
    return path


def fuzz(campaign, operations, examples, deadline):
    """``examples`` generated requests to each of ``operations``, one derandomized hypothesis run each."""
    for operation in operations:
        if time.monotonic() < deadline:
            _fuzz_operation(campaign, operation, examples, deadline)


def _fuzz_operation(campaign, operation, examples, deadline):
    @hypothesis_settings(max_examples=examples, derandomize=True, deadline=None, database=None,
                         phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(requests_of(campaign, [operation]))
    def run(case):
        method, template, values, query, (body, poisoned), media_type = case
        if time.monotonic() > deadline or body is None and poisoned:
            return
        path = fill(template, values)
        answer = campaign.call(method, path, body, query, media_type, template=template, poisoned=poisoned)
        campaign.generated[getattr(answer, "status_code", None)] += 1
        campaign.by_route[(method, template, getattr(answer, "status_code", None))] += 1
        if (answer is not None and answer.status_code == 204 and template == DOCUMENT and method == "PUT"
                and not poisoned and values.get("resource", "").isdigit()):
            campaign.check_stored(path, body)

    run()


@pytest.fixture(scope="module")
def campaign(migrated_db, db_url):
    engine, tables = migrated_db
    _empty_tables(engine, tables)
    server = LiveServer(db_url)
    try:
        base = server.url
        description = requests.get(base + "/api/v1/openapi.json", timeout=30).json()
        found = Campaign(base, description, db_url)
        seed(found)
        found.phase = "targeted"
        targeted(found)
        found.phase = "generated"
        operations = [(path, method, operation) for path, item in sorted(description["paths"].items())
                      for method, operation in sorted(item.items())]
        deadline = time.monotonic() + BUDGET_SECONDS
        each = max(2, MAX_EXAMPLES // len(operations))
        fuzz(found, [o for o in operations if o[1] != "delete"], each, deadline)
        fuzz(found, [o for o in operations if o[1] == "delete"], each, deadline)
        SUMMARY_LINES.extend(found.report().splitlines())
        yield found
    finally:
        server.stop()


def test_fuzz_finds_nothing_outside_known_classes(campaign):
    assert sum(campaign.generated.values()) >= len(campaign.description["paths"])
    unknown = [f for f in campaign.findings if f["class"] not in KNOWN]
    assert not unknown, campaign.report()


def _class_test(number, reason):
    marks = [pytest.mark.xfail(strict=False, reason=reason)] if number in KNOWN else []

    @pytest.mark.parametrize("item", [pytest.param(number, marks=marks)])
    def test(campaign, item):
        found = [f for f in campaign.findings if f["class"] == item]
        assert not found, campaign.report()

    return test


test_fuzz_class_1_release_metadata = _class_test(1, "issue 9 item 1, fixed on another branch")
test_fuzz_class_3_json_types = _class_test(3, "issue 9 item 3, fixed on another branch")
test_fuzz_class_8_bodies = _class_test(8, "issue 9 item 8, fixed on another branch")
test_fuzz_class_12_leaks = _class_test(12, "issue 9 item 12, fixed on another branch")
