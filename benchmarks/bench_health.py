"""The health checks, measured (issue #39's targets; figures of one run, not a test).

1. gpufabric-health's CPU per sample on a synthetic host: a sysfs tree of 8 HCAs x 2 ports (each a copy of the real
   mlx5_0 capture tests/fixtures/sysfs/procfs-mlx5_0-infiniband.tsv, counters and hw_counters included) and 8 GPUs
   and 8 NICs on PCIe, each behind its own root port as in the real capture procfs-pci-links.tsv; the commands
   (lldpcli, vtysh, swanctl) answered from the lab's captures, so their parsing counts but not their fork and exec.
   Printed: CPU ms per sample (process time, median of 5 runs of 200 samples) and the share of one core at the
   default 5 s interval; the series it writes.
2. On a 4-node container lab cabled straight (no miscabled node), with a monitoring node running Debian's Prometheus
   and Alertmanager at the collection's default intervals (sampler 5 s, commands 10 s, scrape and evaluation 10 s;
   default thresholds): the whole lab for BENCH_HEALTH_QUIET_S (600) seconds with nothing injected, and every alert
   that fired in that time (the target: none); gpufabric-health's CPU over that time on each node (utime + stime of
   the service and of the commands it ran, from /proc/PID/stat), per sample and as a share of one core; the series
   per node (gpufabric_* and node_exporter's own); then, BENCH_HEALTH_RUNS (3) times per fault class, the seconds
   from the fault to its alert active in Alertmanager, and to its resolution after the fault is removed (median,
   min, max): a rail's link down (a leaf port down), one leaf's ports down (the leaf alert), two cables swapped
   (LLDP), a CHILD SA deleted. A lost LACP partner needs the VM lab (kernel bonding), and BFD an FRR leaf, which
   this lab has not: the health Molecule scenario proves BFD; neither is timed here.

    python3 benchmarks/bench_health.py          (scripts/bench.sh, `make bench`, runs it with the others)
    BENCH_HEALTH_LAB=0 ...                      part 1 only
    BENCH_HEALTH_QUIET_S=0 BENCH_HEALTH_ALERTS=GpufabricCablingMismatch ...   one fault class, no quiet stretch
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "unit"))
sys.path.insert(0, str(ROOT / ".build" / "collections"))

from fixture_data import read_fixture  # noqa: E402
from health_lab import (  # noqa: E402
    fired_since,
    in_container,
    prometheus_alerts,
    prometheus_query,
    recable,
    series_count,
    set_link,
    wait_alert,
    wait_for,
    wait_resolved,
)

from ansible_collections.gpufabric.core.plugins.module_utils.health import sample as health_sample  # noqa: E402

LAB = "gpufabric-bench-health"
LAB_ENV = dict(os.environ, GPUFABRIC_LAB_NAME=LAB, GPUFABRIC_LAB_SUBNET="10.231.30.0/24", GPUFABRIC_LAB_MONITOR="1",
               GPUFABRIC_LAB_MISCABLE="0", ANSIBLE_CACHE_PLUGIN_CONNECTION=str(ROOT / ".cache" / "facts" / LAB))
INVENTORY = ROOT / "inventories" / "lab" / ("%s.yml" % LAB)
NODES = ["node01", "node02", "node03", "node04"]
DEFAULT_INTERVAL_S = 5
# scripts/lab.sh's cables: veth pairs of the default MTU, the leaf's end no bridge port (each leaf port is its own).
LAB_CABLE = {"mtu": 1500, "bridge": None}


# -- 1. the synthetic host ---------------------------------------------------------------------------------------

def synthetic_host(root, hcas=8, ports=2, gpus=8):
    """Lay out the sysfs tree; returns the expected state the sampler reads."""
    hca = [line.split("\t", 1) for line in read_fixture("sysfs/procfs-mlx5_0-infiniband.tsv").splitlines() if line]
    for index in range(hcas):
        for path, content in hca:
            for port in range(1, ports + 1):
                target = root / path.replace("mlx5_0", "mlx5_%d" % index).replace("/ports/1/", "/ports/%d/" % port)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content + "\n")
    # The real capture's layout: a device behind its root port, each with the link attributes the kernel writes.
    pcie = []
    for index in range(gpus + hcas):
        kind, device = ("gpu", "GPU%d" % index) if index < gpus else ("nic", "mlx5_%d" % (index - gpus))
        bus = 0x10 + index * 0x10
        port, address = "0000:%02x:01.0" % (bus - 1), "0000:%02x:00.0" % bus
        upstream = root / "devices" / ("pci0000:%02x" % (bus - 1)) / port
        for where, width in ((upstream, 16), (upstream / address, 16)):
            where.mkdir(parents=True, exist_ok=True)
            for name, value in (("current_link_speed", "32.0 GT/s PCIe"), ("max_link_speed", "32.0 GT/s PCIe"),
                                ("current_link_width", str(width)), ("max_link_width", str(width))):
                (where / name).write_text(value + "\n")
        links = root / "bus" / "pci" / "devices"
        links.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(upstream / address, links), links / address)
        os.symlink(os.path.relpath(upstream, links), links / port)
        pcie.append({"pci": address, "device": device, "kind": kind, "rail": "rail%d" % (index % gpus)})
    rails = [{"rail": "rail%d" % (index * ports + port - 1), "device": "mlx5_%d" % index, "port": port,
              "netdev": "ibp%ds%d" % (index, port), "link_layer": "InfiniBand", "expected_rate_gbps": 25,
              "leaf": "leaf-%d" % port, "leaf_port": "swp%d" % (index + 1)}
             for index in range(hcas) for port in range(1, ports + 1)]
    return {"version": 1, "host": "gpu-a01", "interval": DEFAULT_INTERVAL_S, "command_interval": 10,
            "textfile": "/dev/null", "rails": rails, "pcie": pcie, "bonds": [],
            "bgp_peers": [{"peer": "eth1", "interface": "eth1", "leaf": "leaf2"}],
            "bfd_peers": [{"peer": "eth1", "interface": "eth1", "leaf": "leaf2"}],
            "ipsec": [{"peer": "node2", "ike": "gf-node2", "child": "gf-node2"}]}


def synthetic_bench():
    outputs = {"lldpcli": read_fixture("lldp/lab-json0-node1.txt"),
               "swanctl": read_fixture("strongswan/lab-debian12-list-sas-node1-mixed-mesh.txt"),
               "show bgp summary json": read_fixture("frr/lab-bgp-summary-leaf2-cut.json"),
               "show bfd peers json": read_fixture("frr/lab-bfd-peers-leaf2-cut.json")}

    def run(argv, timeout=None):
        return 0, outputs[argv[2] if argv[0] == "vtysh" else argv[0]]

    with tempfile.TemporaryDirectory(prefix="gpufabric-bench-health-") as directory:
        expected = synthetic_host(Path(directory))
        clock = [1000.0]
        # Every sample runs the commands too (command_interval 0): the worst sample, not the average.
        sampler = health_sample.Sampler(dict(expected, command_interval=0), run=run, clock=lambda: clock[0],
                                        sys_root=directory)
        text = sampler.sample().render()
        per_sample = []
        for _run in range(5):
            started = time.process_time()
            for _sample in range(200):
                clock[0] += DEFAULT_INTERVAL_S
                sampler.sample().render()
            per_sample.append((time.process_time() - started) / 200)
    series = [line for line in text.splitlines() if line and not line.startswith("#")]
    cpu_ms = statistics.median(per_sample) * 1000
    print("synthetic host (8 HCAs x 2 ports, 8 GPUs + 8 NICs on PCIe, commands parsed every sample): "
          "%.2f ms CPU per sample (median of 5 x 200), %.3f %% of one core at a sample every %d s; %d series"
          % (cpu_ms, cpu_ms / 1000 / DEFAULT_INTERVAL_S * 100, DEFAULT_INTERVAL_S, len(series)), flush=True)


# -- 2. the lab ----------------------------------------------------------------------------------------------------

def lab(*args):
    subprocess.run([str(ROOT / "scripts" / "lab.sh"), *args], env=LAB_ENV, check=True, stdout=subprocess.DEVNULL)


def playbook(*args):
    result = subprocess.run(["ansible-playbook", "-i", str(INVENTORY), *args], cwd=ROOT, env=LAB_ENV,
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-2000:])
        raise SystemExit("ansible-playbook %s failed" % " ".join(args))


def sampler_cpu_ticks(node):
    """utime + stime of gpufabric-health and of the commands it waited for (cutime, cstime), in clock ticks."""
    pid = in_container("%s-%s" % (LAB, node), "systemctl", "show", "-p", "MainPID", "--value",
                       "gpufabric-health.service").strip()
    fields = in_container("%s-%s" % (LAB, node), "cat", "/proc/%s/stat" % pid).rsplit(")", 1)[1].split()
    return pid, sum(int(value) for value in fields[11:15])


def summary(values):
    return "median %.1f s (min %.1f, max %.1f, n=%d)" % (
        statistics.median(values), min(values), max(values), len(values))


def lab_bench():
    quiet_s = float(os.environ.get("BENCH_HEALTH_QUIET_S", "600"))
    runs = int(os.environ.get("BENCH_HEALTH_RUNS", "3"))
    lab("up", "4")
    try:
        playbook(str(ROOT / "playbooks" / "site.yml"), "--tags", "discover,ipsec,health", "-e",
                 "discover_hosts=gpu_nodes", "-e", "discover_report_dir=%s" % (ROOT / ".cache" / LAB / "reports"))
        playbook(str(ROOT / "playbooks" / "monitoring.yml"), "-e", "gpufabric_monitoring_hosts=monitoring")
        monitor = json.loads(subprocess.run(["ansible-inventory", "-i", str(INVENTORY), "--host", "monitor"],
                                            capture_output=True, text=True, check=True, env=LAB_ENV).stdout)
        prometheus, alertmanager = ("http://%s:9090" % monitor["ansible_host"],
                                    "http://%s:9093" % monitor["ansible_host"])

        # Green first: every node scraped, eight rails up and cabled as mapped, twelve SAs (4 nodes x 3 peers).
        for expr, wanted in (('up{job="gpufabric"} == 1', 4), ("gpufabric_port_up == 1", 8),
                             ("gpufabric_lldp_neighbour_ok == 1", 8), ("gpufabric_ipsec_child_sa_installed == 1", 12)):
            wait_for("%s on %d series" % (expr, wanted), lambda: series_count(prometheus, expr) == wanted, 300)
        wait_for("no alert pending or firing", lambda: not prometheus_alerts(prometheus), 300)

        if quiet_s > 0:  # BENCH_HEALTH_QUIET_S=0: straight to the faults
            ticks = {node: sampler_cpu_ticks(node) for node in NODES}
            hz = int(in_container("%s-node01" % LAB, "getconf", "CLK_TCK").strip())
            started, quiet_from = time.monotonic(), time.time()
            wait_for("the quiet stretch to end", lambda: time.monotonic() - started >= quiet_s, quiet_s + 60, poll=5)
            elapsed = time.monotonic() - started
            fired = fired_since(prometheus, quiet_from)
            print("healthy 4-node lab for %.0f s: %d alerts fired%s" % (elapsed, len(fired),
                  (": %s" % json.dumps(fired)) if fired else ""), flush=True)
            for node in NODES:
                pid, before = ticks[node]
                pid_now, after = sampler_cpu_ticks(node)
                if pid_now != pid:
                    print("%s: gpufabric-health restarted during the stretch; no CPU figure" % node)
                    continue
                cpu_s = (after - before) / hz
                print("%s: gpufabric-health %.2f s CPU in %.0f s: %.2f ms per sample, %.3f %% of one core" % (
                    node, cpu_s, elapsed, cpu_s * 1000 / (elapsed / DEFAULT_INTERVAL_S), cpu_s / elapsed * 100))
        for item in prometheus_query(prometheus, 'count by (host) ({__name__=~"gpufabric_.*", job="gpufabric"})'):
            print("series of %s: %s gpufabric_*" % (item["metric"]["host"], item["value"][1]))
        for item in prometheus_query(prometheus, 'count by (instance) ({job="gpufabric"})'):
            print("series of target %s, node_exporter's included: %s" % (item["metric"]["instance"], item["value"][1]))

        faults = {
            "link down (leaf-b port of node02's rail 1)": (
                lambda: set_link("%s-leaf-b" % LAB, "swp2", "down"), lambda: set_link("%s-leaf-b" % LAB, "swp2", "up"),
                "GpufabricPortDown", {"host": "node02", "rail": "rail1"}),
            "leaf down (leaf-a's four ports)": (
                lambda: [set_link("%s-leaf-a" % LAB, "swp%d" % i, "down") for i in range(1, 5)],
                lambda: [set_link("%s-leaf-a" % LAB, "swp%d" % i, "up") for i in range(1, 5)],
                "GpufabricLeafDown", {"leaf": "leaf-a"}),
            "two cables swapped (node01)": (
                lambda: recable("%s-node01" % LAB, [("eth1", "%s-leaf-b" % LAB, "swp1"), ("eth2", "%s-leaf-a" % LAB, "swp1")],
                                **LAB_CABLE),
                lambda: recable("%s-node01" % LAB, [("eth1", "%s-leaf-a" % LAB, "swp1"), ("eth2", "%s-leaf-b" % LAB, "swp1")],
                                **LAB_CABLE),
                "GpufabricCablingMismatch", {"host": "node01", "rail": "rail0"}),
            "IPsec CHILD SA deleted (node01 with node02)": (
                lambda: in_container("%s-node01" % LAB, "swanctl", "--terminate", "--child", "gf-node02"),
                lambda: in_container("%s-node01" % LAB, "swanctl", "--initiate", "--child", "gf-node02", timeout=60),
                "GpufabricIpsecSaMissing", {"host": "node01", "peer": "node02"}),
        }
        print("detection with the default intervals (sampler 5 s, commands 10 s, scrape and evaluation 10 s) and "
              "default thresholds; seconds from the fault to the alert active in Alertmanager:", flush=True)
        only = os.environ.get("BENCH_HEALTH_ALERTS", "").split(",") if os.environ.get("BENCH_HEALTH_ALERTS") else None
        for name, (inject, remove, alertname, labels) in faults.items():
            if only and alertname not in only:
                continue
            detect, resolve = [], []
            for _run in range(runs):
                inject()
                try:
                    detect.append(wait_alert(prometheus, alertmanager, alertname, labels, 600)[1])
                finally:
                    removed = time.monotonic()
                    remove()
                wait_resolved(prometheus, alertmanager, alertname, labels, 600)
                resolve.append(time.monotonic() - removed)
            print("  %-46s %-22s detected: %s; resolved: %s" % (name, alertname, summary(detect), summary(resolve)),
                  flush=True)
    finally:
        lab("down")


def main():
    synthetic_bench()
    if os.environ.get("BENCH_HEALTH_LAB", "1") != "0":
        lab_bench()


if __name__ == "__main__":
    main()
