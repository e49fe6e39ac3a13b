"""The README stays true: its API tables, settings, layout and console sessions, checked.

- Routes: every (method, URL template) of the core's and the extensions' URL maps is a
  row of an API table (``| method | path | body | answer |``), and every row is a route.
- Settings: every key of ``nailgun_host.settings.DEFAULTS`` (and the keys of its sections)
  is a row of the Configuration table, with its real default; every row is a setting.
- Layout: every file or directory the "Where things go" table names exists.
- Sessions: every ```console block runs in bash, command by command, against a real
  ``nailgun-api`` on an empty database, and prints what the README prints (``…`` stands
  for any text). The blocks of one ``##`` section form one session on one server.
"""
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
from nailgun_host.settings import DEFAULTS
from nailgun_host.urls import URLS
from nailgun_platform.client import DEFAULTS as CLIENT_DEFAULTS
from tests.conftest import LiveServer

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

API_TABLE_HEADER = ("method", "path", "body", "answer")
SETTINGS_TABLE_HEADER = ("setting", "meaning", "default")
LAYOUT_TABLE_HEADER = ("what goes there", "nailgun_host", "nailgun_ext_upgrade", "nailgun_ext_configdb")
IGNORED_METHODS = ("HEAD", "OPTIONS")

#: sections whose console blocks must exist and run (a block turned into ```text by
#: mistake would otherwise silently stop being checked)
SESSIONS = ("A short tour", "Environment upgrade", "ConfigDB", "Authentication and TLS", "Secrets", "Sessions",
            "JSON patch", "Deployments", "Change feed", "Versioned definitions and pins")
#: sections whose session runs against a server with these settings (in ``settings.yaml``,
#: which ``NAILGUN_CONFIG`` names for the session's commands too); paths are under the session's directory
SESSION_SETTINGS = {title: {"AUTH": {"method": "local", "users_file": "users.yaml"}}
                    for title in ("Authentication and TLS", "Secrets", "JSON patch")}
#: the server address the README's commands use, replaced by the test server's
README_ADDRESS = "127.0.0.1:8000"
ELLIPSIS = "…"


# -- reading the README ------------------------------------------------------------------

def sections(text=None):
    """``[(title, body)]`` of the README's ``##`` sections (``###`` stay in their ``##``)."""
    text = README.read_text() if text is None else text
    found, title, body = [], None, []
    in_fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("## "):
            if title is not None:
                found.append((title, "\n".join(body)))
            title, body = line[3:].strip(), []
        elif title is not None:
            body.append(line)
    if title is not None:
        found.append((title, "\n".join(body)))
    return found


