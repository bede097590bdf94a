#!/usr/bin/env bash
# Every benchmark, in one run; not part of the tests. Figures are wall times and ratios measured in this run.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$ROOT/scripts/setup.sh" >/dev/null
"$ROOT/scripts/lab.sh" image >/dev/null
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
for bench in "$ROOT"/benchmarks/bench_*; do
    echo "== ${bench#"$ROOT"/}"
    case $bench in
        *.py) python3 "$bench" ;;
        *.sh) bash "$bench" ;;
    esac
done
