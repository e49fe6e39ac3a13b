"""Settings: built-in defaults, overridden by a YAML file and the environment.

The file is the one given by ``--config`` or ``NAILGUN_CONFIG``, else the packaged
``/etc/fuel-nailgun-extensions/settings.yaml`` when it exists, never Nailgun's own
``/etc/nailgun/settings.yaml`` (so a service whose environment lost ``NAILGUN_CONFIG``
still finds its PostgreSQL, instead of a SQLite file in ``$HOME``); a name the defaults
do not have, at the top or in a checked section, is refused rather than ignored, and so is
a key the file gives twice (``strict_yaml``: the second would silently replace the first);
``NAILGUN_CONFIG=`` (empty) reads no file. The database URL may also come from
``NAILGUN_DB_URL``. Extensions declare their own sections through the contract
(``BaseExtension.settings_sections``: their defaults, environment variables and checks); the
host merges them here, and the extensions read them from the same object.

Importing this module reads no file: ``settings`` holds the defaults until an entry
point (``nailgun-api``, ``nailgun-syncdb``, ``nailgun_host.wsgi``) calls ``reload``,
so ``--config`` is read instead of ``NAILGUN_CONFIG``, not after it.
"""
import copy
import os

from nailgun_host import extensions
from nailgun_platform import hosting, secrets, strict_yaml

#: the settings file the RPM installs (specs/, packaging/settings.yaml), read when nothing names another
DEFAULT_FILE = "/etc/fuel-nailgun-extensions/settings.yaml"

DEFAULTS = {
    "DATABASE_URL": None,  # None: the embedded SQLite file below
    "SQLITE_PATH": os.path.join(os.path.expanduser("~"), ".nailgun", "nailgun.db"),
    "MAX_REQUEST_BODY": 10 * 1024 * 1024,
    "DNS_DOMAIN": "domain.tld",
    "MASTER_IP": "10.20.0.2",
    "ADMIN_NETWORK": {
        "cidr": "10.20.0.0/24",
        "gateway": "10.20.0.1",
        "ip_ranges": [["10.20.0.3", "10.20.0.254"]],
    },
    "FEATURE_GROUPS": [],
    # configuration sessions (seeds 000/001): docs/api/sessions.md; nailgun_host.objects.config_session
    "SESSIONS": {
        "ttl": 86400,  # seconds a session stays open after its last staging write
        "max_age": 604800,  # seconds after its opening that a session expires whatever it does
        "keep_days": 7,  # days the staged documents of ended, undeployed sessions are kept
        "strict": False,  # True: a deploy invalidates every other open session (Murano); False: per document
        "direct_model_patch": True,  # False: a model PATCH needs X-Configuration-Session (seed 000)
        "max_documents": 1000,  # documents one session may stage
    },
    # RFC 6902 patches (the environment model, ConfigDB documents): nailgun_platform.patching
    "PATCH": {
        "max_operations": 1000,  # operations one patch may hold; more is a 400
    },
    # the change feed: docs/api/change-feed.md; nailgun_platform.notify
    "FEED": {
        "max_wait": 60,  # the longest ?wait= in seconds
        "thread_waiters": 2,  # waiting requests per process a thread-per-request server may hold
    },
    # answers of GETs replayed from memory while their state is unchanged: nailgun_platform.read_cache
    "READ_CACHE": {
        "max_bytes": 64 * 1024 * 1024,  # bodies kept per process, least recently used out first; 0: no cache
        # ConfigDB documents' opened content kept per process for computed reads (their JSON text; parsed, a few
        # times that), least recently used out first; 0: none (nailgun_ext_configdb.objects.opened)
        "documents_max_bytes": 32 * 1024 * 1024,
        "lease_ms": 5,  # how long a worker trusts the state it read; every write's answer waits as long
        # thread: a request thread reads the state when its lease is up; process: a child process of each server
        # process reads it while requests come (nailgun_platform.state_board)
        "state_reader": "thread",
    },
    # secrets at rest and who sees them: docs/operator/secrets.md; nailgun_platform.secrets
    "SECRETS": {
        "key_manager": "local",  # local: the keys in key_repository, on disk; castellan: in the cloud's key manager
        "key_repository": None,  # None: <SQLite file>.fernet-keys; required for any other database (local)
        "patterns": None,  # None: nailgun_platform.secrets.classify.DEFAULT_PATTERNS
        # key_manager castellan: docs/operator/secrets.md; nailgun_platform.secrets.key_manager
        "castellan": {
            "backend": "barbican",  # castellan's backend
            "barbican_endpoint": None,  # None: the Keystone catalog's key-manager endpoint
            "interface": "public",  # the catalog's endpoint interface: public | internal | admin
            # the Keystone user (auth_url, username, password, project_name, user_domain_name,
            # project_domain_name, cafile); None: AUTH.keystone's service user
            "auth": None,
            "keys_seconds": 60,  # how long a process keeps the keys it fetched before it asks again
            "timeout": 5,  # seconds a call to Keystone or the key manager may take
        },
    },
    # the log: docs/operator/logs-and-stats.md; nailgun_host.request_log
    "LOG": {
        "file": None,  # None: stderr; a path: appended to, and reopened when logrotate moves it
        "level": "INFO",  # INFO: a line per request and every warning and error; DEBUG: more, never a secret
    },
    # request statistics (GET /stats, /metrics): docs/operator/logs-and-stats.md; nailgun_host.stats
    "STATS": {
        "flush_seconds": 10,  # how often each process adds its counts to the database (what /stats reads)
        "metrics_dir": None,  # prometheus_client's multiprocess directory; None: $PROMETHEUS_MULTIPROC_DIR or none
    },
    # who may call the API: docs/operator/auth-and-tls.md; nailgun_host.auth
    "AUTH": {
        "method": "none",  # none | local | keystone
        "allow_insecure_no_auth": False,  # method none: serve clients off loopback too (auth.middleware)
        "realm": "nailgun",
        "users_file": "/var/lib/fuel-nailgun-extensions/users.yaml",
        "token_ttl": 3600,
        "credential_cache_ttl": 60,
        # password guessing: docs/operator/auth-and-tls.md; nailgun_host.auth.check_slots and .lockout
        "password_checks": None,  # password checks at once per process; None: one per CPU core
        "password_check_wait_ms": 100,  # how long a check waits for a free slot before 503
        "lockout_failure_attempts": 5,  # failed passwords in a row that lock a user name; 0: never locked
        "lockout_address_failure_attempts": 20,  # the same for a client address; 0: never locked
        "lockout_duration": 300,  # seconds a lock lasts
        "policy_file": None,
        "keystone": {
            "auth_url": None,
            "www_authenticate_uri": None,
            "username": None,
            "password": None,
            "project_name": None,
            "user_domain_name": "Default",
            "project_domain_name": "Default",
            "basic_project": "admin",
            "projects": None,  # None: only basic_project
            "interface": "public",
            "cafile": None,
            "token_cache_time": 300,
            "timeout": 10,
        },
    },
}


