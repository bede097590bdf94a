"""The routing lab's failover measurement, shared by tests/test_routing.py and benchmarks/bench_failover.py.

A UDP stream at one packet per millisecond from a node's loopback to the anycast address behind both leaves; the
leaf that carries the flow has its port towards the node taken down (`ip link set ... down` on the leaf: the
node's own link stays up, so only BFD or the BGP hold timer can tell), and the probe counts what never came back.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tests"))

from molecule_helpers import podman_exec  # noqa: E402

ANYCAST = "10.240.100.1"
LEAVES = ["routing-leaf1", "routing-leaf2"]
# Each leaf's port towards each node (the order of the leaf's networks in molecule.yml).
LEAF_PORT = {"routing-node1": "eth0", "routing-node2": "eth1"}
NODE_LOOPBACK = {"routing-node1": "10.240.250.11", "routing-node2": "10.240.250.12"}
PROBE = "/usr/local/bin/routing-lab-udp-probe"


def vtysh_json(container, command):
    return json.loads(podman_exec(container, "vtysh -c '%s'" % command) or "null")


def probe_command(node, duration, source_port):
    return "python3 %s --target %s --source %s --source-port %d --duration %s" % (
        PROBE, ANYCAST, NODE_LOOPBACK[node], source_port, duration)


def carrying_leaf(node, source_port):
    """The leaf ECMP hashes this flow onto (the echo answers with its name)."""
    result = json.loads(podman_exec(node, probe_command(node, 0.3, source_port)))
    assert result["received"] > 0, "no echo from behind the leaves: %s" % result
    return result["first_leaf"]


def sessions_up(node):
    summary = vtysh_json(node, "show bgp summary json")
    peers = (summary.get("ipv4Unicast") or {}).get("peers") or {}
    return len(peers) == 2 and all(peer.get("state") == "Established" for peer in peers.values())


def ecmp_nexthops(node):
    routes = json.loads(podman_exec(node, "ip -j route show %s" % ANYCAST) or "[]")
    return sum(len(route.get("nexthops") or [route]) for route in routes)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(1)
    raise AssertionError("timed out after %d s waiting for %s" % (timeout, what))


def measure(node="routing-node1", cut_after=2.0, duration=6.0, source_port=47000):
    """Cut the carrying leaf's port during a stream; return the probe's figures, which leaf was cut and the node's
    BFD view of that leaf right after the stream ended. The port is restored and the sessions and ECMP route
    waited for before returning."""
    wait_for(lambda: sessions_up(node) and ecmp_nexthops(node) == 2, 90, "sessions and ECMP on %s" % node)
    leaf = carrying_leaf(node, source_port)
    other = [name for name in LEAVES if name != leaf][0]
    port = LEAF_PORT[node]
    stream = subprocess.Popen(["podman", "exec", node, "bash", "-c", probe_command(node, duration, source_port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(cut_after)
        podman_exec(leaf, "ip link set %s down" % port)
        cut_at = time.monotonic()
        out, err = stream.communicate(timeout=duration + 60)
    finally:
        if stream.poll() is None:
            stream.kill()
    bfd = vtysh_json(node, "show bfd peers json")
    podman_exec(leaf, "ip link set %s up" % port)
    assert stream.returncode == 0, err
    result = json.loads(out)
    result.update({"cut_leaf": leaf, "other_leaf": other, "bfd_peers_after": bfd,
                   "stream_after_cut_s": round(time.monotonic() - cut_at, 1)})
    wait_for(lambda: sessions_up(node) and ecmp_nexthops(node) == 2, 120,
             "sessions and ECMP on %s after restoring %s" % (node, leaf))
    return result
