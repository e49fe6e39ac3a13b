from nailgun_host.db.migration import run_env

run_env()
