#!/usr/bin/env bash
# Converge cost of site.yml on the container lab, measured in one run for 4, 8 and 16 nodes (BENCH_CONVERGE_NODES):
# the first converge, the second converge (which must change nothing), ten no-op tasks (benchmarks/noop10.yml, the
# floor users compare with) and one ping, on the same hosts. Prints second/noop10 and first/noop10, how each grows
# from the smallest to the largest lab beside the floor's own growth, the tasks per host per role of the last
# second converge (from the role_summary callback), and every task one host ran in it, with its status.
#   BENCH_CONVERGE_NODES="4 8 16" benchmarks/bench_converge.sh
#   BENCH_CONVERGE_MITOGEN=1 ...   the same with the Mitogen strategy (an experiment; needs `pip install mitogen`)
# The converges skip the verify tag: bandwidth tests cost the time their tests last, not configuration time.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The lab's name first: env.sh points the fact cache at that lab's.
export GPUFABRIC_LAB_NAME=gpufabric-bench GPUFABRIC_LAB_SUBNET=10.231.40.0/24
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
inventory=$ROOT/inventories/lab/$GPUFABRIC_LAB_NAME.yml
log=$ROOT/.cache/bench-converge.log
trap '"$ROOT/scripts/lab.sh" down' EXIT
cd "$ROOT"
mkdir -p "$ROOT/.cache"

if [[ "${BENCH_CONVERGE_MITOGEN:-0}" == 1 ]]; then
    mitogen_dir=$(python3 -c 'import ansible_mitogen, os; print(os.path.dirname(ansible_mitogen.__file__))') ||
        { echo "BENCH_CONVERGE_MITOGEN=1 needs the mitogen package in the venv" >&2; exit 1; }
    export ANSIBLE_STRATEGY_PLUGINS=$mitogen_dir/plugins/strategy ANSIBLE_STRATEGY=mitogen_linear
    echo "strategy: mitogen_linear ($(python3 -c 'import mitogen; print(".".join(map(str, mitogen.__version__)))' 2>/dev/null || echo '?'))"
fi

timed() { # prints the seconds a command took; fails (with the log's tail) when it fails
    local start end
    start=$(date +%s.%N)
    "$@" >"$log" 2>&1 || { tail -30 "$log" >&2; return 1; }
    end=$(date +%s.%N)
    echo "$end - $start" | bc
}
ratio() { echo "$1 / $2" | bc -l; }

declare -A first second noop10 ping
read -r -a nodes_list <<<"${BENCH_CONVERGE_NODES:-4 8 16}"
printf '%-6s %9s %9s %9s %9s %14s %14s\n' nodes first_s second_s noop10_s ping_s second/noop10 first/noop10
for nodes in "${nodes_list[@]}"; do
    # A fresh lab per size: the first converge starts from bare nodes every time.
    "$ROOT/scripts/lab.sh" down >/dev/null 2>&1
    "$ROOT/scripts/lab.sh" up "$nodes" >/dev/null 2>&1
    first[$nodes]=$(timed ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags verify)
    second[$nodes]=$(timed ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags verify)
    if grep -E "changed=[1-9]" "$log" >/dev/null; then echo "the second converge changed something" >&2; exit 1; fi
    cp "$log" "$ROOT/.cache/bench-converge-second-$nodes.log"
    noop10[$nodes]=$(timed ansible-playbook -i "$inventory" benchmarks/noop10.yml)
    ping[$nodes]=$(timed ansible-playbook -i "$inventory" benchmarks/ping.yml)
    printf '%-6s %9.1f %9.1f %9.1f %9.1f %14.2f %14.2f\n' "$nodes" "${first[$nodes]}" "${second[$nodes]}" \
        "${noop10[$nodes]}" "${ping[$nodes]}" "$(ratio "${second[$nodes]}" "${noop10[$nodes]}")" \
        "$(ratio "${first[$nodes]}" "${noop10[$nodes]}")"
done

smallest=${nodes_list[0]} largest=${nodes_list[-1]}
if [[ "$smallest" != "$largest" ]]; then
    printf 'growth from %s to %s nodes: second converge x%.2f, first converge x%.2f, ten no-op tasks x%.2f, ping x%.2f\n' \
        "$smallest" "$largest" "$(ratio "${second[$largest]}" "${second[$smallest]}")" \
        "$(ratio "${first[$largest]}" "${first[$smallest]}")" "$(ratio "${noop10[$largest]}" "${noop10[$smallest]}")" \
        "$(ratio "${ping[$largest]}" "${ping[$smallest]}")"
    printf 'second converge growth / no-op growth: %.2f\n' \
        "$(ratio "$(ratio "${second[$largest]}" "${second[$smallest]}")" "$(ratio "${noop10[$largest]}" "${noop10[$smallest]}")")"
fi
echo "tasks per host of the second converge at $largest nodes (role_summary; once: run_once tasks, which run on one"
echo "host for the whole batch, mostly checks and reports on the controller):"
sed -n '/GPUFABRIC ROLE SUMMARY/,$p' "$ROOT/.cache/bench-converge-second-$largest.log" |
    awk '/tasks\/host=/ {name = substr($0, 1, index($0, "  ok=") - 1); sub(/ +$/, "", name)
         match($0, /tasks\/host=[0-9]+ \(skipped [0-9]+\)/); split(substr($0, RSTART, RLENGTH), f, /[= ()]+/)
         once = match($0, /once=[0-9]+/) ? substr($0, RSTART + 5, RLENGTH - 5) : 0
         total += f[2]; skipped += f[4]; once_total += once
         printf "  %-66s %4d tasks, %3d skipped, %3d once\n", name, f[2], f[4], once}
         END {printf "  %-66s %4d tasks, %3d skipped, %3d once\n", "total", total, skipped, once_total
              printf "  every host runs %d tasks; the host that runs the run_once tasks %d\n", total, total + once_total}'
# Every task one host ran, in order: the last node, which runs no run_once task (a loop's items count once).
host=$(grep -oE '^(ok|changed|skipping): \[[^] ]+\]' "$ROOT/.cache/bench-converge-second-$largest.log" |
    sed -E 's/.*\[(.*)\]/\1/' | sort -u | tail -1)
echo "the tasks $host ran in the second converge at $largest nodes:"
awk -v host="$host" '/^TASK \[/ {task = substr($0, 7); sub(/\] \*+$/, "", task); seen = 0}
     !seen && $0 ~ "^(ok|changed|skipping): \\[" host "\\]" {seen = 1; printf "  %3d %-9s %s\n", ++n, $1, task}' \
    "$ROOT/.cache/bench-converge-second-$largest.log"
