#!/usr/bin/env bash
# Records what converged lab hosts answer, for benchmarks/bench_fleet.py's simulated hosts, and the real lab's
# controller CPU per host that the benchmark's 16-host run is checked against. Starts a 16-node container lab of its
# own (gpufabric-fleet, 10.231.60.0/24), converges it, times a second (no-change) converge, records a third, and
# removes the lab. Benchmark only; never run by a test.
#   benchmarks/fleet/record.sh            (GPUFABRIC_FLEET_KEEP_LAB=1 keeps a lab that is already up)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export GPUFABRIC_LAB_NAME=gpufabric-fleet GPUFABRIC_LAB_SUBNET=10.231.60.0/24
# shellcheck source=scripts/env.sh
source "$ROOT/scripts/env.sh"
NODES=16
inventory=$ROOT/inventories/lab/$GPUFABRIC_LAB_NAME.yml
out=$ROOT/benchmarks/fleet/recorded
log=$ROOT/.cache/fleet-record.log
cd "$ROOT"
mkdir -p "$ROOT/.cache"
if [[ "${GPUFABRIC_FLEET_KEEP_LAB:-0}" != 1 ]]; then
    trap '"$ROOT/scripts/lab.sh" down' EXIT
    "$ROOT/scripts/lab.sh" up "$NODES"
    ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags verify >"$log" 2>&1 || { tail -30 "$log"; exit 1; }
fi
# The real lab's figure: a second, no-change converge; user+sys of ansible-playbook and its children (ssh clients).
load=$(cut -d' ' -f1-3 /proc/loadavg)
TIMEFORMAT='%R %U %S'
{ time ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags verify >"$log" 2>&1; } 2>"$ROOT/.cache/fleet-record.time" ||
    { tail -30 "$log"; exit 1; }
if grep -E "changed=[1-9]" "$log" >/dev/null; then echo "the second converge changed something" >&2; exit 1; fi
read -r wall user sys <"$ROOT/.cache/fleet-record.time"
# The answers: a third converge whose ssh connection keeps every module's output.
rm -rf "$out" && mkdir -p "$out/answers" "$out/facts"
FLEET_BENCH_RECORD=$out/answers ANSIBLE_CALLBACK_PLUGINS=$ROOT/benchmarks/fleet/callback_plugins \
    ANSIBLE_CALLBACKS_ENABLED=gpufabric.core.role_summary,fleet_bench \
    ansible-playbook -i "$inventory" playbooks/site.yml --skip-tags verify >"$log" 2>&1 || { tail -30 "$log"; exit 1; }
python3 - "$inventory" "$out" "$wall" "$user" "$sys" "$load" "$NODES" <<'PY'
import datetime, json, pathlib, shutil, sys
import yaml
inventory, out, wall, user, sys_s, load, nodes = sys.argv[1:]
out = pathlib.Path(out)
lab = yaml.safe_load(open(inventory, encoding="utf-8"))["all"]
hosts = {name: {"ansible_host": value["ansible_host"], "gpufabric_lab_release": value.get("gpufabric_lab_release")}
         for name, value in lab["children"]["lab"]["hosts"].items()}
keep = {key: value for key, value in lab["vars"].items()
        if key not in ("ansible_ssh_private_key_file", "ansible_ssh_common_args", "gpufabric_lab_name", "ansible_user")}
(out / "inventory.yml").write_text("# Recorded by benchmarks/fleet/record.sh from lab gpufabric-fleet.\n"
                                   + yaml.safe_dump({"vars": keep, "hosts": hosts}), encoding="utf-8")
cache = pathlib.Path(".cache/facts/gpufabric-fleet")
for name, value in hosts.items():
    if (cache / ("s1_" + name)).exists():
        shutil.copy(cache / ("s1_" + name), out / "facts" / value["ansible_host"])
cpu = float(user) + float(sys_s)
json.dump({"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), "hosts": int(nodes),
           "wall_s": float(wall), "cpu_s": cpu, "cpu_per_host_s": cpu / int(nodes), "load": load},
          open(out / "lab_run.json", "w", encoding="utf-8"), indent=1)
print("lab no-change converge: %s hosts, wall %.1f s, CPU %.1f s, %.3f s per host (load %s)" % (
    nodes, float(wall), cpu, cpu / int(nodes), load))
PY
du -sh "$out"
