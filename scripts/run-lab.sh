#!/usr/bin/env bash
# The main job on the local container lab: set up, start N nodes cabled to two lldpd leaves (one node miscabled on
# purpose), configure them with playbooks/site.yml, verify them with playbooks/verify.yml, write the lab's Slurm
# topology with playbooks/scheduler.yml, and say where the reports are.
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
# Before verify: the topology depends on the fabric map only, and a bandwidth gate that fails must not hide it.
# No slurmctld in this lab: scheduler.yml writes the topology into the reports and skips the controller play.
ansible-playbook -i "$inventory" playbooks/scheduler.yml -e "scheduler_fabric_map=$ROOT/reports/discover/fabric_map.json" \
    -e "scheduler_report_dir=$ROOT/reports/scheduler"
ansible-playbook -i "$inventory" playbooks/verify.yml "${reports[@]}"
echo "run: the lab is still up (scripts/lab.sh down removes it); reports:"
find "$ROOT/reports" -maxdepth 2 -type f \( -name '*.html' -o -name '*.json' -o -name '*.prom' -o -name '*.conf' \
    -o -name hostfile \) -printf '  %p\n' 2>/dev/null | sort
echo "run: fabric map (switches, rails, the miscabled host): $ROOT/reports/discover/fabric_map.html"
echo "run: Slurm topology of the lab: $ROOT/reports/scheduler/topology.conf (host list: $ROOT/reports/scheduler/hostfile)"
