"""``fuel-ext complete --shell bash``, the file the RPM installs as /usr/share/bash-completion/completions/fuel-ext:
bash, with bash-completion loaded, sources it and completes every word of every command from its first letter,
and each command's options (docs/clients/shell-completion.md)."""
import json
import os
import shlex
import subprocess
import sys

import pytest

from nailgun_platform.client.fuel_ext import FuelExtApp

BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
pytestmark = pytest.mark.skipif(not os.path.isfile(BASH_COMPLETION) and os.environ.get("CI") != "true",
                                reason="bash-completion is not installed: run_tests.sh installs it")
COMMANDS = sorted(name for name, _ in FuelExtApp().command_manager)


@pytest.fixture(scope="module")
def completion(tmp_path_factory):
    path = tmp_path_factory.mktemp("completion") / "fuel-ext"
    with open(path, "w") as output:
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "fuel-ext"), "complete", "--shell", "bash"],
                       stdout=output, check=True, timeout=120)
    return path


def _complete(completion, cases):
    """What ``_fuel_ext`` offers for each ``words`` (the last one the word being completed), in one bash."""
    script = ["source {0}".format(BASH_COMPLETION), "source {0}".format(shlex.quote(str(completion))),
              'complete -p fuel-ext >&2']
    for words in cases:
        script.append("COMP_WORDS=({0}); COMP_CWORD={1}; COMP_LINE={2}; COMP_POINT=${{#COMP_LINE}}; COMPREPLY=(); "
                      "_fuel_ext; printf '%s\\n' \"${{COMPREPLY[*]}}\"".format(
                          " ".join(shlex.quote(word) for word in words), len(words) - 1,
                          shlex.quote(" ".join(words))))
    result = subprocess.run(["bash", "-c", "\n".join(script)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr == "complete -F _fuel_ext fuel-ext\n"
    return [line.split() for line in result.stdout.splitlines()]


def test_bash_completes_every_word_of_every_command(completion):
    assert "config upload" in COMMANDS and "config upload env" in COMMANDS  # a command that begins another
    cases = {}
    for command in COMMANDS:
        words = command.split()
        for index, word in enumerate(words):
            cases[json.dumps(["fuel-ext"] + words[:index] + [word[0]])] = word
    offered = _complete(completion, [json.loads(case) for case in cases])
    missing = [(json.loads(case), word) for (case, word), offers in zip(cases.items(), offered) if word not in offers]
    assert not missing, missing


def test_bash_completes_the_options_of_a_command_and_no_word_that_is_no_command(completion):
    options, after_upload, after_config = _complete(completion, [
        ["fuel-ext", "config", "upload", "env", "--"], ["fuel-ext", "config", "upload", ""],
        ["fuel-ext", "config", ""]])
    assert {"--env", "--dir", "--component", "--jobs"} <= set(options)
    assert "env" in after_upload and "--node" in after_upload
    assert {word.split()[1] for word in COMMANDS if word.startswith("config ")} == set(after_config)
