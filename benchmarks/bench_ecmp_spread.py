"""ECMP spread, measured: the busiest uplink's packets over its fair share, at the kernel's default hash policy 0
and at the routing role's policy (l4), in one run.

In the Molecule scenario `routing` (routing-node1 with two routed uplinks to two FRR leaves), 256 UDP flows with
distinct source ports, 4 datagrams each, go from the node's loopback to the anycast address behind both leaves; the
packets per uplink are read from the interfaces' counters (molecule/routing/tests/ecmp_spread.py). Policy 0 hashes on
the addresses only: one uplink takes them all (2.0 with two uplinks). Repeated BENCH_SPREAD_RUNS times (default 5)
at the role's policy: each run's flows get new source ports.
    python3 benchmarks/bench_ecmp_spread.py     (scripts/bench.sh, `make bench`, runs it with the others)
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "molecule" / "routing" / "tests"))

from ecmp_spread import line, measure, set_hash_policy  # noqa: E402

NODE = "routing-node1"


def molecule(*args):
    result = subprocess.run(["molecule", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise SystemExit("molecule %s failed (%d)" % (" ".join(args), result.returncode))


def main():
    os.environ.setdefault("ANSIBLE_FORCE_COLOR", "false")
    runs = int(os.environ.get("BENCH_SPREAD_RUNS", "5"))
    try:
        molecule("converge", "-s", "routing")
        try:
            set_hash_policy(NODE, 0)
            l3 = measure(NODE)
        finally:
            set_hash_policy(NODE, 1)
        print(line(l3), flush=True)
        ratios = []
        for _run in range(runs):
            l4 = measure(NODE)
            print(line(l4), flush=True)
            ratios.append(l4["max_over_fair"])
        print("ECMP spread max/fair: policy 0 %.3f; role's policy (l4) %.3f worst, %.3f mean of %d runs (bound 1.3)"
              % (l3["max_over_fair"], max(ratios), sum(ratios) / len(ratios), runs))
    finally:
        molecule("destroy", "-s", "routing")


if __name__ == "__main__":
    main()
