#!/usr/bin/env bash
# The main job on the local container lab: set up, start N nodes cabled to two lldpd leaves (one node miscabled on
# purpose) and a monitoring node, configure the nodes with playbooks/site.yml (the health role among its layers),
# write the lab's Slurm topology with playbooks/scheduler.yml, run Prometheus and Alertmanager on the monitoring node
# with playbooks/monitoring.yml, verify the nodes with playbooks/verify.yml, and say where the reports and the
# alerts are: the miscabled node's cabling alert fires there.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NODES=${1:-4}
"$ROOT/scripts/setup.sh"
GPUFABRIC_LAB_MONITOR=1 "$ROOT/scripts/lab.sh" up "$NODES"
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
cd "$ROOT"
inventory=inventories/lab/${GPUFABRIC_LAB_NAME:-gpufabric-lab}.yml
reports=(-e "discover_report_dir=$ROOT/reports/discover" -e "verify_report_dir=$ROOT/reports/verify")
# The monitoring node is no fabric host: discovery maps the GPU nodes only.
ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags verify -e discover_hosts=gpu_nodes "${reports[@]}"
# Before verify: the topology depends on the fabric map only, and a bandwidth gate that fails must not hide it.
# No slurmctld in this lab: scheduler.yml writes the topology into the reports and skips the controller play.
ansible-playbook -i "$inventory" playbooks/scheduler.yml -e "scheduler_fabric_map=$ROOT/reports/discover/fabric_map.json" \
    -e "scheduler_report_dir=$ROOT/reports/scheduler"
ansible-playbook -i "$inventory" playbooks/monitoring.yml -e gpufabric_monitoring_hosts=monitoring
ansible-playbook -i "$inventory" playbooks/verify.yml "${reports[@]}" || verified=$?
monitor=$(ansible-inventory -i "$inventory" --host monitor | python3 -c 'import json, sys; print(json.load(sys.stdin)["ansible_host"])')
echo "run: the lab is still up (scripts/lab.sh down removes it); reports:"
find "$ROOT/reports" -maxdepth 2 -type f \( -name '*.html' -o -name '*.json' -o -name '*.prom' -o -name '*.conf' \
    -o -name hostfile \) -printf '  %p\n' 2>/dev/null | sort
echo "run: fabric map (switches, rails, the miscabled host): $ROOT/reports/discover/fabric_map.html"
echo "run: Slurm topology of the lab: $ROOT/reports/scheduler/topology.conf (host list: $ROOT/reports/scheduler/hostfile)"
echo "run: Prometheus (the fabric's alerts, rules and targets): http://$monitor:9090/"
echo "run: Alertmanager (Debian's package has no web UI; its API): http://$monitor:9093/api/v2/alerts"
# The miscabled node's cabling alert fires after the rule's minute (1m) of a wrong neighbour and a scrape or two.
python3 "$ROOT/scripts/lab_alerts.py" "http://$monitor:9090" "http://$monitor:9093" --wait GpufabricCablingMismatch \
    --timeout 300
exit "${verified:-0}"
