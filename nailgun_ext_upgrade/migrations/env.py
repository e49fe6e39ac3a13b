from nailgun_host.public import run_env

run_env()
