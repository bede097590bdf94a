"""Failover of routed uplinks, measured: BFD at 100 ms x 3 against the BGP hold timer alone, in one run.

In the Molecule scenario `routing` (two FRR leaves, nodes with two routed uplinks each), a UDP stream at one
packet per millisecond runs from routing-node1's loopback to the anycast address behind both leaves, and the leaf
that carries it has its port towards the node taken down (the node's own link stays up, so only BFD or the BGP hold
timer can tell). Printed: packets lost and the longest gap, first with the role's BFD profile, then the same stream
with BFD off and the BGP timers below (the node is reconfigured by the role and its sessions cleared, since BGP
negotiates the hold time when a session opens), and the ratio of the two losses. Figures from one run, not a test:
the lab machine's load moves them by tens of milliseconds.
    python3 benchmarks/bench_failover.py     (scripts/bench.sh, `make bench`, runs it with the others)
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "molecule" / "routing" / "tests"))

from failover import measure, podman_exec, sessions_up, wait_for  # noqa: E402

NODE = "routing-node1"
# The hold-timer contrast: short timers so that the run stays short (FRR's defaults are 60 s / 180 s).
KEEPALIVE_S, HOLD_S = 3, 9
CUT_AFTER_S = 2.0


def molecule(*args):
    result = subprocess.run(["molecule", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise SystemExit("molecule %s failed (%d)" % (" ".join(args), result.returncode))


def row(label, result):
    print("%-40s %8d %8d %8d %10.1f %10d  %s -> %s" % (
        label, result["sent"], result["missing"], result["gap_lost_packets"], result["longest_gap_ms"],
        result["replies_by_leaf"].get(result["other_leaf"], 0), result["first_leaf"], result["last_leaf"]))


def main():
    os.environ.setdefault("ANSIBLE_FORCE_COLOR", "false")
    started = time.monotonic()
    try:
        molecule("converge", "-s", "routing")
        with_bfd = measure(NODE, cut_after=CUT_AFTER_S, duration=CUT_AFTER_S + 6.0)
        print("with BFD: %s" % json.dumps({k: v for k, v in with_bfd.items() if k != "bfd_peers_after"}), flush=True)
        no_bfd = {"routing_bfd_enabled": False, "routing_bgp_keepalive": KEEPALIVE_S, "routing_bgp_hold": HOLD_S}
        molecule("converge", "-s", "routing", "--", "--limit", NODE, "-e", json.dumps(no_bfd))
        podman_exec(NODE, "vtysh -c 'clear bgp *'")
        wait_for(lambda: sessions_up(NODE), 90, "sessions on %s with BFD off" % NODE)
        # The stream outlasts the hold time, so that traffic is seen resuming over the other leaf.
        hold_only = measure(NODE, cut_after=CUT_AFTER_S, duration=CUT_AFTER_S + HOLD_S + 4.0)
        print("BGP hold timer only: %s" % json.dumps({k: v for k, v in hold_only.items() if k != "bfd_peers_after"}),
              flush=True)
    finally:
        molecule("destroy", "-s", "routing")
    print("failover of a 1 packet/ms UDP stream when the carrying leaf's port goes down (%s), one run, %.0f s"
          % (NODE, time.monotonic() - started))
    print("%-40s %8s %8s %8s %10s %10s  %s" % ("", "sent", "missing", "in_gap", "gap_ms", "via_other", "path"))
    row("BFD 100 ms x 3", with_bfd)
    row("no BFD, BGP keepalive %d s / hold %d s" % (KEEPALIVE_S, HOLD_S), hold_only)
    ratio = hold_only["missing"] / with_bfd["missing"] if with_bfd["missing"] else float("inf")
    print("packets lost without BFD / with BFD: %d / %d = %.1fx" % (hold_only["missing"], with_bfd["missing"], ratio))


if __name__ == "__main__":
    main()
