"""The docs stay true: README.md and every page of docs/, their API tables, settings, paths, links and console
sessions, checked.

- Routes: every (method, URL template) of the core's and the extensions' URL maps is a
  row of an API table (``| method | path | body | answer |``) of a page, and every row is a route.
- Settings: every key of ``nailgun_host.settings.all_defaults()`` (the host's and the extensions' declared sections)
  is a row of the table of docs/operator/configuration.md, with its real default; every row is
  a setting, and so is every ``SECTION.key`` any page names.
- Paths and links: every file of the repository a page names exists, and every relative link
  leads to a page, and a heading of it, that exist.
- Sessions: every ```console block runs in bash, command by command, against a real
  ``nailgun-api`` on an empty database, and prints what the page prints (``…`` stands
  for any text). The blocks of one page form one session on one server.
"""
import ast
import importlib.util
import os
import re
import selectors
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from nailgun_host.auth import local
from nailgun_host.extensions import get_all_extensions
from nailgun_host.settings import all_defaults
from nailgun_host.urls import URLS
from nailgun_platform.client.base import DEFAULTS as CLIENT_DEFAULTS
from tests.conftest import LiveServer

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
#: the pages named by what a test reads in them
CONFIGURATION = "docs/operator/configuration.md"
PRODUCTION = "docs/operator/production.md"
AUTH = "docs/operator/auth-and-tls.md"
SECRETS = "docs/operator/secrets.md"
CORE_API, UPGRADE_API, CONFIGDB_API = "docs/api/core.md", "docs/api/upgrade.md", "docs/api/configdb.md"
CLIENT_PAGES = ("docs/api/upgrade.md", "docs/clients/README.md", "docs/clients/fuel2.md")

API_TABLE_HEADER = ("method", "path", "body", "answer")
SETTINGS_TABLE_HEADER = ("setting", "meaning", "default")
IGNORED_METHODS = ("HEAD", "OPTIONS")

#: pages whose console blocks must exist and run (a block turned into ```text by
#: mistake would otherwise silently stop being checked)
SESSIONS = ("README.md", UPGRADE_API, CONFIGDB_API, AUTH, SECRETS, "docs/api/sessions.md", "docs/api/json-patch.md",
            "docs/api/deployments.md", "docs/api/change-feed.md", "docs/api/versions-and-pins.md")
#: pages whose session runs against a server with these settings (in ``settings.yaml``,
#: which ``NAILGUN_CONFIG`` names for the session's commands too); paths are under the session's directory
SESSION_SETTINGS = {name: {"AUTH": {"method": "local", "users_file": "users.yaml"}}
                    for name in (AUTH, SECRETS, "docs/api/json-patch.md")}
#: the server address the pages' commands use, replaced by the test server's
DOCS_ADDRESS = "127.0.0.1:8000"
#: the top of the repository's own tree: a code span starting with one of these names a file that must exist
REPOSITORY_TOPS = ("nailgun_host/", "nailgun_platform/", "nailgun_ext_upgrade/", "nailgun_ext_configdb/", "tests/",
                   "benchmarks/", "specs/", "packaging/", "docs/", ".ci/")
ELLIPSIS = "…"


# -- reading the pages ------------------------------------------------------------------

def pages():
    """The names (paths from the repository's top) of README.md and every page of docs/."""
    return ["README.md"] + sorted(str(path.relative_to(ROOT)) for path in DOCS.rglob("*.md"))


def page(name):
    """The text of the page ``name`` (a path from the repository's top, as ``pages()`` gives it)."""
    return (ROOT / name).read_text()


def all_pages():
    """The text of every page, one after the other."""
    return "\n".join(page(name) for name in pages())


def fenced_blocks(text):
    """``[(info string, content)]`` of the fenced code blocks in ``text``."""
    return [(m.group(1).strip(), m.group(2))
            for m in re.finditer(r"^```([^\n]*)\n(.*?)^```[ \t]*$", text, re.S | re.M)]


