"""What an operator expects of every command (issue 26, item 5): ``--version``; a migration at start that
logs one line, not alembic's chatter (``nailgun-syncdb``'s own quiet: tests/host/test_syncdb.py); the manual
pages ``python -m nailgun_host.cmd.man_pages`` makes, rendered by ``man`` without a warning, naming every option.

The commands run as installed (the virtualenv's console scripts), on a database of the suite's kind.
"""
import argparse
import importlib
import os
import re
import shutil
import subprocess
import sys
import time
from importlib import metadata

import pytest

import nailgun_host
from nailgun_host.cmd import man_pages
from tests.conftest import free_port

#: every console script of the distribution, as setup.cfg declares them: a new one is checked here too
SCRIPTS = sorted(entry.name for entry in metadata.distribution("fuel-nailgun-extensions").entry_points
                 if entry.group == "console_scripts")
BIN = os.path.dirname(sys.executable)


def _environ(tmp_path):
    environ = {k: v for k, v in os.environ.items() if k not in ("NAILGUN_DB_URL", "NAILGUN_CONFIG")}
    environ.update(HOME=str(tmp_path), NAILGUN_CONFIG="")
    return environ


def _script(name):
    path = os.path.join(BIN, name)
    assert os.access(path, os.X_OK), "{0} is not installed beside {1}".format(name, sys.executable)
    return path


