# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Boot-time RDMA NIC tuning installed by the gpufabric.core.rdma role.

Runs on the managed host (Python 3.6+, standard library only) through the /usr/local/sbin/gpufabric-rdma-tune
wrapper, from oneshot systemd units:

  irq-affinity            pin each RDMA NIC's MSI/MSI-X IRQs to the CPUs of the NIC's NUMA node
  roce                    RoCE QoS defaults on ports whose link layer is Ethernet (trust mode, cma_roce_tos,
                          RDMA-CM RoCE mode, traffic class)
  pcie-relaxed-ordering   set or clear the Relaxed Ordering Enable bit of the NIC's PCIe Device Control register
  mlxconfig               compare (--check) or apply firmware settings with mlxconfig; prints JSON
  check-config            validate a configuration file (used by the role before installing it)

Every action logs one line per decision to stdout (the journal) and is a no-op with a log line when the host
has no RDMA device. The sysfs, procfs and configfs roots can be moved for tests.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

DEFAULT_CONFIG = "/etc/gpufabric/rdma-tune.json"
CONFIG_KEYS = {"devices", "wait_seconds", "irq_affinity", "roce", "pcie_relaxed_ordering", "mlxconfig"}
ROCE_MODES = ("RoCE v2", "IB/RoCE v1", "")
TRUST_MODES = ("dscp", "pcp", "")
RELAXED_ORDERING = ("keep", "enable", "disable")
# PCIe Device Control register: bit 4 is "Enable Relaxed Ordering" (PCIe base spec 7.5.3.4).
DEVCTL_RELAXED_ORDERING = 0x0010
# Matched whole (fullmatch): with match and `$` a trailing newline passed.
_MLXCONFIG_PARAM = re.compile(r"[A-Z0-9_]+(\[[0-9.]+\])?")
_MLXCONFIG_VALUE = re.compile(r"[A-Za-z0-9_.()-]+")
_DEVICE_NAME = re.compile(r"[A-Za-z0-9_.-]+")


# The collection's module_utils/hostio/sysfs_text.py (one cpulist parser and one sysfs reader for the modules and this
# program): the role installs it beside this file under ansible_collections/gpufabric/core/plugins/module_utils
# (host_program's layout), so the import is the collection's own, on the host and in the unit tests.
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.sysfs_text import (
    HostDataError,
    cpu_node,
    format_cpulist,
    parse_cpulist,
    read_text,
    write_text,
)

# A problem a person must fix (bad configuration, missing device, a bad cpulist); reported without traceback.
TuneError = HostDataError


def log(message):
    print("gpufabric-rdma-tune: %s" % message, flush=True)


# ---------------------------------------------------------------- configuration


def validate_config(config):
    """Return the configuration with defaults filled in, or raise TuneError naming the bad key."""
    if not isinstance(config, dict):
        raise TuneError("configuration must be a JSON object")
    unknown = sorted(set(config) - CONFIG_KEYS)
    if unknown:
        raise TuneError("unknown configuration keys: %s" % ", ".join(unknown))
    devices = config.get("devices", [])
    if not isinstance(devices, list) or not all(isinstance(d, str) and _DEVICE_NAME.fullmatch(d) for d in devices):
        raise TuneError("devices must be a list of device names, got %r" % (devices,))
    wait = config.get("wait_seconds", 0)
    if not isinstance(wait, int) or isinstance(wait, bool) or wait < 0:
        raise TuneError("wait_seconds must be a non-negative integer, got %r" % (wait,))
    irq = config.get("irq_affinity", {})
    if not isinstance(irq, dict):
        raise TuneError("irq_affinity must be an object")
    parse_cpulist(irq.get("exclude_cpus", ""))
    roce = config.get("roce", {})
    if not isinstance(roce, dict):
        raise TuneError("roce must be an object")
    if roce.get("trust", "") not in TRUST_MODES:
        raise TuneError("roce.trust must be one of %s, got %r" % (TRUST_MODES, roce.get("trust")))
    if roce.get("mode", "") not in ROCE_MODES:
        raise TuneError("roce.mode must be one of %s, got %r" % (ROCE_MODES, roce.get("mode")))
    for key in ("tos", "traffic_class"):
        value = roce.get(key, -1)
        if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value <= 255:
            raise TuneError("roce.%s must be an integer from -1 to 255, got %r" % (key, value))
    ordering = config.get("pcie_relaxed_ordering", "keep")
    if ordering not in RELAXED_ORDERING:
        raise TuneError("pcie_relaxed_ordering must be one of %s, got %r" % (RELAXED_ORDERING, ordering))
    mlxconfig = config.get("mlxconfig", {})
    if not isinstance(mlxconfig, dict):
        raise TuneError("mlxconfig must be an object of PARAM: value")
    for param, value in mlxconfig.items():
        if not _MLXCONFIG_PARAM.fullmatch(param):
            raise TuneError("mlxconfig parameter %r is not an mlxconfig name" % param)
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not _MLXCONFIG_VALUE.fullmatch(str(value)):
            raise TuneError("mlxconfig value of %s must be a plain value, got %r" % (param, value))
    return {
        "devices": devices,
        "wait_seconds": wait,
        "irq_affinity": {"exclude_cpus": irq.get("exclude_cpus", "")},
        "roce": {
            "trust": roce.get("trust", ""),
            "tos": roce.get("tos", -1),
            "mode": roce.get("mode", ""),
            "traffic_class": roce.get("traffic_class", -1),
        },
        "pcie_relaxed_ordering": ordering,
        "mlxconfig": {k: str(v) for k, v in mlxconfig.items()},
    }