def _cells(line):
    # A "|" inside a code span written as "\|" belongs to the cell.
    return [cell.strip().replace(r"\|", "|") for cell in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def tables(text, header):
    """The rows (lists of cells) of every Markdown table in ``text`` whose header is ``header``."""
    found, lines = [], text.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("|") and tuple(c.lower() for c in _cells(line)) == header:
            rows = []
            for row in lines[index + 2:]:
                if not row.startswith("|"):
                    break
                cells = _cells(row)
                assert len(cells) == len(header), "A table row has {0} cells, not {1}: {2}".format(
                    len(cells), len(header), row)
                rows.append(cells)
            found.append(rows)
    return found


def code_spans(cell):
    return re.findall(r"`([^`]+)`", cell)


# -- routes --------------------------------------------------------------------------------

def url_maps():
    """``{(method, template): owner}`` of the core and every loaded extension."""
    routes = {}
    for owner, urls in [("core", URLS)] + [(e.name, e.urls) for e in get_all_extensions()]:
        for entry in urls:
            for method in entry["handler"].allowed_methods():
                if method not in IGNORED_METHODS:
                    routes[(method, entry["template"])] = owner
    return routes


def documented_routes(text=None):
    """``[(method, path)]`` of every row of every API table of every page (or of ``text``), in order."""
    text = all_pages() if text is None else text
    found = []
    for rows in tables(text, API_TABLE_HEADER):
        for methods, path, _body, _answer in rows:
            paths = code_spans(path)
            assert len(paths) == 1 and path == "`{0}`".format(paths[0]), (
                "An API table's path cell holds one `template`, not {0!r}".format(path))
            for method in methods.split(","):
                found.append((method.strip(), paths[0]))
    return found


def test_the_docs_have_an_api_table_for_the_core_and_each_extension():
    for name in (CORE_API, UPGRADE_API, CONFIGDB_API):
        assert tables(page(name), API_TABLE_HEADER), "no API table on " + name


def test_every_route_is_in_a_readme_api_table():
    documented = set(documented_routes())
    missing = ["{0} {1} ({2})".format(method, template, owner)
               for (method, template), owner in sorted(url_maps().items()) if (method, template) not in documented]
    assert not missing, "Routes the docs' API tables do not list:\n" + "\n".join(missing)


def test_every_readme_api_row_is_a_route_with_that_method():
    routes = url_maps()
    documented = documented_routes()
    unknown = ["{0} {1}".format(method, path) for method, path in documented if (method, path) not in routes]
    assert not unknown, "API rows of the docs that are no route (or not with that method):\n" + "\n".join(unknown)
    repeated = sorted({pair for pair in documented if documented.count(pair) > 1})
    assert not repeated, "API rows listed twice in the docs: {0}".format(repeated)


# -- settings ------------------------------------------------------------------------------

def setting_names(defaults=None, prefix=""):
    """``{name: default}`` of every setting, the host's and the sections the extensions declare: ``SECTION.key`` for
    each key of a section (a mapping), at any depth."""
    defaults = all_defaults() if defaults is None else defaults
    names = {}
    for key, value in defaults.items():
        if isinstance(value, dict) and value:
            names.update(setting_names(value, "{0}{1}.".format(prefix, key)))
        else:
            names[prefix + key] = value
    return names


def documented_settings():
    """``{name: default cell}`` of the settings table of the Configuration page."""
    rows = [row for found in tables(page(CONFIGURATION), SETTINGS_TABLE_HEADER) for row in found]
    documented = {}
    for name, meaning, default in rows:
        spans = code_spans(name)
        assert len(spans) == 1 and name == "`{0}`".format(spans[0]), "one `NAME` per settings row: " + name
        assert meaning, "the setting {0} has no meaning on {1}".format(name, CONFIGURATION)
        assert spans[0] not in documented, "the setting {0} is listed twice".format(name)
        documented[spans[0]] = default
    return documented


def test_every_setting_is_documented_with_its_default():
    documented = documented_settings()
    names = setting_names()
    missing = sorted(set(names) - set(documented))
    assert not missing, "Settings the table of {0} does not document: {1}".format(CONFIGURATION, missing)
    unknown = sorted(set(documented) - set(names))
    assert not unknown, "{0} documents settings that do not exist: {1}".format(CONFIGURATION, unknown)
    for name, cell in documented.items():
        spans = code_spans(cell)
        assert spans and cell.startswith("`"), "the default of {0} must start with a `YAML value`".format(name)
        written = yaml.safe_load(spans[0])
        if isinstance(written, str) and written.startswith("~"):
            written = os.path.expanduser(written)
        assert written == names[name], "The documented default of {0} is {1!r}, the code's is {2!r}".format(
            name, written, names[name])


def test_every_option_of_the_console_scripts_is_documented():
    text = page(CONFIGURATION) + page(PRODUCTION) + page(AUTH) + page(SECRETS)
    for script in ("nailgun-api", "nailgun-syncdb", "nailgun-users", "nailgun-secrets"):
        usage = subprocess.run([_bin(script), "--help"], capture_output=True, text=True, check=True).stdout
        for option in sorted(set(re.findall(r"(--[a-z][a-z-]+)", usage)) - {"--help"}):
            assert re.search(r"(?<![\w-]){0}(?![\w-])".format(option), text), (
                "{0} {1} is not documented in Configuration".format(script, option))


def test_the_client_settings_are_documented():
    text = "".join(page(name) for name in CLIENT_PAGES)
    for name in CLIENT_DEFAULTS:
        assert "`{0}`".format(name) in text, "the client setting {0} is not in {1}".format(name, CLIENT_PAGES)
    usage = subprocess.run([_bin("fuel-ext"), "--help"], capture_output=True, text=True, check=True).stdout
    options = set(re.findall(r"(--os-[a-z-]+)", usage))
    assert options, "fuel-ext --help shows no --os-* option"
    for option in sorted(options):
        assert "`{0}`".format(option) in text, "fuel-ext {0} is not in {1}".format(option, CLIENT_PAGES)


# -- what a page names: settings, files, modules, links ----------------------------------------

def page_code_spans(name):
    """The code spans of a page outside its fenced blocks, as ``[(line number, span)]``."""
    spans, in_fence = [], False
    for number, line in enumerate(page(name).splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence:
            spans.extend((number, span) for span in code_spans(line))
    return spans


def test_every_setting_a_page_names_exists():
    names = setting_names()
    section_names = {key for key, value in all_defaults().items() if isinstance(value, dict)}
    unknown = ["{0}:{1}: {2}".format(name, number, span) for name in pages() for number, span in page_code_spans(name)
               if re.fullmatch(r"[A-Z][A-Z_]*(\.[a-z_]+)+", span) and span.split(".")[0] in section_names
               and span not in names and not any(known.startswith(span + ".") for known in names)]
    assert not unknown, "Settings the docs name that do not exist:\n" + "\n".join(unknown)


def _repository_path(span):
    """The file or directory of the repository a code span names (its first word), or None."""
    word = span.split()[0] if span.split() else ""
    if not word.startswith(REPOSITORY_TOPS) or re.search(r"[<>{}]|\.\.\.", word):
        return None
    return word


def test_every_file_a_page_names_exists():
    missing = []
    for name in pages():
        for number, span in page_code_spans(name):
            path = _repository_path(span)
            if path and not (list(ROOT.glob(path.rstrip("/"))) if "*" in path else (ROOT / path).exists()):
                missing.append("{0}:{1}: {2}".format(name, number, path))
    assert not missing, "Files the docs name that do not exist:\n" + "\n".join(missing)


def _defined_names(body):
    """The names a module's or class's body defines at its top (functions, classes, assignments, imports)."""
    names = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update((each.id, node) for each in ast.walk(target) if isinstance(each, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(((alias.asname or alias.name).split(".")[0], node) for alias in node.names)
    return names


def _resolves(dotted):
    """True when ``package.module[.name...][:name]`` names a module of ours, or something defined in one.

    Read from the source (the WSGI module, for one, builds the application when imported)."""
    parts = dotted.replace(":", ".").split(".")
    spec, split = None, 0
    while split < len(parts) and (spec is None or spec.submodule_search_locations is not None):
        deeper = importlib.util.find_spec(".".join(parts[:split + 1]))  # imports packages only, never the module
        if deeper is None:
            break
        spec, split = deeper, split + 1
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    body = ast.parse(Path(spec.origin).read_text()).body
    for part in parts[split:]:
        found = _defined_names(body).get(part)
        if found is None:
            return False
        body = getattr(found, "body", [])
    return True


def test_every_module_a_page_names_exists():
    packages = tuple(top.rstrip("/") + "." for top in REPOSITORY_TOPS if top.startswith("nailgun"))
    missing = ["{0}:{1}: {2}".format(name, number, span) for name in pages() for number, span in page_code_spans(name)
               if span.startswith(packages) and re.fullmatch(r"[\w.]+(:\w+)?", span) and not _resolves(span)]
    assert not missing, "Modules the docs name that cannot be imported:\n" + "\n".join(missing)


def heading_anchors(text):
    """The anchors GitHub gives the headings of a Markdown text (a repeated one gets ``-1``, ``-2``...)."""
    anchors, in_fence = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and re.match(r"#{1,6} ", line):
            anchor = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
            repeated = anchors.count(anchor) + sum(1 for known in anchors if re.fullmatch(
                re.escape(anchor) + r"-\d+", known))
            anchors.append("{0}-{1}".format(anchor, repeated) if repeated else anchor)
    return anchors


def test_every_link_of_a_page_leads_somewhere():
    broken = []
    for name in pages():
        text = re.sub(r"^```.*?^```", "", page(name), flags=re.S | re.M)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # another site: not checked here (the tests send nothing off loopback)
            path, _, anchor = target.partition("#")
            destination = (ROOT / name).parent / path if path else ROOT / name
            if not destination.exists():
                broken.append("{0}: {1} (no such file)".format(name, target))
            elif anchor and (destination.is_dir() or anchor not in heading_anchors(destination.read_text())):
                broken.append("{0}: {1} (no such heading)".format(name, target))
    assert not broken, "Links of the docs that lead nowhere:\n" + "\n".join(broken)


def test_the_readme_test_command_is_what_ci_runs():
    test_section = README.read_text().split("\n## Test\n", 1)[1].split("\n## ", 1)[0]
    commands = [content.strip() for info, content in fenced_blocks(test_section) if info == "bash"]
    assert len(commands) == 1, "the README's Test section shows one bash block: the test command"
    ci_runs = re.findall(r"^exec (?:bash )?(\S+)", (ROOT / ".ci" / "run").read_text(), re.M)
    assert ci_runs == [commands[0].split()[0]], "README tests with {0!r}, .ci/run runs {1}".format(commands[0], ci_runs)


def test_the_readme_stays_short_and_links_every_page():
    lines = README.read_text().splitlines()
    assert len(lines) <= 150, "README.md has {0} lines: move what is not the first read to docs/".format(len(lines))
    linked = {os.path.normpath(target.partition("#")[0]) for target in re.findall(r"\]\(([^)\s]+)\)", page(
        "docs/README.md")) if not re.match(r"[a-z]+:", target)}
    unlinked = [name for name in pages() if name.startswith("docs/") and name != "docs/README.md"
                and os.path.relpath(name, "docs") not in linked]
    assert not unlinked, "Pages the index docs/README.md does not link: {0}".format(unlinked)


# -- console sessions ----------------------------------------------------------------------

def _bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def _is_complete(command):
    """True when bash would run ``command`` as it is (no open quote, loop or trailing ``\\``)."""
    if command.endswith("\\"):
        return False
    return subprocess.run(["bash", "-n", "-c", command], capture_output=True).returncode == 0


def parse_session(block):
    """``[(command, expected output)]`` of a console block: ``$ `` starts a command."""
    lines = block.splitlines()
    steps, index = [], 0
    while index < len(lines):
        line = lines[index]
        assert line.startswith("$ "), "console output before any command: {0!r}".format(line)
        command = [line[2:]]
        index += 1
        while not _is_complete("\n".join(command)):
            assert index < len(lines), "incomplete command at the end of a console block: {0}".format(command)
            command.append(lines[index])
            index += 1
        output = []
        while index < len(lines) and not lines[index].startswith("$ "):
            output.append(lines[index])
            index += 1
        steps.append(("\n".join(command), "\n".join(output)))
    return steps


def console_sessions():
    """``{page: [(command, expected output)]}``: the console blocks of every page, one session per page."""
    found = {}
    for name in pages():
        for info, content in fenced_blocks(page(name)):
            if info == "console":
                found.setdefault(name, []).extend(parse_session(content))
    return found


def _normalize(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def output_matches(expected, actual):
    """The output equals the page's, where each ``…`` stands for any text (newlines included)."""
    pattern = ".*?".join(re.escape(piece) for piece in _normalize(expected).split(ELLIPSIS))
    return re.fullmatch(pattern, _normalize(actual), re.S) is not None


class Shell:
    """One bash process: variables and the working directory carry from one command to the next."""

    MARK = "__readme_command_done__"

    def __init__(self, cwd, env):
        self.output = Path(cwd) / ".command_output"
        self.process = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=cwd, env=env, text=True,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.process.stdout, selectors.EVENT_READ)

    def run(self, command, timeout=60):
        """The command's stdout and stderr together."""
        self.process.stdin.write("{{ {0}\n}} >{1} 2>&1 </dev/null; echo {2}\n".format(
            command, shlex.quote(str(self.output)), self.MARK))
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            assert self.selector.select(max(0, deadline - time.monotonic())), "timed out: " + command
            line = self.process.stdout.readline()
            assert line, "bash exited while running: " + command
            if line.strip() == self.MARK:
                return self.output.read_text()

    def close(self):
        self.process.stdin.close()
        self.process.wait(10)


def test_the_sessions_are_found():
    found = console_sessions()
    assert set(SESSIONS) <= set(found), "pages without a console session: {0}".format(
        sorted(set(SESSIONS) - set(found)))


def _session_settings(directory, content):
    """The settings file of a session; a users file it names starts empty (the session adds the users)."""
    content = yaml.safe_load(yaml.safe_dump(content))
    users_file = content.get("AUTH", {}).get("users_file")
    if users_file:
        content["AUTH"]["users_file"] = str(directory / users_file)
        local.save(content["AUTH"]["users_file"], local.new_users_file())
    path = directory / "settings.yaml"
    path.write_text(yaml.safe_dump(content))
    return path


@pytest.mark.parametrize("name", sorted(set(SESSIONS) | set(console_sessions())))
def test_console_session_runs_as_printed(name, migrated_db, db_url, tmp_path):
    """A fresh ``nailgun-api`` (tables emptied by ``clean_db``, migrated at start as a user's is)."""
    steps = console_sessions().get(name)
    assert steps, "no console session on " + name
    session_env = {}
    if name in SESSION_SETTINGS:
        session_env["NAILGUN_CONFIG"] = str(_session_settings(tmp_path, SESSION_SETTINGS[name]))
    server = LiveServer(db_url, migrate=True, env=session_env)
    try:
        address = "127.0.0.1:{0}".format(server.port)
        # The client settings come from SERVER_ADDRESS/SERVER_PORT only, never from the caller's files.
        env = {key: value for key, value in os.environ.items()
               if key not in CLIENT_DEFAULTS and key not in ("FUELCLIENT_CUSTOM_SETTINGS", "XDG_CONFIG_HOME")}
        env.update(HOME=str(tmp_path), PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
                   SERVER_ADDRESS="127.0.0.1", SERVER_PORT=str(server.port), LC_ALL="C.UTF-8",
                   NAILGUN_DB_URL=db_url, **session_env)  # the server's database, as for a reader's commands
        shell = Shell(tmp_path, env)
        try:
            for command, expected in steps:
                actual = shell.run(command.replace(DOCS_ADDRESS, address))
                expected = expected.replace(DOCS_ADDRESS, address)
                assert output_matches(expected, actual), (
                    "A command of {0} printed something else\n$ {1}\n--- {0}:\n{2}\n--- real:\n{3}".format(
                        name, command, expected, actual))
        finally:
            shell.close()
    finally:
        server.stop()


# -- the matcher itself --------------------------------------------------------------------

@pytest.mark.parametrize("expected, actual, result", [
    ('{"id": 1, …}', '{"id": 1, "name": "x"}', True),
    ('{"id": 1, …}', '{"id": 2, "name": "x"}', False),
    ("a\n  …\n}", "a\n  b,\n  c\n}", True),
    ("204", "204\n", True),
    ("204", "2040", False),
    ("", "anything", False),
    ("", "", True),
    ("x.y", "xzy", False),
])
def test_output_matcher(expected, actual, result):
    assert output_matches(expected, actual) is result


def test_commands_span_lines_while_bash_needs_more():
    steps = parse_session("$ echo 'a\nb'\na\nb\n$ echo c \\\n  d\nc d\n$ true")
    assert steps == [("echo 'a\nb'", "a\nb"), ("echo c \\\n  d", "c d"), ("true", "")]