def _merged(base, update, prefix=""):
    """``update`` over ``base``, mapping sections merged key by key (a file names only what it changes)."""
    merged = dict(base)
    for key, value in update.items():
        if isinstance(base.get(key), dict) and base[key]:
            if not isinstance(value, dict):
                raise ValueError("{0}{1} must be a mapping of settings, not {2!r}".format(prefix, key, value))
            value = _merged(base[key], value, "{0}{1}.".format(prefix, key))
        merged[key] = value
    return merged


def _unknown_keys(given, known, prefix, where=""):
    unknown = sorted(set(given) - set(known), key=str)
    if unknown:
        raise ValueError("unknown settings {0}{1}: a typo here could leave the API open".format(
            ", ".join(prefix + str(key) for key in unknown), where))


def _check_auth(auth):
    """The AUTH section must say unambiguously how requests are authenticated."""
    if "enabled" in auth:
        raise ValueError("AUTH.enabled is no longer read: set AUTH.method to local or keystone (or none)")
    _unknown_keys(auth, DEFAULTS["AUTH"], "AUTH.")
    _unknown_keys(auth["keystone"], DEFAULTS["AUTH"]["keystone"], "AUTH.keystone.")
    if not isinstance(auth["allow_insecure_no_auth"], bool):
        raise ValueError("AUTH.allow_insecure_no_auth must be true or false, not {0!r}".format(
            auth["allow_insecure_no_auth"]))
    if auth.get("method") not in ("none", "local", "keystone"):
        raise ValueError("AUTH.method must be none, local or keystone, not {0!r}".format(auth.get("method")))
    if auth["method"] == "keystone" and not (auth.get("keystone") or {}).get("auth_url"):
        raise ValueError("AUTH.method keystone needs AUTH.keystone.auth_url")
    _check_login_limits(auth)


def _check_login_limits(auth):
    """Whole numbers; a check waits for a slot briefly at most: it holds a server thread meanwhile."""
    _check_numbers({key: auth[key] for key in LOGIN_LIMITS}, "AUTH")
    checks = auth["password_checks"]
    if checks is not None and not (isinstance(checks, int) and not isinstance(checks, bool) and checks >= 1):
        raise ValueError("AUTH.password_checks must be a whole number of at least 1, or null (one per CPU core), "
                         "not {0!r}".format(checks))
    if auth["password_check_wait_ms"] > MAX_CHECK_WAIT_MS:
        raise ValueError("AUTH.password_check_wait_ms must be at most {0}, not {1!r}".format(
            MAX_CHECK_WAIT_MS, auth["password_check_wait_ms"]))


