#!/bin/sh
# Build a real Keystone (the PyPI package) and gunicorn in a venv of their own, and print
# the venv's path. The tests serve it on a loopback port with SQLite (tests/keystone.py);
# Keystone's many dependencies stay out of the test venv. gunicorn 27 for --no-control-socket.
# Usage: tests/tools/make_keystone_venv.sh [VENV_DIR]   (default: .venv-keystone)
set -eu
HERE=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${1:-$HERE/.venv-keystone}
PYTHON=${PYTHON:-python3}
if ! "$VENV/bin/python" -c 'import keystone, gunicorn' >/dev/null 2>&1; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check keystone "gunicorn>=27" >&2
fi
for tool in keystone-manage gunicorn; do
    [ -x "$VENV/bin/$tool" ] || { echo "$VENV/bin/$tool is missing" >&2; exit 1; }
done
echo "$VENV"
