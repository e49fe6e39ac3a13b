#!/usr/bin/env bash
# The one test command of fuel-nailgun-extensions.
#
#   ./run_tests.sh [pytest arguments...]        e.g. ./run_tests.sh -x -k assignment
#
# 1. As root, installs the Debian packages the tests need when they are missing
#    (postgresql, ruby, hiera, puppet, rpm, rpmlint, python3.11, cpio, file, binutils, nginx-light, man-db,
#    bash-completion);
#    as another user it says what it skips.
# 2. Creates ./.venv (always this one, whatever virtualenv is active) and installs
#    the package in it with its test extra: pip install -e '.[test]'.
# 3. Checks the layering contracts of setup.cfg with lint-imports (import-linter).
# 4. Runs pytest on SQLite (the default) and on PostgreSQL with NAILGUN_TEST_DB_URL pointing
#    at a database it drops and recreates each run, both at once on two cores or more; after
#    each, the ConfigDB tests again with ConfigDB's git storage driver (GIT_STORAGE_TESTS).
# 5. Builds the real fuel2 (python-fuelclient 11) in ./.venv-fuel2 with this package's
#    commands, so the tests drive octane's and the spec's command lines through it.
# 6. Builds a real Keystone (its PyPI package, with gunicorn) in ./.venv-keystone; the tests
#    bootstrap it on SQLite and serve it on a loopback port (tests/keystone.py).
# 7. Builds a real Barbican (its PyPI package, with gunicorn) in ./.venv-barbican; the tests serve it
#    on a loopback port behind that Keystone, for the secrets' keys kept through castellan (tests/barbican.py).
# 8. Runs the Ruby (Hiera backend) tests, if there are any.
# It exits non-zero if any run fails and ends with one summary line per run.
#
# Environment:
#   SKIP_POSTGRES=1          skip the PostgreSQL run (quick local runs)
#   SKIP_RUBY=1              skip the Ruby tests
#   SKIP_FUEL2=1             do not build python-fuelclient's fuel2 (its tests then skip);
#                            FUEL2_BIN=/path/to/fuel2 uses an existing one
#   SKIP_KEYSTONE=1          do not build Keystone (its tests then skip, but fail when CI=true);
#                            KEYSTONE_VENV=/path/to/venv uses an existing one
#   SKIP_BARBICAN=1          do not build Barbican (its tests then skip, but fail when CI=true);
#                            BARBICAN_VENV=/path/to/venv uses an existing one
#   CI=true                  tests that need a missing part (Keystone, Barbican) fail instead of skipping
#   NAILGUN_TEST_DB_NAME     PostgreSQL test database (default nailgun_test); use your
#                            own name to run next to someone else's run
#   NAILGUN_TEST_DB_URL      when not root: the PostgreSQL URL to test against (as root
#                            the script sets up its own and ignores this)
#   PARALLEL_RUNS=0          run the SQLite and PostgreSQL passes one after the other
#   SKIP_GIT_STORAGE=1       do not run the ConfigDB tests again on the git storage driver (a full
#                            run does after each database's pass; a run with pytest arguments does not)
#   PYTHON                   interpreter used to create .venv (default: the first
#                            python3.X >= 3.10 found)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
ROOT=$PWD
VENV=$ROOT/.venv
export DEBIAN_FRONTEND=noninteractive

PG_ROLE=nailgun
PG_PASSWORD=nailgun
PG_DB=${NAILGUN_TEST_DB_NAME:-nailgun_test}
HIERA_LIB=nailgun_ext_configdb/hiera/configdb/lib

SUMMARY=()
FAILED=0

log() { printf '==> %s\n' "$*"; }
warn() { printf '==> WARNING: %s\n' "$*" >&2; }
is_root() { [ "$(id -u)" -eq 0 ]; }

# record LABEL RESULT: one line of the final summary; RESULT "passed"/"skipped ..."
# or anything else, which counts as a failure.
record() {
    local label=$1 result=$2
    SUMMARY+=("$(printf '%-22s %s' "$label" "$result")")
    case $result in
        passed* | skipped*) ;;
        *) FAILED=1 ;;
    esac
}