def load_config(path):
    try:
        with open(path) as handle:
            return validate_config(json.load(handle))
    except (OSError, ValueError) as exc:
        raise TuneError("cannot read configuration %s: %s" % (path, exc))


# ---------------------------------------------------------------- sysfs helpers


class Host:
    """Paths of one host's sysfs/procfs/configfs, movable for tests."""

    def __init__(self, sysfs="/sys", procfs="/proc"):
        self.sysfs = sysfs
        self.procfs = procfs

    def class_dir(self, kind):
        return os.path.join(self.sysfs, "class", kind)

    def rdma_device_names(self):
        try:
            return sorted(os.listdir(self.class_dir("infiniband")))
        except OSError:
            return []

    def device_dir(self, name):
        """PCI device directory behind an RDMA device or a netdev name, or None."""
        for kind in ("infiniband", "net"):
            link = os.path.join(self.class_dir(kind), name, "device")
            if os.path.exists(link):
                return os.path.realpath(link)
        return None

    def online_cpus(self):
        return parse_cpulist(read_text(os.path.join(self.sysfs, "devices", "system", "cpu", "online"), ""))

    def netdevs_of(self, device_dir):
        try:
            return sorted(os.listdir(os.path.join(device_dir, "net")))
        except OSError:
            return []

    def ports(self, name):
        """[(port number, link layer)] of an RDMA device."""
        ports_dir = os.path.join(self.class_dir("infiniband"), name, "ports")
        try:
            numbers = sorted(int(p) for p in os.listdir(ports_dir) if p.isdigit())
        except OSError:
            return []
        return [(n, read_text(os.path.join(ports_dir, str(n), "link_layer"), "")) for n in numbers]


def resolve_devices(host, config, wait=True):
    """[(name, pci device dir)] of the configured devices (all RDMA devices when none is named).

    Named devices missing after wait_seconds raise TuneError: the unit fails, visibly, when a NIC the
    inventory expects has gone.
    """
    names = config["devices"]
    if not names:
        return [(n, host.device_dir(n)) for n in host.rdma_device_names() if host.device_dir(n)]
    deadline = time.monotonic() + (config["wait_seconds"] if wait else 0)
    while True:
        missing = [n for n in names if host.device_dir(n) is None]
        if not missing or time.monotonic() >= deadline:
            break
        time.sleep(1)
    if missing:
        raise TuneError("configured RDMA devices not found: %s (waited %ss)" % (", ".join(missing), config["wait_seconds"] if wait else 0))
    return [(n, host.device_dir(n)) for n in names]


# ---------------------------------------------------------------- IRQ affinity


