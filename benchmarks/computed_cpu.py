#!/usr/bin/env python3
"""CPU per computed effective GET, in process (issue 27, goal 2): ``read_misses.py``'s 41 KB node URL (the 39 KB
astute at the environment level, a small document per node) through ``build_wsgi()`` with ``READ_CACHE.max_bytes:
0`` (every answer computed), called by ``webtest`` in this process on a scratch SQLite database;
``time.process_time()`` around each batch of GETs, so the figure is this process's CPU whatever the machine's load
(which still inflates it: shared caches, frequency). ``--profile`` prints cProfile's top functions of 200 more GETs.
For a before/after, run it alternately on two checkouts (``PYTHONPATH=<other checkout>``), same machine, same load.

CPU time on a shared machine moves by a third from run to run; instructions do not. ``--instructions`` (under
callgrind, started with instrumentation off) switches it on for the measured GETs only, so callgrind's total
divided by ``--gets`` is the instructions per computed GET, whatever the load:

    python benchmarks/computed_cpu.py [--gets 250] [--profile] [--sort tottime] [--dump FILE]
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/cg.out \
        python benchmarks/computed_cpu.py --gets 20 --instructions   # then: Collected / 20
"""
import argparse
import cProfile
import hashlib
import io
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time

from references import load_average, sized_documents

CONFIG = "/api/v1/config"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gets", type=int, default=250, help="GETs measured, in 5 batches")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--instructions", action="store_true",
                        help="under callgrind: instrument the measured GETs only (see above)")
    parser.add_argument("--dump", metavar="FILE", help="with --profile, also write the statistics there (pstats)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        os.environ["NAILGUN_KEY_REPOSITORY"] = os.path.join(directory, "keys")
        import webtest
        from nailgun_host import db
        from nailgun_host.app import build_wsgi
        from nailgun_host.db import migration
        from nailgun_host.settings import settings

        url = "sqlite:///" + os.path.join(directory, "db.sqlite")
        settings.reload(overrides={"DATABASE_URL": url, "READ_CACHE": {"max_bytes": 0}})
        migration.syncdb(url)
        db.configure(url)
        app = webtest.TestApp(build_wsgi(), extra_environ={"REMOTE_ADDR": "127.0.0.1"})
        app.post_json(CONFIG + "/components", {"name": "fuel", "resource_definitions": [{"name": "astute"}]})
        app.post_json(CONFIG + "/environments", {"id": 1, "components": ["fuel"], "hierarchy_levels": ["nodes"]})
        app.put_json(CONFIG + "/environments/1/resources/1/values", sized_documents()["39 KB"])
        for node in range(1, 21):
            app.put_json(CONFIG + "/environments/1/nodes/node-{0}/resources/1/values".format(node),
                         {"uid": str(node), "fqdn": "node-{0}.domain.tld".format(node)})
        target = CONFIG + "/environments/1/nodes/node-1/resources/1/values?effective"
        body = app.get(target).body
        for _ in range(30):
            app.get(target)
        if args.instructions:
            _instrument("on")
            for _ in range(args.gets):
                app.get(target)
            _instrument("off")
            print("{0} GETs of {1} B (answer sha256 {2}) instrumented: divide callgrind's total by {0}".format(
                args.gets, len(body), hashlib.sha256(body).hexdigest()[:16]))
        else:
            measure(app, target, body, args)
        db.get_engine().dispose()


def measure(app, target, body, args):
    """CPU per GET in batches; with ``--profile``, cProfile's figures of 200 more."""
    batches, size = [], max(1, args.gets // 5)
    for _ in range(5):
        started = time.process_time()
        for _ in range(size):
            app.get(target)
        batches.append((time.process_time() - started) / size * 1000)
    print("CPU per computed GET of {0} B: median {1:.2f} ms (batches {2}); answer sha256 {3}; load {4}".format(
        len(body), statistics.median(batches), " ".join("{0:.2f}".format(b) for b in batches),
        hashlib.sha256(body).hexdigest()[:16], load_average()))
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(200):
            app.get(target)
        profile.disable()
        if args.dump:
            profile.dump_stats(args.dump)
        out = io.StringIO()
        pstats.Stats(profile, stream=out).sort_stats(args.sort).print_stats(40)
        print(out.getvalue())


def _instrument(state):
    """Switch callgrind's instrumentation of this process ``on`` or ``off``."""
    subprocess.run(["callgrind_control", "--instr=" + state, str(os.getpid())], check=True, capture_output=True)


if __name__ == "__main__":
    sys.exit(main())
