#!/bin/sh
# Build python-fuelclient 11.0.0 (the last fuel2) in its own venv, with this package's
# commands installed client-side only, and print the fuel2 path.
#
# fuel2 11.0.0 calls yaml.load() without a Loader, which PyYAML 6 refuses; PyYAML 5.4.1
# only builds with Cython < 3 (ecosystem.md §6). The server's dependencies are not
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
"$VENV/bin/fuel2" --help >/dev/null 2>&1 || { echo "fuel2 does not start" >&2; exit 1; }
echo "$VENV/bin/fuel2"
