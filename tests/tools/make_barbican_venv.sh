#!/bin/sh
# Build a real Barbican (the PyPI package, with its simple crypto plugin) and gunicorn in a venv of their own, and
# print the venv's path. The tests serve it on a loopback port with SQLite, behind the test Keystone
# (tests/barbican.py); its dependencies stay out of the test venv.
# Usage: tests/tools/make_barbican_venv.sh [VENV_DIR]   (default: .venv-barbican)
set -eu
HERE=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${1:-$HERE/.venv-barbican}
PYTHON=${PYTHON:-python3}
if ! "$VENV/bin/python" -c 'import barbican, gunicorn' >/dev/null 2>&1; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check barbican "gunicorn>=27" >&2
fi
for file in bin/gunicorn etc/barbican/barbican-api-paste.ini; do
    [ -e "$VENV/$file" ] || { echo "$VENV/$file is missing" >&2; exit 1; }
done
echo "$VENV"