def plan_irq_affinity(host, devices, exclude_cpus=""):
    """Return [(device, irq, cpu)]: each device's IRQs spread round-robin over its NUMA-local CPUs.

    Devices on the same NUMA node continue one shared rotation so that two NICs do not stack their
    first queues on the same cores.
    """
    excluded = set(parse_cpulist(exclude_cpus))
    online = set(host.online_cpus())
    rotation = {}
    plan = []
    for name, device_dir in devices:
        msi_dir = os.path.join(device_dir, "msi_irqs")
        try:
            irqs = sorted(int(i) for i in os.listdir(msi_dir) if i.isdigit())
        except OSError:
            irqs = []
        if not irqs:
            log("%s: no MSI/MSI-X IRQs under %s; skipped" % (name, msi_dir))
            continue
        numa_node = read_text(os.path.join(device_dir, "numa_node"), "-1")
        local = parse_cpulist(read_text(os.path.join(device_dir, "local_cpulist"), ""))
        if not local and numa_node.isdigit():
            # A node without CPUs (on a Grace host, a GPU's memory): the nearest node with CPUs serves the device.
            served, served_cpus = cpu_node(int(numa_node), host.sysfs)
            if served_cpus:
                log("%s: NUMA node %s has no CPUs; node %d is the nearest that has" % (name, numa_node, served))
                numa_node, local = str(served), served_cpus
        cpus = [c for c in local if c not in excluded and (not online or c in online)]
        if not cpus:
            # Everything local is excluded or offline: fall back to every allowed online CPU.
            cpus = [c for c in sorted(online) if c not in excluded]
        if not cpus:
            log("%s: no CPU left after excluding %s; skipped" % (name, exclude_cpus))
            continue
        start = rotation.get(numa_node, 0)
        for offset, irq in enumerate(irqs):
            plan.append((name, irq, cpus[(start + offset) % len(cpus)]))
        rotation[numa_node] = (start + len(irqs)) % len(cpus)
        log("%s: NUMA node %s, %d IRQs over CPUs %s" % (name, numa_node, len(irqs), format_cpulist(cpus)))
    return plan


def apply_irq_affinity(host, plan, dry_run=False):
    """Write each IRQ's smp_affinity_list; return counts of changed, unchanged and refused IRQs."""
    counts = {"changed": 0, "unchanged": 0, "refused": 0}
    for name, irq, cpu in plan:
        path = os.path.join(host.procfs, "irq", str(irq), "smp_affinity_list")
        current = read_text(path)
        if current is not None and parse_cpulist(current) == [cpu]:
            counts["unchanged"] += 1
            continue
        if dry_run:
            counts["changed"] += 1
            continue
        try:
            write_text(path, "%d\n" % cpu)
            counts["changed"] += 1
        except OSError as exc:
            # Kernel-managed IRQs (EIO) and vanished IRQs cannot be moved; say so and carry on.
            counts["refused"] += 1
            log("%s: IRQ %d kept its affinity (%s)" % (name, irq, exc.strerror or exc))
    return counts


def action_irq_affinity(host, config, dry_run=False):
    devices = resolve_devices(host, config)
    if not devices:
        log("no RDMA device found under %s; IRQ affinity left alone" % host.class_dir("infiniband"))
        return 0
    plan = plan_irq_affinity(host, devices, config["irq_affinity"]["exclude_cpus"])
    counts = apply_irq_affinity(host, plan, dry_run)
    log("IRQ affinity: %(changed)d changed, %(unchanged)d already right, %(refused)d refused by the kernel" % counts)
    return 0


# ---------------------------------------------------------------- RoCE


def run_step(run, command, label, done, dry_run):
    """Run one tuning command (or only say it would); log the outcome under label. Return 1 if it failed, else 0."""
    if dry_run:
        log("%s: would run %s" % (label, " ".join(command)))
        return 0
    result = run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if result.returncode != 0:
        log("%s: %s failed: %s" % (label, " ".join(command), result.stdout.strip()))
        return 1
    log("%s: %s" % (label, done))
    return 0


def action_roce(host, config, dry_run=False, run=subprocess.run):
    devices = resolve_devices(host, config)
    if not devices:
        log("no RDMA device found under %s; RoCE settings left alone" % host.class_dir("infiniband"))
        return 0
    roce = config["roce"]
    configfs = os.path.join(host.sysfs, "kernel", "config", "rdma_cm")
    mlnx_qos = shutil.which("mlnx_qos")
    failures = 0
    for name, device_dir in devices:
        eth_ports = [port for port, layer in host.ports(name) if layer == "Ethernet"]
        if not eth_ports:
            log("%s: no port with an Ethernet link layer; not RoCE" % name)
            continue
        if roce["trust"]:
            netdevs = host.netdevs_of(device_dir)
            if not mlnx_qos:
                log("%s: mlnx_qos not installed; trust mode left at its current value" % name)
            for netdev in netdevs if mlnx_qos else []:
                failures += run_step(run, [mlnx_qos, "-i", netdev, "--trust", roce["trust"]], name,
                                     "trust %s on %s" % (roce["trust"], netdev), dry_run)
        for port in eth_ports:
            failures += _roce_port(host, configfs, name, port, roce, dry_run)
    return 1 if failures else 0


