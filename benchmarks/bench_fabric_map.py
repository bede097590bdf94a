# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time gpufabric.core's fabric map for 512 to 4,096 synthetic hosts with 8 rails each.

Each synthetic host carries complete gpufabric_topology facts (docs/topology.md): 8 GPUs, 8 RDMA devices
with one RoCE port each, 8 netdevs and 8 LLDP neighbours, the rails topology_facts derives from them, in
scalable units of 32 hosts (one peer group per unit, one leaf per rail and unit). About 1 % of the hosts
have two rails swapped, one port down or a missing NIC, so every check has work to do.

Run from the repository root:  .venv/bin/python benchmarks/bench_fabric_map.py [--repeat 5] [--html]
It prints the best CPU time of --repeat runs per size and the growth ratio between consecutive sizes; a linear
build doubles its time when the hosts double (ratio ~2.0), and time per host stays flat.
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ROOT / ".build" / "collections"
LINK = COLLECTIONS / "ansible_collections" / "gpufabric" / "core"
if not LINK.exists():
    LINK.parent.mkdir(parents=True, exist_ok=True)
    LINK.symlink_to(ROOT)
sys.path.insert(0, str(COLLECTIONS))

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map import build_fabric_map  # noqa: E402
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map_html import render_html  # noqa: E402

RAILS = 8
SU_SIZE = 32
SIZES = (512, 1024, 2048, 4096)


def synthetic_topology(host_index, rng):
    """Facts of one 8-GPU, 8-NIC server; a few hosts get a swapped pair of cables, a port down or a lost NIC."""
    su = host_index // SU_SIZE
    fault = rng.random()
    switches = ["su%02d-leaf-r%d" % (su, rail) for rail in range(RAILS)]
    if fault < 0.005:
        switches[2], switches[3] = switches[3], switches[2]
    devices, interfaces, neighbours, rails, gpus = [], [], [], [], []
    for rail in range(RAILS):
        if fault > 0.995 and rail == 7:
            continue  # a NIC missing from the host: the device-set check must see it
        netdev = "ens%dnp0" % (rail + 1)
        state = "DOWN" if 0.005 <= fault < 0.01 and rail == 5 else "ACTIVE"
        port = {"port": 1, "state": state, "physical_state": "LinkUp", "rate_gbps": 400.0, "link_layer": "Ethernet",
                "roce_v2_gid_index": 3, "active_mtu": 4096}
        devices.append({"name": "mlx5_%d" % rail, "pci_address": "0000:%02x:00.0" % (0x18 + rail * 0x10),
                        "numa_node": rail // 4, "netdev": netdev, "ports": [port]})
        interfaces.append({"name": netdev, "mac": "02:00:%02x:%02x:%02x:%02x" % (
            host_index >> 8, host_index & 0xFF, rail, 1), "speed_mbps": 400000, "mtu": 9000, "driver": "mlx5_core",
            "operstate": "up" if state == "ACTIVE" else "down", "bond_master": None,
            "pci_address": "0000:%02x:00.0" % (0x18 + rail * 0x10), "numa_node": rail // 4})
        switch_port = "Ethernet%d" % ((host_index % SU_SIZE) * 8)
        neighbours.append({"local_interface": netdev, "chassis_name": switches[rail], "chassis_id": "70:06:92:00:%02x:%02x"
                           % (su & 0xFF, rail), "port_id": switch_port, "port_id_type": "local",
                           "port_descr": switch_port, "mgmt_ip": None})
        gpus.append({"index": rail, "name": "GPU%d" % rail, "model": "NVIDIA H100 80GB HBM3", "pci_bus_id": None,
                     "numa_node": rail // 4, "cpu_affinity": "0-55", "nvlink_peers": [], "nearest_nics": [
                         "mlx5_%d" % rail], "nearest_link": "PIX"})
        rails.append({"rail": rail, "gpu": "GPU%d" % rail, "device": "mlx5_%d" % rail, "port": 1, "netdev": netdev,
                      "rate_gbps": 400.0, "link_layer": "Ethernet", "numa_node": rail // 4, "link": "PIX",
                      "switch": switches[rail], "switch_port": switch_port})
    return {
        "schema_version": 1, "source": "live",
        "gpus": {"available": True, "reason": None, "devices": gpus},
        "rdma": {"available": True, "reason": None, "devices": devices},
        "interfaces": interfaces, "bonds": {},
        "lldp": {"available": True, "reason": None, "neighbors": neighbours},
        "rails": rails, "findings": [],
    }


def fleet(size, seed=3):
    rng = random.Random(seed)
    names = ["gpu%04d" % index for index in range(size)]
    topologies = {name: synthetic_topology(index, rng) for index, name in enumerate(names)}
    groups = {name: "su%02d" % (index // SU_SIZE) for index, name in enumerate(names)}
    return topologies, groups


def best_time(function, repeat):
    """Best CPU time of this process over repeat runs, with the garbage collector paused as timeit does, so that
    a collection of the synthetic facts built before the run is not charged to the map. CPU time, not wall time:
    on a shared controller other processes' load would otherwise swamp the growth ratio."""
    best = None
    for _run in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            result = function()
            elapsed = time.process_time() - start
        finally:
            gc.enable()
        best = elapsed if best is None else min(best, elapsed)
    return best, result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per size; the best is reported")
    parser.add_argument("--html", action="store_true", help="also time the HTML page")
    args = parser.parse_args(argv)

    print("%6s %6s %11s %12s %8s %8s %s" % ("hosts", "rails", "build cpu s", "us per host", "ratio", "errors",
                                            "html cpu s" if args.html else ""))
    previous = None
    times = {}
    for size in SIZES:
        topologies, groups = fleet(size)
        elapsed, fabric_map = best_time(lambda: build_fabric_map(topologies, peer_groups=groups), args.repeat)
        times[size] = elapsed
        html = ""
        if args.html:
            html_time, _page = best_time(lambda: render_html(fabric_map), args.repeat)
            html = "%.3f" % html_time
        ratio = "%.2f" % (elapsed / previous) if previous else "-"
        errors = fabric_map["summary"]["findings"]["error"]
        row = (size, size * RAILS, elapsed, elapsed / size * 1e6, ratio, errors, html)
        print("%6d %6d %11.3f %12.1f %8s %8d %s" % row)
        previous = elapsed
    growth = times[SIZES[-1]] / times[SIZES[0]]
    print("growth %d -> %d hosts (x%d): time x%.2f (linear: x%d)" % (
        SIZES[0], SIZES[-1], SIZES[-1] // SIZES[0], growth, SIZES[-1] // SIZES[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
