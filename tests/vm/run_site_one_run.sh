#!/usr/bin/env bash
# playbooks/site.yml on two bare VMs of scripts/vmlab.sh, asserted by tests/vm/test_site_one_run.py:
#   1. check the VMs are bare (no RDMA device, no bond), run site.yml once, assert NCCL_IB_HCA, the GID index and
#      the sweep's rails name the devices that run made;
#   2. run site.yml again: nothing may change (PLAY RECAP changed=0 on both VMs);
#   3. set gpufabric_rail_interfaces on vm02 only (its rail 0, bond0) in a peer group of its own, run the discover,
#      nccl and verify plays: vm02's NCCL_IB_HCA and the sweep's rails follow it.
# The VMs always go down at the end. Run it under the lab lock, on a lab name and ports of its own:
#   flock /tmp/gpufabric-lab.lock tests/vm/run_site_one_run.sh [OUT_DIR]
# Environment: GPUFABRIC_VMLAB_NAME (default siteone), GPUFABRIC_VMLAB_SSH_PORT (23100), GPUFABRIC_VMLAB_LINK_PORT
# (23120). Under TCG each task costs a VM 5-10 s: about 10 minutes a site.yml run.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export GPUFABRIC_VMLAB_NAME=${GPUFABRIC_VMLAB_NAME:-siteone}
export GPUFABRIC_VMLAB_SSH_PORT=${GPUFABRIC_VMLAB_SSH_PORT:-23100}
export GPUFABRIC_VMLAB_LINK_PORT=${GPUFABRIC_VMLAB_LINK_PORT:-23120}
OUT=$(realpath -m "${1:-$ROOT/.lab/site-one-run}")
VMLAB=$ROOT/scripts/vmlab.sh
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
# A fact cache of its own: VMs of every lab are called vm01, vm02.
export ANSIBLE_CACHE_PLUGIN_CONNECTION=$OUT/facts
# An emulated VM answers slowly; keepalives for its SSH sessions.
export ANSIBLE_TIMEOUT=60
export ANSIBLE_SSH_ARGS="-o ControlMaster=auto -o ControlPersist=120s -o ServerAliveInterval=5 -o ServerAliveCountMax=6"

log() { echo "site-one-run: $*" >&2; }
die() { log "$*"; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT/inventory"
trap '"$VMLAB" down >/dev/null 2>&1 || true' EXIT
"$VMLAB" up 2
# One inventory directory: the lab's (how to reach the VMs) and the run's variables.
ln -s "$ROOT/inventories/lab/vm-$GPUFABRIC_VMLAB_NAME.yml" "$OUT/inventory/10-vmlab.yml"
ln -s "$ROOT/tests/vm/site_one_run/inventory.yml" "$OUT/inventory/20-site.yml"
export GPUFABRIC_SITE_ONE_RUN_INVENTORY=$OUT/inventory

for vm in vm01 vm02; do
    state=$("$VMLAB" ssh "$vm" 'ls /sys/class/infiniband 2>/dev/null | wc -l; ip -o link show type bond | wc -l')
    [[ "$state" == $'0\n0' ]] || die "$vm is not bare: RDMA devices, bonds: $(echo "$state" | tr '\n' ' ')"
    log "$vm before the run: no RDMA device, no bond"
done

site() {
    local name=$1
    shift
    log "site.yml run $name"
    # The same report directories every run: the fabric map is part of what a second run must leave unchanged.
    ansible-playbook -i "$OUT/inventory" "$ROOT/playbooks/site.yml" \
        -e "discover_report_dir=$OUT/reports/discover verify_report_dir=$OUT/reports/verify" \
        -e gpufabric_cooling_hosts=no_cooling_in_this_lab "$@" </dev/null 2>&1 | tee "$OUT/$name.log" >/dev/null
    local rc=${PIPESTATUS[0]}
    sed -n '/PLAY RECAP/,$p' "$OUT/$name.log" >&2
    grep -o '"topology_changed": [a-z]*' "$OUT/$name.log" | sort | uniq -c >&2 || true
    ((rc == 0)) || die "site.yml run $name failed (rc $rc): $OUT/$name.log"
    mkdir -p "$OUT/$name"
    cp -r "$OUT/reports/." "$OUT/$name/"
}

assertions() {
    python -m pytest -p no:cacheprovider -q -rs "$ROOT/tests/vm/test_site_one_run.py" "$@" </dev/null
}

# -v: the first run's module results, with each topology_changed, are kept in its log.
site first -v
for vm in vm01 vm02; do
    log "$vm /etc/nccl.conf after the first run:"
    "$VMLAB" ssh "$vm" 'cat /etc/nccl.conf' | tee "$OUT/nccl-$vm-first.conf" >&2
done
GPUFABRIC_SITE_ONE_RUN_REPORT=$OUT/first/verify/verify.json assertions
# What the kernel says of the devices the run made, for the record (the fixtures of tests/unit come from here).
mkdir -p "$OUT/captures"
for vm in vm01 vm02; do
    "$VMLAB" ssh "$vm" 'cd /sys/class/infiniband && grep -H . */parent; rdma link show; systemctl is-enabled gpufabric-soft-roce-rxe0.service' \
        >"$OUT/captures/$vm.txt" 2>&1 || true
done

site second
GPUFABRIC_SITE_ONE_RUN_RECAP=$OUT/second.log assertions -k second_run

# vm02 names its rails: rail 0 only (bond0). Its NIC selection then differs from vm01's by design: a peer group of
# its own, as hosts cabled differently are.
cat >"$OUT/inventory/30-rail-override.yml" <<'YAML'
all:
  hosts:
    vm02:
      gpufabric_rail_interfaces: [bond0]
      gpufabric_peer_group: vm02-cabled-apart
YAML
site override --tags discover,nccl,verify
"$VMLAB" ssh vm02 'cat /etc/nccl.conf' | tee "$OUT/nccl-vm02-override.conf" >&2
GPUFABRIC_SITE_ONE_RUN_REPORT=$OUT/override/verify/verify.json assertions -k "nccl_ib_hca or gid_index or sweep"
log "done: $OUT"
