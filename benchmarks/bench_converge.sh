#!/usr/bin/env bash
# Converge cost of site.yml on the container lab, measured in one run for 4, 8 and 16 nodes:
# first converge, second converge (which must change nothing) and a floor playbook (one ping), with the ratios
# second/floor and first/floor, and how the second converge grows from 4 to 16 nodes.
#   BENCH_CONVERGE_NODES="4 8 16" benchmarks/bench_converge.sh
# The converges skip the verify tag: bandwidth tests cost the time their tests last, not configuration time.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The lab's name first: env.sh points the fact cache at that lab's.
export GPUFABRIC_LAB_NAME=gpufabric-bench GPUFABRIC_LAB_SUBNET=10.231.30.0/24
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
inventory=$ROOT/inventories/lab/$GPUFABRIC_LAB_NAME.yml
trap '"$ROOT/scripts/lab.sh" down' EXIT
cd "$ROOT"

timed() { # prints the seconds a command took; fails when it fails
    local start end
    start=$(date +%s.%N)
    "$@" >"$ROOT/.cache/bench-last.log" 2>&1 || { tail -30 "$ROOT/.cache/bench-last.log" >&2; return 1; }
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}
mkdir -p "$ROOT/.cache"
declare -A second
printf '%-6s %10s %10s %10s %14s %14s\n' nodes first_s second_s floor_s second/floor first/floor
for nodes in ${BENCH_CONVERGE_NODES:-4 8 16}; do
    "$ROOT/scripts/lab.sh" up "$nodes" >/dev/null 2>&1
    first=$(timed ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags verify)
    second[$nodes]=$(timed ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags verify)
    grep -q "changed=0" "$ROOT/.cache/bench-last.log"
    ! grep -E "changed=[1-9]" "$ROOT/.cache/bench-last.log" >/dev/null || { echo "second converge changed something" >&2; exit 1; }
    floor=$(timed ansible-playbook -i "$inventory" benchmarks/floor.yml)
    printf '%-6s %10.1f %10.1f %10.1f %14.2f %14.2f\n' "$nodes" "$first" "${second[$nodes]}" "$floor" \
        "$(echo "${second[$nodes]} / $floor" | bc -l)" "$(echo "$first / $floor" | bc -l)"
done
if [[ -n "${second[4]:-}" && -n "${second[16]:-}" ]]; then
    printf 'second converge, 16 nodes / 4 nodes: %.2f (4x the hosts)\n' "$(echo "${second[16]} / ${second[4]}" | bc -l)"
fi