def section(title):
    matching = [body for name, body in sections() if name == title]
    assert len(matching) == 1, "README has {0} sections named {1!r}".format(len(matching), title)
    return matching[0]


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
                assert len(cells) == len(header), "README table row has {0} cells, not {1}: {2}".format(
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
    """``[(method, path)]`` of every row of every API table, in README order."""
    text = README.read_text() if text is None else text
    found = []
    for rows in tables(text, API_TABLE_HEADER):
        for methods, path, _body, _answer in rows:
            paths = code_spans(path)
            assert len(paths) == 1 and path == "`{0}`".format(paths[0]), (
                "An API table's path cell holds one `template`, not {0!r}".format(path))
            for method in methods.split(","):
                found.append((method.strip(), paths[0]))
    return found


def test_the_readme_has_an_api_table_for_the_core_and_each_extension():
    for title in ("Core API", "Environment upgrade", "ConfigDB"):
        assert tables(section(title), API_TABLE_HEADER), "no API table in the README section " + title


def test_every_route_is_in_a_readme_api_table():
    documented = set(documented_routes())
    missing = ["{0} {1} ({2})".format(method, template, owner)
               for (method, template), owner in sorted(url_maps().items()) if (method, template) not in documented]
    assert not missing, "Routes the README's API tables do not list:\n" + "\n".join(missing)


def test_every_readme_api_row_is_a_route_with_that_method():
    routes = url_maps()
    documented = documented_routes()
    unknown = ["{0} {1}".format(method, path) for method, path in documented if (method, path) not in routes]
    assert not unknown, "README API rows that are no route (or not with that method):\n" + "\n".join(unknown)
    repeated = sorted({pair for pair in documented if documented.count(pair) > 1})
    assert not repeated, "README API rows listed twice: {0}".format(repeated)


# -- settings ------------------------------------------------------------------------------

def setting_names(defaults=DEFAULTS, prefix=""):
    """``{name: default}`` of every setting: ``SECTION.key`` for each key of a section (a mapping), at any depth."""
    names = {}
    for key, value in defaults.items():
        if isinstance(value, dict) and value:
            names.update(setting_names(value, "{0}{1}.".format(prefix, key)))
        else:
            names[prefix + key] = value
    return names


def documented_settings():
    """``{name: default cell}`` of the Configuration section's settings table."""
    rows = [row for found in tables(section("Configuration"), SETTINGS_TABLE_HEADER) for row in found]
    documented = {}
    for name, meaning, default in rows:
        spans = code_spans(name)
        assert len(spans) == 1 and name == "`{0}`".format(spans[0]), "one `NAME` per settings row: " + name
        assert meaning, "the setting {0} has no meaning in the README".format(name)
        assert spans[0] not in documented, "the setting {0} is listed twice".format(name)
        documented[spans[0]] = default
    return documented


def test_every_setting_is_documented_with_its_default():
    documented = documented_settings()
    names = setting_names()
    missing = sorted(set(names) - set(documented))
    assert not missing, "Settings the README's Configuration table does not document: {0}".format(missing)
    unknown = sorted(set(documented) - set(names))
    assert not unknown, "The README documents settings that do not exist: {0}".format(unknown)
    for name, cell in documented.items():
        spans = code_spans(cell)
        assert spans and cell.startswith("`"), "the default of {0} must start with a `YAML value`".format(name)
        written = yaml.safe_load(spans[0])
        if isinstance(written, str) and written.startswith("~"):
            written = os.path.expanduser(written)
        assert written == names[name], "README default of {0} is {1!r}, the code's is {2!r}".format(
            name, written, names[name])


def test_every_option_of_the_console_scripts_is_documented():
    text = section("Configuration") + section("Production") + section("Authentication and TLS") + section("Secrets")
    for script in ("nailgun-api", "nailgun-syncdb", "nailgun-users", "nailgun-secrets"):
        usage = subprocess.run([_bin(script), "--help"], capture_output=True, text=True, check=True).stdout
        for option in sorted(set(re.findall(r"(--[a-z][a-z-]+)", usage)) - {"--help"}):
            assert re.search(r"(?<![\w-]){0}(?![\w-])".format(option), text), (
                "{0} {1} is not documented in Configuration".format(script, option))


def test_the_client_settings_are_documented():
    text = section("Environment upgrade") + section("ConfigDB clients")
    for name in CLIENT_DEFAULTS:
        assert "`{0}`".format(name) in text, "the client setting {0} is not in the README".format(name)
    usage = subprocess.run([_bin("fuel-ext"), "--help"], capture_output=True, text=True, check=True).stdout
    options = set(re.findall(r"(--os-[a-z-]+)", usage))
    assert options, "fuel-ext --help shows no --os-* option"
    for option in sorted(options):
        assert "`{0}`".format(option) in text, "fuel-ext {0} is not in the README".format(option)


# -- layout --------------------------------------------------------------------------------

def test_every_place_named_in_where_things_go_exists():
    rows = [row for found in tables(section("Where things go"), LAYOUT_TABLE_HEADER) for row in found]
    assert rows, "no table in 'Where things go'"
    packages = LAYOUT_TABLE_HEADER[1:]
    for row in rows:
        assert row[0], "a row of 'Where things go' says nothing"
        for package, cell in zip(packages, row[1:]):
            for name in code_spans(cell):
                path = ROOT / package / name
                assert path.exists() and (path.is_dir() == name.endswith("/")), (
                    "'Where things go' names {0}/{1}, which does not exist".format(package, name))
    top = [name for _info, content in fenced_blocks(section("Where things go"))
           for name in re.findall(r"^(\S+/?)\s", content, re.M)]
    assert top, "no top-level tree in 'Where things go'"
    for name in top:
        for part in name.split(","):
            assert (ROOT / part.strip()).exists(), "'Where things go' names {0}, which does not exist".format(part)


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
    """``{section title: [(command, expected output)]}``: the README's console blocks, by section."""
    found = {}
    for title, body in sections():
        for info, content in fenced_blocks(body):
            if info == "console":
                found.setdefault(title, []).extend(parse_session(content))
    return found


def _normalize(text):
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def output_matches(expected, actual):
    """The output equals the README's, where each ``…`` stands for any text (newlines included)."""
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
    assert set(SESSIONS) <= set(found), "sections without a console session: {0}".format(
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


@pytest.mark.parametrize("title", sorted(set(SESSIONS) | set(console_sessions())))
def test_console_session_runs_as_printed(title, migrated_db, db_url, tmp_path):
    """A fresh ``nailgun-api`` (tables emptied by ``clean_db``, migrated at start as a user's is)."""
    steps = console_sessions().get(title)
    assert steps, "no console session in README section " + title
    session_env = {}
    if title in SESSION_SETTINGS:
        session_env["NAILGUN_CONFIG"] = str(_session_settings(tmp_path, SESSION_SETTINGS[title]))
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
                actual = shell.run(command.replace(README_ADDRESS, address))
                expected = expected.replace(README_ADDRESS, address)
                assert output_matches(expected, actual), (
                    "README command printed something else\n$ {0}\n--- README:\n{1}\n--- real:\n{2}".format(
                        command, expected, actual))
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
