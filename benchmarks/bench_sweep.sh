#!/usr/bin/env bash
# Wall time of an "all" bandwidth sweep over 8 lab nodes against the same tests run one pair at a time, in one run.
# Both runs use playbooks/verify.yml with iperf3 (the lab has no RDMA): the first with the planned rounds (N-1 rounds
# of N/2 concurrent pairs), the second with verify_rounds set to one pair per round, in the same order. The ideal
# ratio is (N-1) / (N(N-1)/2) = 2/N; what is above it is Ansible's per-round cost. Printed: the whole playbook's
# wall time and the sweep's own span (first test start to last test end, from the reports), for both runs.
#   BENCH_NODES=8 BENCH_DURATION=5 benchmarks/bench_sweep.sh
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The lab's name first: env.sh points the fact cache at that lab's.
export GPUFABRIC_LAB_NAME=gpufabric-bench-sweep GPUFABRIC_LAB_SUBNET=10.231.10.0/24
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
NODES=${BENCH_NODES:-8}
DURATION=${BENCH_DURATION:-5}
inventory=$ROOT/inventories/lab/$GPUFABRIC_LAB_NAME.yml
work=$ROOT/.cache/bench-sweep
trap '"$ROOT/scripts/lab.sh" down >/dev/null 2>&1' EXIT
cd "$ROOT"
rm -rf "$work"
mkdir -p "$work"

"$ROOT/scripts/lab.sh" up "$NODES" >"$work/lab.log" 2>&1 || { tail -20 "$work/lab.log" >&2; exit 1; }
common=(-i "$inventory" playbooks/verify.yml -e gpufabric_verify_hosts=lab -e verify_bandwidth_tool=iperf3
        -e verify_duration="$DURATION" -e verify_poll_interval=1 -e verify_nccl_single_node=false
        -e verify_fail_hosts=false -e '{"verify_thresholds_gbps": {"lab": 0.1}}')

# Install iperf3 first, so that neither measured run pays for it.
ansible-playbook "${common[@]}" --tags verify_install >"$work/install.log" 2>&1 || { tail -20 "$work/install.log" >&2; exit 1; }

# The one-pair-at-a-time plan: the pairs of the all-mode plan, each in a round of its own.
mapfile -t hosts < <(ansible-inventory -i "$inventory" --graph lab | sed -n 's/^ *|--//p')
PYTHONPATH=$ROOT/.build/collections python3 - "$work/serial.json" "${hosts[@]}" <<'PY'
import json, sys
from ansible_collections.gpufabric.core.plugins.module_utils.verify.pairing import pairing_rounds
rounds = pairing_rounds(sys.argv[2:], "all")
json.dump({"verify_rounds": [[pair] for one_round in rounds for pair in one_round]}, open(sys.argv[1], "w"))
PY

timed() { # seconds the command took; its output in $work/$1.log
    local name=$1 start end
    shift
    start=$(date +%s.%N)
    "$@" >"$work/$name.log" 2>&1 || { tail -30 "$work/$name.log" >&2; return 1; }
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}
concurrent=$(timed concurrent ansible-playbook "${common[@]}" -e verify_pairing_mode=all -e verify_report_dir="$work/all")
serial=$(timed serial ansible-playbook "${common[@]}" -e @"$work/serial.json" -e verify_report_dir="$work/serial")

python3 - "$work" "$NODES" "$concurrent" "$serial" <<'PY'
import json, sys
work, nodes, concurrent_s, serial_s = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
reports = dict((name, json.load(open("%s/%s/verify.json" % (work, name)))) for name in ("all", "serial"))
pairs = dict((name, sorted(tuple(sorted((t["client"], t["server"]))) for t in report["tests"])) for name, report in reports.items())
assert pairs["all"] == pairs["serial"], "the two runs did not test the same pairs"
assert len(pairs["all"]) == nodes * (nodes - 1) // 2, "expected every pair of %d nodes once" % nodes
errors = [t for report in reports.values() for t in report["tests"] if t["error"]]
assert not errors, "tests failed: %s" % errors[:3]
span = dict((name, max(t["ended_at"] for t in r["tests"]) - min(t["started_at"] for t in r["tests"])) for name, r in reports.items())
rounds = dict((name, len(r["rounds"])) for name, r in reports.items())
print("%d nodes, %d pairs, iperf3 --bidir %s s per test" % (nodes, len(pairs["all"]), reports["all"]["meta"]["duration_s"]))
print("%-22s %8s %12s %10s" % ("run", "rounds", "playbook_s", "sweep_s"))
print("%-22s %8d %12.1f %10.1f" % ("all, concurrent pairs", rounds["all"], concurrent_s, span["all"]))
print("%-22s %8d %12.1f %10.1f" % ("one pair at a time", rounds["serial"], serial_s, span["serial"]))
print("ratio concurrent/serial: playbook %.3f, sweep %.3f (ideal 2/N = %.3f)" % (concurrent_s / serial_s, span["all"] / span["serial"], 2.0 / nodes))
PY
