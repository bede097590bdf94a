#!/usr/bin/env bash
# The main job on the local container lab: set up, start N nodes, configure them with playbooks/site.yml,
# verify them with playbooks/verify.yml, and say where the report is.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NODES=${1:-4}
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/lab.sh" up "$NODES"
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
cd "$ROOT"
inventory=inventories/lab/${GPUFABRIC_LAB_NAME:-gpufabric-lab}.yml
reports=(-e "discover_report_dir=$ROOT/reports/discover" -e "verify_report_dir=$ROOT/reports/verify")
ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags verify "${reports[@]}"
ansible-playbook -i "$inventory" playbooks/verify.yml "${reports[@]}"
echo "run: the lab is still up (scripts/lab.sh down removes it); reports:"
find "$ROOT/reports" -maxdepth 2 -type f \( -name '*.html' -o -name '*.json' -o -name '*.prom' \) -printf '  %p\n' 2>/dev/null | sort
