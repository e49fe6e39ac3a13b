#!/bin/sh
# Build python-fuelclient 11.0.0 (the last fuel2) in its own venv, with this package's
# commands installed client-side only, and print the fuel2 path.
#
# fuel2 11.0.0 calls yaml.load() without a Loader, which PyYAML 6 refuses; PyYAML 5.4.1
# only builds with Cython < 3 (ecosystem.md §6), and warns on that call at every run: a .pth
# file filters that one warning. The server's dependencies are not
# installed: the commands must work with requests, cliff and PyYAML alone.
# Usage: tests/tools/make_fuel2_venv.sh [VENV_DIR]   (default: .venv-fuel2)
set -eu
HERE=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${1:-$HERE/.venv-fuel2}
PYTHON=${PYTHON:-python3}
if [ ! -x "$VENV/bin/fuel2" ]; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q python-fuelclient==11.0.0 >&2
    "$VENV/bin/pip" install -q "cython<3" wheel "setuptools<70" >&2
    "$VENV/bin/pip" install -q --no-build-isolation pyyaml==5.4.1 >&2
fi
"$VENV/bin/pip" install -q --no-deps --no-build-isolation -e "$HERE" >&2
"$VENV/bin/pip" install -q requests cliff keystoneauth1 >&2
# Every PyYAML fuel2 runs with warns on its yaml.load() of the settings file (5.1 added the warning;
# the releases before it fail on Python >= 3.10): silence that one warning of that one module at start-up.
SITE=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
echo 'import warnings; warnings.filterwarnings("ignore", message=r"calling yaml\.load\(\) without Loader", module="fuelclient\.fuelclient_settings")' \
    > "$SITE/fuelclient-yaml-load-warning.pth"
"$VENV/bin/fuel2" --help >/dev/null 2>&1 || { echo "fuel2 does not start" >&2; exit 1; }
if "$VENV/bin/fuel2" --version 2>&1 | grep -q YAMLLoadWarning; then echo "fuel2 still warns about yaml.load" >&2; exit 1; fi
echo "$VENV/bin/fuel2"
