"""The routing lab's ECMP spread measurement, shared by tests/test_routing.py and benchmarks/bench_ecmp_spread.py.

N UDP flows with distinct source ports from a node's loopback to the anycast address behind both leaves; the
packets each uplink sent, from the interfaces' counters (BFD and BGP packets in the same instant add a few to each),
give the busiest uplink's share over its fair share (1.0: even; 2.0 with two uplinks: one took them all). The probe
runs in the node's network namespace through nsenter (failover.py says why not podman exec).
"""

import json
import subprocess
import sys
from pathlib import Path

from failover import ANYCAST, NODE_LOOPBACK, in_netns, podman_exec

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / ".build" / "collections"))

from ansible_collections.gpufabric.core.plugins.module_utils.routing.multipath_hash import spread  # noqa: E402

PROBE = str(Path(__file__).resolve().parents[1] / "files" / "ecmp_spread_probe.py")
UPLINKS = ["eth0", "eth1"]
POLICY_KEYS = ["net.ipv4.fib_multipath_hash_policy", "net.ipv6.fib_multipath_hash_policy"]


def hash_policy(node):
    return [int(value) for value in podman_exec(node, "sysctl -n %s" % " ".join(POLICY_KEYS)).split()]


def set_hash_policy(node, policy):
    """The running value only (what a drift looks like); the role puts it back."""
    podman_exec(node, "sysctl -q -w %s" % " ".join("%s=%d" % (key, policy) for key in POLICY_KEYS))


def measure(node, flows=256, packets=4):
    """{flows, sent, tx_packets per uplink, total, fair, busiest, max_over_fair, policy}."""
    probe = subprocess.run(in_netns(node, [sys.executable, PROBE, "--target", ANYCAST, "--source", NODE_LOOPBACK[node],
                                           "--uplinks", ",".join(UPLINKS), "--flows", str(flows),
                                           "--packets", str(packets)]),
                           capture_output=True, text=True, check=True, timeout=120)
    result = json.loads(probe.stdout)
    result.update(spread(result["tx_packets"]))
    result["policy"] = hash_policy(node)
    return result


def line(result):
    return "policy %s: %d flows x %d packets, per uplink %s, busiest %s at %.3f x its fair share" % (
        result["policy"][0], result["flows"], result["packets_per_flow"], json.dumps(result["tx_packets"]),
        result["busiest"], result["max_over_fair"])
