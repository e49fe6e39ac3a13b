#!/bin/sh
# Build a real OpenStack service the tests run against (its PyPI package) and gunicorn in a venv of its own, and
# print the venv's path: keystone (served on SQLite, tests/keystone.py) or barbican (its simple crypto plugin,
# behind that Keystone, tests/barbican.py). Their dependencies stay out of the test venv. gunicorn 27 for
# --no-control-socket.
# Usage: tests/tools/make_service_venv.sh keystone|barbican [VENV_DIR]   (default: .venv-SERVICE)
set -eu
HERE=$(cd "$(dirname "$0")/../.." && pwd)
SERVICE=$1
case $SERVICE in
    keystone) NEEDED="bin/keystone-manage bin/gunicorn" ;;
    barbican) NEEDED="etc/barbican/barbican-api-paste.ini bin/gunicorn" ;;
    *) echo "usage: $0 keystone|barbican [VENV_DIR]" >&2; exit 2 ;;
esac
VENV=${2:-$HERE/.venv-$SERVICE}
PYTHON=${PYTHON:-python3}
if ! "$VENV/bin/python" -c "import $SERVICE, gunicorn" >/dev/null 2>&1; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/pip" install -q --disable-pip-version-check "$SERVICE" "gunicorn>=27" >&2
fi
for file in $NEEDED; do
    [ -e "$VENV/$file" ] || { echo "$VENV/$file is missing" >&2; exit 1; }
done
echo "$VENV"
