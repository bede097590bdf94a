"""The path MTU check's cost, measured and planned: probes and seconds per pair on a right 9000 path and behind a
leaf port left at 1500 (the silent L2 drop), then what that costs a 1,000-host sweep plan (rounds x per-round cost).

The per-pair figures come from the role's own search (plugins/module_utils/verify/path_mtu.py) with real DF pings
(iputils-ping, 1 s wait) in network namespaces inside one lab container: a veth at 9000 into a Linux bridge, one
bridge port at 9000 and one at 1500. A round's pairs probe at the same time, so a round costs its slowest pair; the
plan's rounds come from gpufabric.core's pairing (all: N-1 rounds, quick: about log2 N).
    python3 benchmarks/bench_path_mtu.py        (scripts/bench.sh, `make bench`, runs it with the others)
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".build" / "collections"))

from ansible_collections.gpufabric.core.plugins.module_utils.verify.pairing import pairing_rounds  # noqa: E402

IMAGE = "localhost/gpufabric-lab:latest"
INSIDE = r"""
set -eu
ip netns add a; ip netns add s; ip netns add b; ip netns add c
ip link add a0 netns a type veth peer name sa netns s
ip link add b0 netns b type veth peer name sb netns s
ip link add c0 netns c type veth peer name sc netns s
ip -n s link add br0 type bridge
for l in sa sb sc; do ip -n s link set $l master br0; ip -n s link set $l mtu 9000; ip -n s link set $l up; done
ip -n s link set br0 up; ip -n s link set sc mtu 1500
for n in a b c; do ip -n $n link set ${n}0 mtu 9000; ip -n $n link set ${n}0 up; done
ip -n a addr add 10.9.0.1/24 dev a0; ip -n b addr add 10.9.0.2/24 dev b0; ip -n c addr add 10.9.0.3/24 dev c0
sleep 1
ip netns exec a python3 - <<'PY'
import importlib.util, json, subprocess, time
spec = importlib.util.spec_from_file_location("path_mtu", "/collection/plugins/module_utils/verify/path_mtu.py")
pm = importlib.util.module_from_spec(spec); spec.loader.exec_module(pm)
out = {}
for name, address in (("right 9000 path", "10.9.0.2"), ("leaf port at 1500", "10.9.0.3")):
    def probe(size, over=False):
        run = subprocess.run(pm.ping_argv("ping", address, size, "a0", pm.OVER_WAIT_S if over else 1),
                             capture_output=True, text=True)
        return pm.parse_ping(run.returncode, run.stdout, run.stderr)
    result = pm.check_path(probe, 9000, "ipv4")
    out[name] = {k: result[k] for k in ("status", "path_mtu", "probes", "seconds")}
print(json.dumps(out))
PY
"""


def main():
    run = subprocess.run(["podman", "run", "--rm", "--cap-add", "NET_ADMIN", "--cap-add", "NET_RAW", "--cap-add",
                          "SYS_ADMIN", "-v", "%s:/collection:ro" % ROOT, IMAGE, "bash", "-c", INSIDE],
                         capture_output=True, text=True, check=False, timeout=300)
    if run.returncode != 0:
        raise SystemExit("the namespace lab failed (%d): %s%s" % (run.returncode, run.stdout, run.stderr))
    pairs = json.loads(run.stdout.strip().splitlines()[-1])
    for name, result in pairs.items():
        print("path MTU per pair and rail, %s: %s, path MTU %s, %d probes, %.2f s" % (
            name, result["status"], result["path_mtu"], result["probes"], result["seconds"]))
    good, bad = pairs["right 9000 path"]["seconds"], pairs["leaf port at 1500"]["seconds"]
    hosts = ["node%04d" % i for i in range(1000)]
    for mode in ("all", "quick"):
        rounds = pairing_rounds(hosts, mode)
        print("1,000-host plan, %s mode: %d rounds; 1 rail: %.1f s when every path is right, at most %.0f s when "
              "every round has a 1500 port; 8 rails probed one after the other: %.1f s / %.0f s" % (
                  mode, len(rounds), len(rounds) * good, len(rounds) * bad, 8 * len(rounds) * good,
                  8 * len(rounds) * bad))


if __name__ == "__main__":
    main()
