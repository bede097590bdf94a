#!/usr/bin/env bash
# Capture, on a real GPU host, the outputs this collection's parsers read (nvidia-smi, lspci, sysfs PCIe links,
# NVML, DCGM, nccl-tests where installed), each with the command and exit status in commands.tsv, and run
# discovery's own code (module_utils/fabric/topology.py) on the live host into a snapshot directory.
# Usage: scripts/gpu-capture.sh OUTPUT_DIR   (read only on the host: it changes no setting)
set -u
out=${1:?usage: gpu-capture.sh OUTPUT_DIR}
mkdir -p "$out"
repo=$(cd "$(dirname "$0")/.." && pwd)
export LC_ALL=C LANG=C
printf 'file\tcommand\trc\tseconds\n' >"$out/commands.tsv"

# cap NAME SECONDS COMMAND...: stdout to NAME, stderr to NAME.stderr (removed when empty).
cap() {
    local name=$1 limit=$2 start rc
    shift 2
    start=$(date +%s%N)
    timeout -k 5 "$limit" "$@" >"$out/$name" 2>"$out/$name.stderr"
    rc=$?
    [ -s "$out/$name.stderr" ] || rm -f "$out/$name.stderr"
    printf '%s\t%s\t%s\t%s\n' "$name" "$*" "$rc" "$(( ($(date +%s%N) - start) / 1000000 ))ms" >>"$out/commands.tsv"
}

cap uname.txt 5 uname -a
cap os-release.txt 5 cat /etc/os-release
cap driver-version.txt 5 cat /proc/driver/nvidia/version
cap nvidia-smi.txt 30 nvidia-smi
cap nvidia-smi-L.txt 30 nvidia-smi -L
cap nvidia-smi-topo-m.txt 30 nvidia-smi topo -m
cap nvidia-smi-topo-p2p-n.txt 30 nvidia-smi topo -p2p n
cap nvidia-smi-q.txt 60 nvidia-smi -q
cap nvidia-smi-q-x.xml 60 nvidia-smi -q -x
cap nvidia-smi-query-topology.csv 30 nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader
cap nvidia-smi-query-cooling-policy.csv 30 nvidia-smi \
    --query-gpu=index,name,pci.bus_id,persistence_mode,power.limit,power.min_limit,power.max_limit,clocks.applications.memory,clocks.applications.graphics \
    --format=csv,noheader,nounits
cap nvidia-smi-query-pcie.csv 30 nvidia-smi \
    --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.gen.max,pcie.link.gen.gpucurrent,pcie.link.gen.hostmax,pcie.link.width.current,pcie.link.width.max \
    --format=csv
cap nvidia-smi-query-thermal.csv 30 nvidia-smi \
    --query-gpu=index,temperature.gpu,temperature.memory,power.draw,power.limit,fan.speed,clocks_event_reasons.active,clocks_event_reasons.sw_thermal_slowdown,clocks_event_reasons.hw_thermal_slowdown \
    --format=csv,noheader,nounits
cap nvidia-smi-nvlink-s.txt 30 nvidia-smi nvlink -s
cap numactl-H.txt 10 numactl -H
cap lscpu.txt 10 lscpu
cap lspci-tree.txt 20 lspci -tv
cap lspci-nn.txt 20 lspci -nn

# The GPUs' PCIe links in sysfs, up to the root port, as `path<TAB>content` lines (tests/fixtures/sysfs layout).
bdfs=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null)
{
    for bdf in $bdfs; do
        dev=$(echo "${bdf#0000}" | tr 'A-F' 'a-f')
        path=$(readlink -f "/sys/bus/pci/devices/$dev" 2>/dev/null) || continue
        while [ -n "$path" ] && [ -e "$path/current_link_speed" ]; do
            for attr in current_link_speed current_link_width max_link_speed max_link_width numa_node vendor device class; do
                [ -r "$path/$attr" ] && printf '%s\t%s\n' "$path/$attr" "$(cat "$path/$attr" 2>&1)"
            done
            path=$(dirname "$path")
        done
    done
} >"$out/sysfs-gpu-pci-links.tsv" 2>&1
for bdf in $bdfs; do
    cap "lspci-vv-${bdf//:/_}.txt" 20 lspci -vv -s "${bdf#0000}"
done

# RDMA NICs, if any.
cap ls-sys-class-infiniband.txt 5 ls -l /sys/class/infiniband
cap ibstat.txt 20 ibstat
cap ibv_devinfo-v.txt 20 ibv_devinfo -v
cap rdma-link.txt 10 rdma link
cap ip-d-link.json 10 ip -j -d link

# NVML through Python, where the bindings are installed.
cap nvml.json 60 python3 - <<'EOF'
import json
try:
    import pynvml as nv