def _check_key_repository(settings):
    """A database that is not a SQLite file (PostgreSQL) is shared by hosts: they must name its keys (unless the
    key manager holds them)."""
    if settings["SECRETS"]["key_manager"] == "local" and settings["SECRETS"]["key_repository"] is None \
            and settings.sqlite_file is None:
        raise ValueError("SECRETS.key_repository must name the directory of the secrets' keys when the database "
                         "is not a SQLite file (every host of it needs the same keys); also NAILGUN_KEY_REPOSITORY")


def _check_secrets(section):
    _unknown_keys(section, DEFAULTS["SECRETS"], "SECRETS.")
    if section["key_manager"] not in ("local", "castellan"):
        raise ValueError("SECRETS.key_manager must be local or castellan, not {0!r}".format(section["key_manager"]))
    castellan = section["castellan"]
    _unknown_keys(castellan, DEFAULTS["SECRETS"]["castellan"], "SECRETS.castellan.")
    for name in ("keys_seconds", "timeout"):
        if not (isinstance(castellan[name], int) and not isinstance(castellan[name], bool) and castellan[name] >= 1):
            raise ValueError("SECRETS.castellan.{0} must be a whole number of at least 1, not {1!r}".format(
                name, castellan[name]))
    if castellan["auth"] is not None:
        if not isinstance(castellan["auth"], dict):
            raise ValueError("SECRETS.castellan.auth must be a mapping of the Keystone user's settings or null")
        _unknown_keys(castellan["auth"], secrets.KEY_MANAGER_USER, "SECRETS.castellan.auth.")
    patterns = section.get("patterns")
    if patterns is not None and not (
            isinstance(patterns, list) and all(isinstance(p, str) and p for p in patterns)):
        raise ValueError("SECRETS.patterns must be a list of key-name patterns such as '*password*'")


def _check_numbers(section, name):
    for key, value in section.items():
        least = MINIMUMS.get(name + "." + key, 0)
        if key in DEFAULTS[name] and isinstance(DEFAULTS[name][key], int) and not isinstance(DEFAULTS[name][key], bool) \
                and not (isinstance(value, int) and not isinstance(value, bool) and value >= least):
            raise ValueError("{0}.{1} must be a whole number of at least {2}, not {3!r}".format(
                name, key, least, value))


def _check_flags(section, name):
    for key, value in section.items():
        if isinstance(DEFAULTS[name].get(key), bool) and not isinstance(value, bool):
            raise ValueError("{0}.{1} must be true or false, not {2!r}".format(name, key, value))


def _check_read_cache(read_cache):
    """A write's answer waits ``lease_ms``: a worker must not be held for long."""
    if read_cache["lease_ms"] > MAX_LEASE_MS:
        raise ValueError("READ_CACHE.lease_ms must be at most {0}, not {1!r}".format(
            MAX_LEASE_MS, read_cache["lease_ms"]))
    if read_cache["state_reader"] not in STATE_READERS:
        raise ValueError("READ_CACHE.state_reader must be one of {0}, not {1!r}".format(
            ", ".join(STATE_READERS), read_cache["state_reader"]))


def _check_log(log):
    """The log must be writable somewhere and at a level ``logging`` knows."""
    _unknown_keys(log, DEFAULTS["LOG"], "LOG.")
    if log["file"] is not None and not (isinstance(log["file"], str) and log["file"]):
        raise ValueError("LOG.file must be a file's path or null (stderr), not {0!r}".format(log["file"]))
    if log["level"] not in LOG_LEVELS:
        raise ValueError("LOG.level must be one of {0}, not {1!r}".format(", ".join(LOG_LEVELS), log["level"]))


def _check_stats(stats):
    """``flush_seconds``: at least 1 (``MINIMUMS``, checked with the other whole numbers)."""
    if stats["metrics_dir"] is not None and not (isinstance(stats["metrics_dir"], str) and stats["metrics_dir"]):
        raise ValueError("STATS.metrics_dir must be a directory's path or null, not {0!r}".format(
            stats["metrics_dir"]))


def _check_sessions(sessions):
    """A session must be able to live at all: no zero lifetimes or document limits."""
    for key in ("ttl", "max_age", "max_documents"):
        if sessions[key] < 1:
            raise ValueError("SESSIONS.{0} must be at least 1, not {1!r}".format(key, sessions[key]))


