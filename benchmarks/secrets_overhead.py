"""What secrets cost a ConfigDB read, in process, against decoding the same document (the reference).

A document of about 40 KB is built from the test fixtures' astute.yaml (18 copies of it, so
72 secret leaves by the default name patterns). For each step the script prints the median
time of many runs and its ratio to ``json.loads`` of the stored document:

- ``unseal``: opening every sealed leaf, what every read of a stored document costs;
- ``classify``: finding the secret leaves (a reader's read, and every write);
- ``mask``: the masked copy a reader gets;
- ``seal``: sealing, what every write costs.

    python benchmarks/secrets_overhead.py [--copies 18] [--runs 200]
"""
import argparse
import copy
import json
import os
import statistics
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nailgun_host import secrets  # noqa: E402
from nailgun_host.settings import settings  # noqa: E402
from nailgun_platform.secrets import classify, masking, sealing  # noqa: E402

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                       "tests", "configdb_clients", "fixtures", "hiera", "astute.yaml")


def median_ms(function, runs):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=18)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        settings.reload(overrides={"SECRETS": {"key_repository": os.path.join(directory, "keys")}})
        with open(FIXTURE) as stream:
            astute = yaml.safe_load(stream)
        document = {"section{0}".format(i): copy.deepcopy(astute) for i in range(args.copies)}
        keyset = secrets.keyset()
        secret = classify.secret_pointers(document, None, secrets.patterns())
        sealed = sealing.seal(document, secret, keyset)
        stored = json.dumps(sealed)
        reference = median_ms(lambda: json.loads(stored), args.runs)
        print("document: {0} bytes of JSON, {1} bytes stored, {2} secret leaves".format(
            len(json.dumps(document)), len(stored), len(secret)))
        print("{0:<10} {1:>9} {2:>8}".format("step", "median ms", "x decode"))
        print("{0:<10} {1:>9.2f} {2:>8.2f}".format("decode", reference, 1.0))
        for name, step in (("unseal", lambda: sealing.unseal(sealed, keyset)),
                           ("classify", lambda: classify.secret_pointers(document, None, secrets.patterns())),
                           ("mask", lambda: masking.mask(document, secret)),
                           ("seal", lambda: sealing.seal(document, secret, keyset))):
            spent = median_ms(step, args.runs)
            print("{0:<10} {1:>9.2f} {2:>8.2f}".format(name, spent, spent / reference))


if __name__ == "__main__":
    main()