def _roce_port(host, configfs, name, port, roce, dry_run):
    failures = 0
    if roce["tos"] >= 0 or roce["mode"]:
        if not os.path.isdir(configfs):
            log("%s port %d: %s missing (configfs not mounted or rdma_cm not loaded); cma_roce_tos not set" % (name, port, configfs))
        else:
            device_cfg = os.path.join(configfs, name)
            settings = []
            if roce["tos"] >= 0:
                settings.append(("default_roce_tos", str(roce["tos"])))
            if roce["mode"]:
                settings.append(("default_roce_mode", roce["mode"]))
            for attribute, value in settings:
                if dry_run:
                    log("%s port %d: would set %s=%s" % (name, port, attribute, value))
                    continue
                try:
                    # Creating the device's directory is how rdma_cm's configfs exposes its ports.
                    if not os.path.isdir(device_cfg):
                        os.mkdir(device_cfg)
                    write_text(os.path.join(device_cfg, "ports", str(port), attribute), value)
                    log("%s port %d: %s=%s" % (name, port, attribute, value))
                except OSError as exc:
                    failures += 1
                    log("%s port %d: cannot set %s (%s)" % (name, port, attribute, exc))
    if roce["traffic_class"] >= 0:
        path = os.path.join(host.class_dir("infiniband"), name, "tc", str(port), "traffic_class")
        if not os.path.exists(path):
            log("%s port %d: no %s (an MLNX_OFED/DOCA interface); traffic class not set" % (name, port, path))
        elif dry_run:
            log("%s port %d: would set traffic_class=%d" % (name, port, roce["traffic_class"]))
        else:
            try:
                write_text(path, "%d\n" % roce["traffic_class"])
                log("%s port %d: traffic_class=%d" % (name, port, roce["traffic_class"]))
            except OSError as exc:
                failures += 1
                log("%s port %d: cannot set traffic_class (%s)" % (name, port, exc))
    return failures


# ---------------------------------------------------------------- PCIe relaxed ordering


def action_pcie_relaxed_ordering(host, config, dry_run=False, run=subprocess.run):
    wanted = config["pcie_relaxed_ordering"]
    if wanted == "keep":
        log("pcie_relaxed_ordering is keep; nothing to do")
        return 0
    devices = resolve_devices(host, config)
    if not devices:
        log("no RDMA device found under %s; relaxed ordering left alone" % host.class_dir("infiniband"))
        return 0
    setpci = shutil.which("setpci")
    if not setpci:
        log("setpci not installed (package pciutils); relaxed ordering left alone")
        return 0
    failures = 0
    for address in sorted({os.path.basename(device_dir) for _name, device_dir in devices}):
        value = DEVCTL_RELAXED_ORDERING if wanted == "enable" else 0
        failures += run_step(run, [setpci, "-s", address, "CAP_EXP+8.w=%04x:%04x" % (value, DEVCTL_RELAXED_ORDERING)],
                             address, "relaxed ordering %sd" % wanted, dry_run)
    return 1 if failures else 0


# ---------------------------------------------------------------- mlxconfig (firmware, next boot)


def parse_mlxconfig_query(text):
    """{PARAM: next-boot value} from `mlxconfig -d DEV query P1 P2 ...`.

    Values are given as mlxconfig prints them: `NAME(number)` or a plain number/word. Lines after the
    "Configurations:" header hold the parameter name first and the next-boot value last.
    """
    values = {}
    in_table = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("Configurations:"):
            in_table = True
            continue
        if not in_table or not stripped:
            continue
        fields = stripped.lstrip("*").split()
        if len(fields) >= 2 and _MLXCONFIG_PARAM.fullmatch(fields[0]):
            values[fields[0]] = fields[-1]
    return values