#: the longest READ_CACHE.lease_ms: what a write's answer may be held
MAX_LEASE_MS = 1000
STATE_READERS = ("thread", "process")
#: the longest AUTH.password_check_wait_ms
MAX_CHECK_WAIT_MS = 1000
#: the AUTH settings that bound password checks (whole numbers)
LOGIN_LIMITS = ("password_check_wait_ms", "lockout_failure_attempts", "lockout_address_failure_attempts",
                "lockout_duration")
#: whole-number settings whose least value is not 0 (one message for every value below it)
MINIMUMS = {"STATS.flush_seconds": 1, "AUTH.lockout_duration": 1}

#: sections whose numbers and flags are checked (every section's unknown keys are refused: a misspelt limit
#: must not silently keep the default)
CHECKED_SECTIONS = ("SESSIONS", "PATCH", "FEED", "READ_CACHE", "STATS")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


def all_defaults():
    """The host's defaults and the sections the loaded extensions declare (``BaseExtension.settings_sections``)."""
    declared = extension_sections()
    clashing = sorted(set(declared) & set(DEFAULTS))
    if clashing:
        raise ValueError("an extension declares the host's settings {0}".format(", ".join(clashing)))
    return dict(DEFAULTS, **declared)


def extension_sections():
    """``{section: defaults}`` the loaded extensions declare."""
    sections = {}
    for declared in extensions.fire("settings_sections"):
        sections.update(declared)
    return sections


def _environment_overrides(settings):
    """The extensions' environment variables (``BaseExtension.settings_environment``) over their sections."""
    for variables in extensions.fire("settings_environment"):
        for variable, (name, key) in variables.items():
            if os.environ.get(variable):
                settings[name][key] = os.environ[variable]


class Settings(dict):
    """A dict of settings with a ``reload`` that starts again from the defaults."""

    def __missing__(self, name):
        """An extension's section read before ``reload`` (a test, a script): its defaults."""
        declared = extension_sections()
        if name not in declared:
            raise KeyError(name)
        self[name] = copy.deepcopy(declared[name])
        return self[name]

    def reload(self, path=None, overrides=None):
        defaults = all_defaults()
        self.clear()
        self.update(copy.deepcopy(defaults))
        if not path:
            path = os.environ.get("NAILGUN_CONFIG")
        if path is None and os.path.exists(DEFAULT_FILE):
            path = DEFAULT_FILE
        if path:
            with open(path) as stream:
                try:
                    loaded = strict_yaml.load(stream) or {}
                except strict_yaml.DuplicateKey as exc:
                    raise ValueError("{0}: {1}".format(path, exc))
            if not isinstance(loaded, dict):
                raise ValueError("{0} is not a YAML mapping of setting names".format(path))
            # a misspelt name (DATABSE_URL) would silently keep the default (SQLite in $HOME)
            _unknown_keys(loaded, defaults, "", " in " + path)
            self.update(_merged(self, loaded))
        if os.environ.get("NAILGUN_DB_URL"):
            self["DATABASE_URL"] = os.environ["NAILGUN_DB_URL"]
        if os.environ.get("NAILGUN_KEY_REPOSITORY"):
            self["SECRETS"]["key_repository"] = os.environ["NAILGUN_KEY_REPOSITORY"]
        _environment_overrides(self)
        _unknown_keys(overrides or {}, defaults, "")
        self.update(_merged(self, overrides or {}))
        extensions.fire("check_settings_sections", self)
        _check_auth(self["AUTH"])
        _check_secrets(self["SECRETS"])
        for name in CHECKED_SECTIONS:
            _check_numbers(self[name], name)
            _check_flags(self[name], name)
        _check_sessions(self["SESSIONS"])
        _check_read_cache(self["READ_CACHE"])
        _check_log(self["LOG"])
        _check_stats(self["STATS"])
        for name, keys in defaults.items():  # a section's keys are its defaults': a misspelt one is refused
            if isinstance(keys, dict) and keys:
                _unknown_keys(self[name], keys, name + ".")
        _check_key_repository(self)
        return self

    @property
    def database_url(self):
        if self.get("DATABASE_URL"):
            return self["DATABASE_URL"]
        return "sqlite:///" + self["SQLITE_PATH"]

    @property
    def sqlite_file(self):
        """The absolute path of the SQLite file the database URL names; None for any other database (an
        in-memory SQLite one included), and for a URL that is not one (using it says why)."""
        import sqlalchemy

        try:
            url = sqlalchemy.make_url(self.database_url)
        except sqlalchemy.exc.ArgumentError:
            return None
        if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:") or \
                url.database.startswith("file:"):
            return None
        return os.path.abspath(url.database)


settings = Settings(copy.deepcopy(DEFAULTS))
hosting.provide(settings=settings)