# --- 1. Debian packages ------------------------------------------------------

have_postgresql() { compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null && command -v pg_ctlcluster >/dev/null; }

missing_debian_packages() {
    have_postgresql || echo postgresql
    command -v ruby >/dev/null || echo ruby
    command -v hiera >/dev/null || echo hiera
    command -v puppet >/dev/null || echo puppet
    command -v rpmbuild >/dev/null || echo rpm
    command -v rpmlint >/dev/null || echo rpmlint
    command -v man >/dev/null || echo man-db       # renders the manual pages (tests/host/test_operator_habits.py)
    [ -f /usr/share/bash-completion/bash_completion ] || echo bash-completion  # fuel-ext's completion
    # the RPM's virtualenv is made with /usr/bin/python3.11 (EL9's); its test reads the payload with rpm2cpio | cpio,
    # file and readelf (tests/packaging/test_rpm.py)
    [ -x /usr/bin/python3.11 ] || echo python3.11
    command -v cpio >/dev/null || echo cpio
    command -v file >/dev/null || echo file
    command -v readelf >/dev/null || echo binutils
    # Fuel's nginx in front of the packaged snippet (tests/packaging/test_nginx.py); not started as a service
    { command -v nginx >/dev/null || [ -x /usr/sbin/nginx ]; } || echo nginx-light
    # the console's pages in a real browser (tests/console)
    command -v chromium >/dev/null || echo chromium
    command -v chromedriver >/dev/null || echo chromium-driver
    # rates the packaged units' confinement (tests/packaging/test_units.py)
    command -v systemd-analyze >/dev/null || echo systemd
    return 0
}

install_debian_packages() {
    local missing
    missing=$(missing_debian_packages | xargs)
    if [ -z "$missing" ]; then
        return 0
    fi
    if is_root && command -v apt-get >/dev/null; then
        log "apt-get install $missing"
        apt-get update -qq
        # shellcheck disable=SC2086
        apt-get install -y -qq $missing >/dev/null
    else
        warn "not root (or no apt-get): not installing $missing; tests that need them are skipped"
    fi
}

# --- 2. The virtualenv -------------------------------------------------------