def test_the_scripts_are_the_known_commands():
    assert {"nailgun-api", "nailgun-syncdb", "nailgun-feed", "nailgun-users", "nailgun-secrets", "fuel-ext"} \
        <= set(SCRIPTS)


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_command_answers_version(name, tmp_path):
    result = subprocess.run([_script(name), "--version"], env=_environ(tmp_path), capture_output=True, text=True,
                            timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (
        0, "{0} {1}\n".format(name, metadata.version("fuel-nailgun-extensions")), "")


def test_nailgun_api_migrating_at_start_logs_one_line_of_it(empty_db_url, tmp_path):
    """The API's own migration at start goes to its log as one line, without alembic's chatter."""
    import requests

    port = free_port()
    with open(tmp_path / "stderr", "w") as stderr:
        server = subprocess.Popen([_script("nailgun-api"), "--db-url", empty_db_url, "--port", str(port)],
                                  env=_environ(tmp_path), stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            for _ in range(300):
                assert server.poll() is None, (tmp_path / "stderr").read_text()
                try:
                    requests.get("http://127.0.0.1:{0}/api/v1/version".format(port), timeout=1)
                    break
                except requests.ConnectionError:
                    time.sleep(0.1)  # still starting
        finally:
            server.terminate()
            server.wait(10)
    lines = (tmp_path / "stderr").read_text().splitlines()
    assert [line for line in lines if "alembic" in line or "Context impl" in line or "Running upgrade" in line] == []
    assert len([line for line in lines if " migrated core: no revision -> " in line]) == 1, lines


@pytest.mark.skipif(os.getuid() != 0, reason="only root gives a file away")
def test_root_running_nailgun_users_leaves_the_users_file_to_the_owner_of_its_directory(tmp_path):
    """The RPM's service user owns /var/lib/fuel-nailgun-extensions; root adding a user must not take the
    (owner-only) users file from it, new or rewritten."""
    service, other = (4242, 4343), (4444, 4545)
    directory = tmp_path / "state"
    directory.mkdir()
    os.chown(directory, *service)
    users_file = directory / "users.yaml"

    def set_user(name):
        result = subprocess.run([_script("nailgun-users"), "--db-url", "sqlite:///" + str(tmp_path / "db.sqlite"),
                                 "--users-file", str(users_file), "set", name, "--role", "admin"],
                                input="secret\n", env=_environ(tmp_path), capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        stat = os.stat(users_file)
        return stat.st_uid, stat.st_gid, stat.st_mode & 0o777

    assert set_user("admin") == service + (0o600,)
    os.chown(users_file, *other)
    assert set_user("second") == other + (0o600,)


@pytest.mark.skipif(os.getuid() != 0, reason="only root gives a file away")
def test_root_running_nailgun_secrets_leaves_the_key_repository_to_the_owner_of_its_directory(tmp_path):
    """``nailgun-secrets status`` as root made the RPM's repository root's (0700), and ``rotate`` root's key
    files (0600), in the service user's directory: the service could no longer read its keys."""
    service, other = (4242, 4343), (4444, 4545)
    directory = tmp_path / "state"
    directory.mkdir()
    os.chown(directory, *service)
    repository = directory / "fernet-keys"
    environ = dict(_environ(tmp_path), NAILGUN_KEY_REPOSITORY=str(repository))
    database = "sqlite:///" + str(tmp_path / "db.sqlite")
    subprocess.run([_script("nailgun-syncdb"), "--db-url", database], env=environ, check=True, capture_output=True,
                   timeout=120)
    assert not repository.exists()  # the first command that needs the keys makes them

    def secrets(command):
        result = subprocess.run([_script("nailgun-secrets"), "--db-url", database, command], env=environ,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return {path.name: (path.stat().st_uid, path.stat().st_gid, path.stat().st_mode & 0o777)
                for path in [repository] + sorted(repository.iterdir())}

    assert secrets("status") == {"fernet-keys": service + (0o700,), "0": service + (0o600,), "1": service + (0o600,)}
    os.chown(repository, *other)
    assert secrets("rotate") == {"fernet-keys": other + (0o700,), "0": other + (0o600,), "1": service + (0o600,),
                                 "2": other + (0o600,)}


# --- the manual pages ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """The pages as the RPM's build makes them: ``python -m nailgun_host.cmd.man_pages --output DIR``."""
    directory = tmp_path_factory.mktemp("man1")
    result = subprocess.run([sys.executable, "-m", "nailgun_host.cmd.man_pages", "--output", str(directory)],
                            capture_output=True, text=True, timeout=120, env=dict(os.environ, SOURCE_DATE_EPOCH="0"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(directory / (name + ".1")) for name in SCRIPTS]
    return directory


def test_there_is_a_page_for_every_command_and_nothing_else(pages):
    assert sorted(os.listdir(pages)) == [name + ".1" for name in SCRIPTS]


def _options(parser):
    """``(command, option)`` for every option of ``parser`` and of its subcommands, but ``--help``
    (a page is the help)."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield parser.prog + " " + name, None
                yield from _options(sub)
        elif "--help" not in action.option_strings and action.help != argparse.SUPPRESS:
            for option in action.option_strings:
                yield parser.prog, option


def _bold(text):
    return r"\fB" + text.replace("-", r"\-") + r"\fR"


@pytest.mark.parametrize("name", SCRIPTS)
def test_each_page_names_every_option_and_subcommand_its_parser_has(pages, name):
    source = (pages / (name + ".1")).read_text()
    assert source.startswith('.TH {0} "1" "1970\\-01\\-01" "fuel\\-nailgun\\-extensions {1}"'.format(
        name.upper().replace("-", r"\-"), nailgun_host.__version__))
    options = list(_options(man_pages.parsers()[name]))
    assert any(option == "--version" for _, option in options)
    missing = [(command, option) for command, option in options
               if _bold(option if option else command) not in source]
    assert not missing, "not in {0}.1: {1}".format(name, missing)


def _helps(parser):
    """``(command, help)`` for every option and subcommand of ``parser``, ``%(default)s`` expanded, in one line."""
    import argparse

    formatter = parser.formatter_class(prog=parser.prog)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _helps(sub)
        if action.help and action.help != argparse.SUPPRESS and "--help" not in action.option_strings:
            yield parser.prog, " ".join(formatter._expand_help(action).split())


@pytest.mark.parametrize("name", SCRIPTS)
def test_a_narrow_terminal_breaks_no_help_text_in_a_page(pages, name, tmp_path):
    """argparse wraps help at $COLUMNS, at hyphens too, and a line break is a space in roff: the build's
    terminal made "/etc/fuel-nailgun- extensions/settings.yaml" of the settings file's path."""
    subprocess.run([sys.executable, "-m", "nailgun_host.cmd.man_pages", "--output", str(tmp_path)], check=True,
                   capture_output=True, timeout=120, env=dict(os.environ, SOURCE_DATE_EPOCH="0", COLUMNS="30"))
    source = (tmp_path / (name + ".1")).read_text()
    assert source == (pages / (name + ".1")).read_text()  # whatever the terminal
    words = " ".join(source.split())
    broken = [(command, text) for command, text in _helps(man_pages.parsers()[name])
              if text.replace("-", r"\-") not in words]
    assert not broken, "split in {0}.1: {1}".format(name, broken)


@pytest.mark.skipif(shutil.which("man") is None and os.environ.get("CI") != "true",
                    reason="man (Debian's man-db) is not installed: run_tests.sh installs it")
@pytest.mark.parametrize("name", SCRIPTS)
def test_man_renders_each_page_without_a_warning(pages, name):
    result = subprocess.run(["man", "--warnings", "-l", str(pages / (name + ".1"))], capture_output=True,
                            text=True, timeout=60, env=dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8"))
    assert (result.returncode, result.stderr) == (0, "")
    text = re.sub(".\b", "", result.stdout)  # the overstrikes of bold, as col -b drops them
    assert re.match(r"{0}\(1\)\s+fuel-nailgun-extensions\s+{0}\(1\)".format(re.escape(name.upper())), text)
    assert re.search(r"^NAME\n\s+{0}\s+-\s+\w".format(re.escape(name)), text, re.M)


#: what a subcommand needs besides the database options
SUBCOMMAND_ARGUMENTS = {"set": ["someone", "--role", "admin"], "delete": ["someone"], "move-keys": ["--to", "local"]}


@pytest.mark.parametrize("module", ["secrets", "users"])
def test_database_options_are_taken_before_or_after_the_subcommand(module):
    """``nailgun-secrets status --db-url URL`` as well as ``nailgun-secrets --db-url URL status``; given in
    neither place, they stay unset (the settings file's then)."""
    command = importlib.import_module("nailgun_host.cmd." + module)
    (subcommands,) = [a for a in command.build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    for name in subcommands.choices:
        rest = SUBCOMMAND_ARGUMENTS.get(name, [])
        for args in (["--db-url", "sqlite:///a.db", "--config", "s.yaml", name] + rest,
                     [name] + rest + ["--db-url", "sqlite:///a.db", "--config", "s.yaml"]):
            parsed = command.build_parser().parse_args(args)
            assert (parsed.command, parsed.db_url, parsed.config) == (name, "sqlite:///a.db", "s.yaml"), args
        parsed = command.build_parser().parse_args([name] + rest)
        assert (parsed.db_url, parsed.config) == (None, None)