except ImportError as exc:
    raise SystemExit("no NVML Python bindings: %s" % exc)
nv.nvmlInit()
out = {"driver": nv.nvmlSystemGetDriverVersion(), "nvml": nv.nvmlSystemGetNVMLVersion(), "gpus": []}
for i in range(nv.nvmlDeviceGetCount()):
    h = nv.nvmlDeviceGetHandleByIndex(i)
    g = {"index": i}
    for key, call in [("name", lambda: nv.nvmlDeviceGetName(h)), ("pci_bus_id", lambda: nv.nvmlDeviceGetPciInfo(h).busId),
                      ("pcie_gen_current", lambda: nv.nvmlDeviceGetCurrPcieLinkGeneration(h)),
                      ("pcie_gen_max", lambda: nv.nvmlDeviceGetMaxPcieLinkGeneration(h)),
                      ("pcie_width_current", lambda: nv.nvmlDeviceGetCurrPcieLinkWidth(h)),
                      ("pcie_width_max", lambda: nv.nvmlDeviceGetMaxPcieLinkWidth(h)),
                      ("power_limit_mw", lambda: nv.nvmlDeviceGetPowerManagementLimit(h)),
                      ("power_limit_constraints_mw", lambda: list(nv.nvmlDeviceGetPowerManagementLimitConstraints(h))),
                      ("temperature_c", lambda: nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU)),
                      ("persistence_mode", lambda: nv.nvmlDeviceGetPersistenceMode(h))]:
        try:
            value = call()
            g[key] = value.decode() if isinstance(value, bytes) else value
        except nv.NVMLError as exc:
            g[key] = "error: %s" % exc
    out["gpus"].append(g)
print(json.dumps(out, indent=2))
EOF

# DCGM, where installed (dcgmi needs a host engine; an embedded one is started and stopped here).
if command -v dcgmi >/dev/null; then
    started=
    if ! dcgmi discovery -l >/dev/null 2>&1 && command -v nv-hostengine >/dev/null; then
        nv-hostengine -n --pid "$out/.nv-hostengine.pid" >/dev/null 2>&1 & started=$!
        sleep 3
    fi
    cap dcgmi-discovery-l.txt 30 dcgmi discovery -l
    cap dcgmi-health-c.txt 30 dcgmi health -c
    cap dcgmi-dmon.txt 30 dcgmi dmon -e 150,155,203,1009,1010 -c 3
    cap dcgmi-diag-r1.txt 120 dcgmi diag -r 1
    [ -n "$started" ] && kill "$started" 2>/dev/null
    rm -f "$out/.nv-hostengine.pid"
else
    printf 'dcgmi-discovery-l.txt\tdcgmi (not installed)\t127\t0ms\n' >>"$out/commands.tsv"
fi

# nccl-tests, where built on the host: one GPU (what this host has), with NCCL's debug log.
perf=$(command -v all_reduce_perf || timeout 30 find / -xdev -name all_reduce_perf -type f -perm -u+x 2>/dev/null | head -1)
if [ -n "$perf" ]; then
    NCCL_DEBUG=INFO cap nccl-tests-all_reduce_perf-1gpu.txt 120 "$perf" -b 8 -e 256M -f 4 -g 1
    # Without result checking (-c 0: every #wrong cell N/A), and all_gather up to 1 GiB (bandwidths in exponent form).
    cap nccl-tests-all_reduce_perf-1gpu-nocheck.txt 60 "$perf" -b 8 -e 128M -f 2 -g 1 -c 0 -w 1 -n 5
    NCCL_DEBUG=INFO cap nccl-tests-all_gather_perf-1gpu.txt 120 "$(dirname "$perf")/all_gather_perf" -b 1M -e 1G -f 4 -g 1
else
    printf 'nccl-tests-all_reduce_perf-1gpu.txt\tall_reduce_perf (not found)\t127\t0ms\n' >>"$out/commands.tsv"
fi
cap python-packages.txt 30 python3 -m pip list --disable-pip-version-check

# Discovery's own code on the live host, into its snapshot layout, and the facts it builds.
tree=$(mktemp -d)
mkdir -p "$tree/ansible_collections/gpufabric"
ln -s "$repo" "$tree/ansible_collections/gpufabric/core"
cap topology.json 120 env PYTHONPATH="$tree" python3 - "$out/snapshot" <<'EOF'
import json, shutil, subprocess, sys
from ansible_collections.gpufabric.core.plugins.module_utils.fabric import topology

def run(argv):
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    return done.returncode, done.stdout, done.stderr

sources = topology.collect_live(run, shutil.which)
topology.write_capture(sys.argv[1], sources)
print(json.dumps(topology.build_topology(sources), indent=2, sort_keys=True))
EOF
rm -rf "$tree"
