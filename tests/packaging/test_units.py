"""The packaged units (packaging/*.service) are as confined as an unprivileged web service can be.

``systemd-analyze security --offline`` rates a unit's exposure from 0 (confined) to 10 (unconfined); the units
run a Python web service as the user ``nailgun-extensions``, which needs no capability, device or kernel setting,
so they must rate "OK" (below 4). Without the hardening lines they rated 8.5, "EXPOSED".
"""
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

UNITS = sorted((Path(__file__).resolve().parents[2] / "packaging").glob("*.service"))
#: the highest exposure allowed, in systemd-analyze's tenths (--threshold)
THRESHOLD = 40


def systemd_analyze():
    found = shutil.which("systemd-analyze")
    if found is None:
        reason = "systemd-analyze is not installed (run_tests.sh installs Debian's systemd)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


def test_both_units_are_there():
    assert [unit.name for unit in UNITS] == ["nailgun-api.service", "nailgun-feed.service"]


@pytest.mark.parametrize("unit", UNITS, ids=lambda unit: unit.name)
def test_each_unit_is_confined(unit):
    result = subprocess.run([systemd_analyze(), "security", "--offline=yes", "--no-pager",
                             "--threshold={0}".format(THRESHOLD), str(unit)],
                            capture_output=True, text=True, timeout=60)
    found = re.search(r"Overall exposure level for {0}: (\d+\.\d)".format(re.escape(unit.name)), result.stdout)
    assert found, result.stdout[-2000:] + result.stderr
    assert float(found.group(1)) <= THRESHOLD / 10, result.stdout
    assert result.returncode == 0, result.stderr


def test_both_units_are_confined_alike():
    def hardening(unit):
        return [line for line in unit.read_text().splitlines()
                if re.match(r"(No|Private|Protect|Restrict|Capability|Lock|SystemCall|UMask)", line)]

    assert hardening(UNITS[0]) == hardening(UNITS[1])


def test_the_feed_may_hold_ten_thousand_parked_readers_and_their_sockets():
    """Each parked reader holds a socket: systemd's default hard limit of open files is 4096 on older
    versions (the feed raises its soft limit to the hard one at start)."""
    unit = next(unit for unit in UNITS if unit.name == "nailgun-feed.service")
    assert int(re.search(r"^LimitNOFILE=(\d+)$", unit.read_text(), re.M).group(1)) >= 10000 + 1024


def test_the_units_and_the_log_rotation_are_the_service_users():
    """Both units run as the package's own user (not Fuel's ``nailgun``), and logrotate works in its log
    directory as that user (``su``): logrotate refuses a directory another user may write to otherwise."""
    users = {re.search(r"^User=(\S+)$", unit.read_text(), re.M).group(1) for unit in UNITS}
    groups = {re.search(r"^Group=(\S+)$", unit.read_text(), re.M).group(1) for unit in UNITS}
    assert users == groups == {"nailgun-extensions"}
    rotation = (UNITS[0].parent / "nailgun-api.logrotate").read_text()
    assert re.search(r"^\s+su nailgun-extensions nailgun-extensions$", rotation, re.M), rotation