def mlxconfig_value_matches(current, wanted):
    """'force_relax(1)' matches '1' and 'force_relax'; 'True(1)' matches 'true'."""
    match = re.fullmatch(r"(.*)\(([0-9]+)\)", current)
    names = {current.lower()}
    if match:
        names.update({match.group(1).lower(), match.group(2)})
    return str(wanted).lower() in names


def action_mlxconfig(host, config, check=False, run=subprocess.run):
    settings = config["mlxconfig"]
    report = {"changed": False, "devices": {}, "message": ""}
    if not settings:
        report["message"] = "no mlxconfig settings"
        print(json.dumps(report))
        return 0
    mlxconfig = shutil.which("mlxconfig")
    if not mlxconfig:
        report["message"] = "mlxconfig not installed (mstflint or NVIDIA MFT); firmware settings left alone"
        print(json.dumps(report))
        return 0
    devices = resolve_devices(host, config, wait=False)
    # One firmware per PCI function; ports of one device share it.
    addresses = sorted({os.path.basename(device_dir) for _name, device_dir in devices})
    if not addresses:
        report["message"] = "no RDMA device found"
        print(json.dumps(report))
        return 0
    for address in addresses:
        query = run([mlxconfig, "-d", address, "query"] + sorted(settings), stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT, universal_newlines=True, check=False)
        if query.returncode != 0:
            raise TuneError("mlxconfig query of %s failed: %s" % (address, query.stdout.strip()[-500:]))
        current = parse_mlxconfig_query(query.stdout)
        missing = sorted(set(settings) - set(current))
        if missing:
            raise TuneError("mlxconfig on %s does not know %s" % (address, ", ".join(missing)))
        pending = {p: v for p, v in sorted(settings.items()) if not mlxconfig_value_matches(current[p], v)}
        report["devices"][address] = {"current": current, "pending": pending}
        if pending:
            report["changed"] = True
            if not check:
                command = [mlxconfig, "-y", "-d", address, "set"] + ["%s=%s" % item for item in sorted(pending.items())]
                result = run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
                if result.returncode != 0:
                    raise TuneError("%s failed: %s" % (" ".join(command), result.stdout.strip()[-500:]))
    report["message"] = "firmware settings %s" % ("pending" if report["changed"] else "already set")
    print(json.dumps(report, sort_keys=True))
    return 0


# ---------------------------------------------------------------- entry point


def parse_settings(pairs):
    """['PCI_WR_ORDERING=1'] -> {'PCI_WR_ORDERING': '1'}."""
    settings = {}
    for pair in pairs:
        param, sep, value = pair.partition("=")
        if not sep or not _MLXCONFIG_PARAM.fullmatch(param) or not _MLXCONFIG_VALUE.fullmatch(value):
            raise TuneError("--set wants PARAM=VALUE with an mlxconfig parameter name, got %r" % pair)
        settings[param] = value
    return settings


def build_parser():
    parser = argparse.ArgumentParser(prog="gpufabric-rdma-tune", description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("action", choices=["irq-affinity", "roce", "pcie-relaxed-ordering", "mlxconfig", "check-config"])
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="JSON configuration written by the role")
    parser.add_argument("--sysfs-root", default="/sys", help=argparse.SUPPRESS)
    parser.add_argument("--proc-root", default="/proc", help=argparse.SUPPRESS)
    parser.add_argument("--dry-run", action="store_true", help="log what would change, change nothing")
    parser.add_argument("--check", action="store_true", help="mlxconfig: report pending settings only")
    parser.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE",
                        help="mlxconfig: wanted setting, replacing the configuration's list (repeatable)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    host = Host(args.sysfs_root, args.proc_root)
    try:
        config = load_config(args.config)
        if args.set:
            config["mlxconfig"] = parse_settings(args.set)
        if args.action == "check-config":
            log("%s is valid" % args.config)
            return 0
        if args.action == "irq-affinity":
            return action_irq_affinity(host, config, args.dry_run)
        if args.action == "roce":
            return action_roce(host, config, args.dry_run)
        if args.action == "pcie-relaxed-ordering":
            return action_pcie_relaxed_ordering(host, config, args.dry_run)
        return action_mlxconfig(host, config, args.check or args.dry_run)
    except TuneError as exc:
        log("error: %s" % exc)
        return 2


if __name__ == "__main__":
    sys.exit(main())