find_python() {
    local candidate
    for candidate in ${PYTHON:-} python3.13 python3.12 python3.11 python3.10 python3; do
        if command -v "$candidate" >/dev/null &&
            "$candidate" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

# The install is redone only when what it depends on changes.
install_stamp() {
    local f
    {
        for f in setup.cfg setup.py pyproject.toml; do
            [ ! -f "$f" ] || cat "$f"
        done
        echo "$ROOT"
        "$VENV/bin/python" -V 2>&1
    } | sha256sum | cut -d' ' -f1
}

prepare_venv() {
    unset VIRTUAL_ENV PYTHONHOME
    if ! "$VENV/bin/python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
        local python
        if ! python=$(find_python); then
            if is_root && command -v apt-get >/dev/null; then
                log "apt-get install python3-venv"
                apt-get update -qq && apt-get install -y -qq python3 python3-venv >/dev/null
                python=$(find_python) || { echo "no usable Python >= 3.10" >&2; exit 1; }
            else
                echo "no Python >= 3.10 with venv/ensurepip found (set PYTHON=...)" >&2
                exit 1
            fi
        fi
        log "creating .venv with $python ($("$python" -V 2>&1))"
        rm -rf "$VENV"
        "$python" -m venv "$VENV"
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
    fi
    local stamp
    stamp=$(install_stamp)
    if [ "$(cat "$VENV/.run_tests.stamp" 2>/dev/null)" != "$stamp" ]; then
        log "pip install -e '.[test,feed]' into .venv"
        # setuptools in the venv: the packaging test builds the sdist with it.
        "$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[test,feed]' 'setuptools>=69.3'
        echo "$stamp" >"$VENV/.run_tests.stamp"
    fi
    export PATH="$VENV/bin:$PATH"
}

# --- 3. PostgreSQL -----------------------------------------------------------

# as_postgres CMD...: run a command as the postgres superuser, from a directory it can read.
as_postgres() { (cd / && runuser -u postgres -- "$@"); }

# Prints the URL of a freshly created test database; returns 1 (with a reason on
# stderr) when PostgreSQL cannot be used here.
setup_postgres() {
    if ! [[ $PG_DB =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then
        echo "NAILGUN_TEST_DB_NAME must be a plain identifier, not '$PG_DB'" >&2
        return 1
    fi
    if ! have_postgresql; then
        echo "PostgreSQL is not installed" >&2
        return 1
    fi
    # Prefer the Debian "main" cluster of the newest version that has one; create it if none.
    local version="" port="" status=""
    read -r version port status < <(pg_lsclusters -h | awk '$2 == "main" {print $1, $3, $4}' | sort -V | tail -1) || true
    if [ -z "${version:-}" ]; then
        version=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf '%f\n' | sort -V | tail -1)
        log "pg_createcluster $version main" >&2
        pg_createcluster "$version" main >&2
        read -r port status < <(pg_lsclusters -h | awk -v v="$version" '$1 == v && $2 == "main" {print $3, $4}')
    fi
    if [[ $status != online* ]]; then
        log "starting PostgreSQL $version/main" >&2
        local rc=0
        pg_ctlcluster "$version" main start >&2 || rc=$?
        [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || { echo "pg_ctlcluster start failed ($rc)" >&2; return 1; }
    fi
    local tries=30
    until pg_isready -q -h 127.0.0.1 -p "$port" || [ "$tries" -eq 0 ]; do
        tries=$((tries - 1))
        sleep 1
    done
    pg_isready -q -h 127.0.0.1 -p "$port" || { echo "PostgreSQL $version/main is not accepting connections on port $port" >&2; return 1; }
    as_postgres psql -p "$port" -v ON_ERROR_STOP=1 -qc \
        "DO \$\$BEGIN
           IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$PG_ROLE') THEN
             CREATE ROLE $PG_ROLE LOGIN PASSWORD '$PG_PASSWORD' CREATEDB;
           ELSE
             ALTER ROLE $PG_ROLE LOGIN PASSWORD '$PG_PASSWORD' CREATEDB;
           END IF;
         END\$\$" >&2
    as_postgres env PGOPTIONS='-c client_min_messages=warning' dropdb -p "$port" --if-exists --force "$PG_DB" >&2
    as_postgres createdb -p "$port" -O "$PG_ROLE" "$PG_DB" >&2
    echo "postgresql+psycopg://$PG_ROLE:$PG_PASSWORD@127.0.0.1:$port/$PG_DB"
}

# --- 4. Test runs ------------------------------------------------------------

# run_pytest LABEL [ENV=VALUE...] -- [pytest args...]
run_pytest() {
    local label=$1
    shift
    local env_args=()
    while [ "$1" != "--" ]; do
        env_args+=("$1")
        shift
    done
    shift
    log "pytest ($label)"
    local rc=0 start=$SECONDS
    # --durations: the slowest tests in every log, where CI's time budget is watched
    env -u NAILGUN_TEST_DB_URL "${env_args[@]}" "$VENV/bin/python" -m pytest --durations=40 --durations-min=4 "$@" || rc=$?
    local took=$((SECONDS - start))
    if [ "$rc" -eq 0 ]; then
        record "pytest ($label)" "passed in ${took}s"
    elif [ "$rc" -eq 5 ]; then
        record "pytest ($label)" "FAILED: no tests collected (rc 5) in ${took}s"
    else
        record "pytest ($label)" "FAILED (rc $rc) in ${took}s"
    fi
}

# Ruby tests of the Hiera backends (minitest). Each tests/ruby/test_*.rb runs on its
# own with the configdb module's lib on the load path: ruby -I nailgun_ext_configdb/hiera/configdb/lib FILE.
# This is the place to add further Ruby runs (e.g. `ruby -Ilib test/...` of a Puppet module).
run_ruby_tests() {
    local files=()
    shopt -s nullglob
    files=(tests/ruby/test_*.rb)
    shopt -u nullglob
    if [ "${SKIP_RUBY:-0}" = 1 ]; then
        record "ruby (hiera)" "skipped (SKIP_RUBY=1)"
        return 0
    fi
    if [ "${#files[@]}" -eq 0 ]; then
        record "ruby (hiera)" "skipped (no tests/ruby/test_*.rb)"
        return 0
    fi
    if ! command -v ruby >/dev/null; then
        record "ruby (hiera)" "skipped (ruby is not installed)"
        return 0
    fi
    local f failed=() start=$SECONDS
    for f in "${files[@]}"; do
        log "ruby -I $HIERA_LIB $f"
        ruby -I "$ROOT/$HIERA_LIB" "$f" || failed+=("$f")
    done
    if [ "${#failed[@]}" -eq 0 ]; then
        record "ruby (hiera)" "passed (${#files[@]} files) in $((SECONDS - start))s"
    else
        record "ruby (hiera)" "FAILED: ${failed[*]}"
    fi
}

# The architecture: import-linter's contracts in setup.cfg (layers, independence, allow-lists).
run_lint_imports() {
    log "lint-imports"
    local output rc=0
    output=$("$VENV/bin/lint-imports" --no-cache 2>&1) || rc=$?
    if [ "$rc" -eq 0 ]; then
        record "lint-imports" "passed: $(printf '%s\n' "$output" | grep -E '^Contracts:' | tail -1)"
    else
        printf '%s\n' "$output"
        record "lint-imports" "FAILED: a layering contract is broken (see above)"
    fi
}

# The real fuel2 with our commands installed client-side (tests/tools/make_fuel2_venv.sh).
prepare_fuel2() {
    if [ "${SKIP_FUEL2:-0}" = 1 ]; then
        record "fuel2" "skipped (SKIP_FUEL2=1): its tests skip"
        return 0
    fi
    if [ -z "${FUEL2_BIN:-}" ]; then
        log "building python-fuelclient's fuel2 in .venv-fuel2"
        if ! FUEL2_BIN=$(PYTHON="$VENV/bin/python" tests/tools/make_fuel2_venv.sh "$ROOT/.venv-fuel2"); then
            record "fuel2" "FAILED: could not build python-fuelclient"
            return 0
        fi
    fi
    export FUEL2_BIN
    record "fuel2" "passed: $FUEL2_BIN starts"
}

# prepare_service SERVICE: the real Keystone (the auth tests) or Barbican (the key manager tests), built in
# ./.venv-SERVICE by tests/tools/make_service_venv.sh, or the venv SERVICE_VENV names; its path goes to
# NAILGUN_TEST_SERVICE_VENV. SKIP_SERVICE=1 builds none (its tests then skip, or fail when CI=true).
prepare_service() {
    local service=$1 upper venv
    upper=$(printf '%s' "$service" | tr '[:lower:]' '[:upper:]')
    local skip=SKIP_$upper given=${upper}_VENV variable=NAILGUN_TEST_${upper}_VENV
    if [ "${!skip:-0}" = 1 ]; then
        unset "$variable"
        record "$service" "skipped ($skip=1): its tests skip (fail when CI=true)"
        return 0
    fi
    log "building $service in ${!given:-.venv-$service}"
    if ! venv=$(PYTHON="$VENV/bin/python" tests/tools/make_service_venv.sh "$service" "${!given:-$ROOT/.venv-$service}"); then
        unset "$variable"
        record "$service" "FAILED: could not build $service"
        return 0
    fi
    export "$variable=$venv"
    record "$service" "passed: $venv"
}

# Sets PG_URL to the PostgreSQL URL to test against, or leaves it empty (with the reason recorded).
PG_URL=
find_postgres_url() {
    if [ "${SKIP_POSTGRES:-0}" = 1 ]; then
        record "pytest (postgresql)" "skipped (SKIP_POSTGRES=1)"
    elif is_root; then
        local url
        if url=$(setup_postgres); then
            log "PostgreSQL test database: $url"
            PG_URL=$url
        else
            record "pytest (postgresql)" "FAILED: could not set up PostgreSQL"
        fi
    elif [ -n "${NAILGUN_TEST_DB_URL:-}" ]; then
        PG_URL=$NAILGUN_TEST_DB_URL
    else
        record "pytest (postgresql)" "skipped (not root and NAILGUN_TEST_DB_URL is not set)"
    fi
}

#: what runs again on the git storage driver: the ConfigDB API suite, the clients' use cases end to end
#: and the docs' console sessions
GIT_STORAGE_TESTS=(tests/configdb tests/configdb_clients/test_cli_live.py tests/configdb_clients/test_cli_sessions_live.py
                   tests/configdb_clients/test_git_storage_live.py tests/test_docs.py::test_console_session_runs_as_printed)

# run_git_storage LABEL [ENV=VALUE...]: the ConfigDB suite again on the git storage driver (a full run only:
# with pytest arguments the caller chose what to run). Its repositories go to a fresh directory.
run_git_storage() {
    local label=$1
    shift
    if [ "$PYTEST_ARG_COUNT" -ne 0 ] || [ "${SKIP_GIT_STORAGE:-0}" = 1 ]; then
        record "pytest ($label)" "skipped (pytest arguments given, or SKIP_GIT_STORAGE=1)"
        return 0
    fi
    local root
    root=$(mktemp -d "${TMPDIR:-/tmp}/configdb-git.XXXXXX")
    run_pytest "$label" "$@" NAILGUN_CONFIGDB_STORAGE=git "NAILGUN_CONFIGDB_GIT_ROOT=$root" -- -p no:cacheprovider \
        "${GIT_STORAGE_TESTS[@]}"
    rm -rf "$root"
}

# Both pytest runs at once when there are two cores or more (PARALLEL_RUNS=0: one after the
# other): much of a run waits on servers, so together they take little more than the longer.
# The PostgreSQL run keeps its own pytest cache (Keystone's saved state) and writes its output
# to .pytest-postgresql.log, shown when it ends.
run_both() {
    find_postgres_url
    local url=$PG_URL
    PYTEST_ARG_COUNT=$#
    if [ -z "$url" ]; then
        run_pytest sqlite -- "$@"
        run_git_storage "sqlite, git storage"
        return
    fi
    if [ "${PARALLEL_RUNS:-$([ "$(nproc)" -ge 2 ] && echo 1 || echo 0)}" != 1 ]; then
        run_pytest sqlite -- "$@"
        run_git_storage "sqlite, git storage"
        run_pytest postgresql "NAILGUN_TEST_DB_URL=$url" -- "$@"
        run_git_storage "postgresql, git storage" "NAILGUN_TEST_DB_URL=$url"
        return
    fi
    local log_file=$ROOT/.pytest-postgresql.log summary_file=$ROOT/.pytest-postgresql.summary
    log "pytest (postgresql) in the background: $log_file"
    (
        SUMMARY=()
        run_pytest postgresql "NAILGUN_TEST_DB_URL=$url" -- -o cache_dir=.pytest_cache/postgresql "$@"
        run_git_storage "postgresql, git storage" "NAILGUN_TEST_DB_URL=$url"
        printf '%s\n' "${SUMMARY[@]}" >"$summary_file"
    ) >"$log_file" 2>&1 &
    local background=$!
    run_pytest sqlite -- "$@"
    run_git_storage "sqlite, git storage"
    wait "$background" || true
    log "pytest (postgresql) output"
    cat "$log_file"
    local line
    while IFS= read -r line; do
        SUMMARY+=("$line")
        case $line in *passed* | *skipped*) ;; *) FAILED=1 ;; esac
    done <"$summary_file"
    [ -s "$summary_file" ] || record "pytest (postgresql)" "FAILED: the background run left no result"
}

main() {
    install_debian_packages
    prepare_venv
    run_lint_imports
    prepare_fuel2
    prepare_service keystone
    prepare_service barbican

    run_both "$@"

    run_ruby_tests

    echo
    log "summary"
    printf '    %s\n' "${SUMMARY[@]}"
    return "$FAILED"
}

main "$@"
