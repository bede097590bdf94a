"""The routing lab's failover measurement, shared by tests/test_routing.py and benchmarks/bench_failover.py.

A UDP stream at one packet per millisecond from a node's loopback to the anycast address behind both leaves; the
leaf that carries the flow has its port towards the node taken down (`ip link set ... down` on the leaf: the
node's own link stays up, so only BFD or the BGP hold timer can tell), and the probe counts what never came back.

The probe and the cut run in the containers' network namespaces through nsenter, not podman exec: on the loaded
two-core lab machine a podman exec took seconds to start, so a cut meant for second 2 of a 5 s stream came after
it had ended. The cut is timed from the probe's "started" line.
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
PROBE = str(Path(__file__).resolve().parents[1] / "files" / "udp_failover_probe.py")


def vtysh_json(container, command):
    return json.loads(podman_exec(container, "vtysh -c '%s'" % command) or "null")


def in_netns(container, argv):
    """argv run by this machine in the container's network namespace (its processes, files and users are ours)."""
    pid = subprocess.run(["podman", "inspect", "--format", "{{.State.Pid}}", container], capture_output=True,
                         text=True, check=True, timeout=120).stdout.strip()
    return ["nsenter", "--target", pid, "--net"] + argv


def probe_argv(node, duration, source_port):
    return in_netns(node, [sys.executable, PROBE, "--target", ANYCAST, "--source", NODE_LOOPBACK[node],
                           "--source-port", str(source_port), "--duration", str(duration)])


def carrying_leaf(node, source_port):
    """The leaf ECMP hashes this flow onto (the echo answers with its name)."""
    probe = subprocess.run(probe_argv(node, 0.3, source_port), capture_output=True, text=True, check=True,
                           timeout=120)
    result = json.loads(probe.stdout)
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
    cut = in_netns(leaf, ["ip", "link", "set", port, "down"])
    stream = subprocess.Popen(probe_argv(node, duration, source_port),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert stream.stderr.readline().strip() == "started", "the probe did not start"
        time.sleep(cut_after)
        subprocess.run(cut, check=True, timeout=60)
        cut_at = time.monotonic()
        out, err = stream.communicate(timeout=duration + 60)
    finally:
        if stream.poll() is None:
            stream.kill()
        try:
            bfd = vtysh_json(node, "show bfd peers json")  # read before the port is back
        finally:
            subprocess.run(in_netns(leaf, ["ip", "link", "set", port, "up"]), check=True, timeout=60)
    assert stream.returncode == 0, err
    result = json.loads(out)
    result.update({"cut_leaf": leaf, "other_leaf": other, "bfd_peers_after": bfd,
                   "stream_after_cut_s": round(time.monotonic() - cut_at, 1)})
    wait_for(lambda: sessions_up(node) and ecmp_nexthops(node) == 2, 120,
             "sessions and ECMP on %s after restoring %s" % (node, leaf))
    return result
