# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One sample of the fabric's health: what the roles deployed (the expected-state file written by
gpufabric.core.health_config) against what the host shows now, as Prometheus series.

The gpufabric-health service builds a Sampler once and calls sample() every interval; sysfs is read every time,
commands (lldpcli, vtysh, swanctl, ethtool) every command_interval and mlnx_qos every qos_interval, their last answer
kept in between. Every series carries what it is compared with: an expected value in a series of its own (rate, PCIe
width and speed) or in its labels (the LLDP neighbour's expected leaf and port beside the one seen, the expected RoCE
trust beside the one found). A source that cannot be read makes its series NaN (unknown) and
gpufabric_health_source_up{source} 0: the rules say "cannot see", never "down".

A sample never lies and never hangs. Command output is decoded with replacement (a Latin-1 byte in an LLDP name is
data, not a failure). Each source is read apart: one that raises adds no series and marks itself down, the others
are written. Each command runs at most COMMAND_TIMEOUT_S (killed with its process group after that); a program that
timed out is not asked again in the same sample, and no command starts after the sample's budget (half the unit's
watchdog) is spent: what was not asked is unknown, and asked first at the next sample.

Standard library only, relative imports only: the health role installs this file unchanged on each host.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time

from ansible_collections.gpufabric.core.plugins.module_utils.parsers import proc_bonding as bonding_parser
from ansible_collections.gpufabric.core.plugins.module_utils.fabric import topology
from ansible_collections.gpufabric.core.plugins.module_utils.health import readers as health_readers
from ansible_collections.gpufabric.core.plugins.module_utils.parsers import frr_status, lldp, mlnx_qos, swanctl
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.prometheus_text import Exposition, Family

SCHEMA_VERSION = 1
LOG = logging.getLogger("gpufabric-health")
# lldpcli, vtysh and swanctl answer in well under a second; mlnx_qos, a Python program, in about 0.2 s.
COMMAND_TIMEOUT_S = 5.0
# After SIGKILL: a process in uninterruptible sleep (a driver stuck in a firmware command) dies only when the kernel
# call returns, and is left to be reaped later rather than waited for.
_KILL_WAIT_S = 1.0
_ABANDONED = []
ZERO_MAC = "00:00:00:00:00:00"
_UP_IB_STATES = ("ACTIVE",)
_LACP_IN_SYNC = 0x08 | 0x10 | 0x20  # synchronization, collecting, distributing
# mlnx_qos speaks to mlx5 netdevs only: on another driver's RoCE port, a bond (RoCE LAG) or Soft-RoCE's parent its
# failure would read as "cannot see".
_MLNX_QOS_DRIVERS = ("mlx5_core",)

METRICS = (
    ("gpufabric_health_sample_timestamp_seconds", "gauge", "When gpufabric-health last finished a sample (Unix time)."),
    ("gpufabric_health_source_up", "gauge", "1 when the sampler could read the source (sysfs, lldp, frr, swanctl, "
     "bonding, ethtool, mlnx_qos), 0 when it could not: its checks are then unknown (NaN), not failed."),
    ("gpufabric_port_up", "gauge", "1 when the rail's port is up, 0 when down, NaN when unknown; every rail is "
     "expected up."),
    ("gpufabric_port_rate_bytes_per_second", "gauge", "Rate the rail's port negotiated, bytes/s (NaN when unknown or "
     "down)."),
    ("gpufabric_port_expected_rate_bytes_per_second", "gauge", "Rate the rail's port is expected at (its peers' rate "
     "in the fabric map, or the inventory's), bytes/s."),
    ("gpufabric_port_down_seconds_total", "counter", "Seconds the rail's port was seen down since the sampler "
     "started."),
    ("gpufabric_port_state_changes_total", "counter", "Up/down changes of the rail's port (the kernel's "
     "carrier_changes for a netdev; changes seen between samples for an RDMA port without one)."),
    ("gpufabric_pcie_link_width", "gauge", "Lanes the device's PCIe link trained at (NaN when unknown)."),
    ("gpufabric_pcie_link_expected_width", "gauge", "Lanes expected: the lower of the device's and its upstream "
     "port's maximum."),
    ("gpufabric_pcie_link_speed_transfers_per_second", "gauge", "Speed the device's PCIe link trained at, "
     "transfers/s per lane (16e9 = Gen4)."),
    ("gpufabric_pcie_link_expected_speed_transfers_per_second", "gauge", "Speed expected: the lower of the device's "
     "and its upstream port's maximum, transfers/s."),
    ("gpufabric_lldp_neighbour_ok", "gauge", "1 when the rail's LLDP neighbour is the fabric map's leaf and port, 0 "
     "when it is another, NaN when none is seen; labels leaf/leaf_port expected, seen_leaf/seen_port seen."),
    ("gpufabric_lldp_neighbours", "gauge", "LLDP neighbours lldpd lists on the rail's port (one that stopped sending "
     "stays until its TTL, 120 s by default), NaN when lldpcli cannot be asked; expected 1."),
    ("gpufabric_bond_member_in_sync", "gauge", "1 when the bond member is up, in the active aggregator, in LACP "
     "sync/collecting/distributing with a partner; 0 when not; NaN when the bond cannot be read."),
    ("gpufabric_bgp_peer_established", "gauge", "1 when the expected BGP session is Established, 0 when not, NaN "
     "when bgpd cannot be asked."),
    ("gpufabric_bfd_peer_up", "gauge", "1 when the expected BFD session is up, 0 when not, NaN when bfdd cannot be "
     "asked."),
    ("gpufabric_ipsec_child_sa_installed", "gauge", "1 when the expected IPsec CHILD SA with the peer is installed, "
     "0 when not, NaN when charon cannot be asked."),
    ("gpufabric_roce_ecn_enabled", "gauge", "1 when ECN (DCQCN) is on for the RoCE priority at the notification (np) "
     "or reaction (rp) point, 0 when off, NaN when unknown; expected 1."),
    ("gpufabric_roce_trust_ok", "gauge", "1 when the RoCE netdev's QoS trust state (mlnx_qos) is the expected one "
     "(label trust), 0 when another (label seen_trust), NaN when unknown (mlnx_qos absent or failing)."),
    ("gpufabric_roce_pfc_enabled", "gauge", "1 when PFC is on for the priority (mlnx_qos), 0 when off, NaN when "
     "unknown; lossless=\"true\" marks the priority expected lossless (expected 1), the others are shown as found."),
    ("gpufabric_roce_pause_frames_total", "counter", "Pause frames by direction and priority (global = 802.3x, 0-7 = "
     "PFC), from ethtool -S."),
    ("gpufabric_roce_out_of_buffer_total", "counter", "Packets the NIC dropped for want of a receive buffer "
     "(rx_out_of_buffer)."),
    ("gpufabric_roce_cnp_total", "counter", "RoCE congestion notification packets: sent (np_cnp_sent) and handled "
     "(rp_cnp_handled), from the RDMA port's hw_counters."),
)

_PORT_LABELS = ("rail", "netdev", "device", "port", "leaf", "leaf_port")


class CommandTimeout(OSError):
    """A command that did not answer in time (it was killed)."""


def watchdog_seconds(interval):
    """The unit's WatchdogSec: six sample intervals, at least 30 s."""
    return max(30, int(float(interval)) * 6)


def sample_budget_seconds(interval):
    """How long one sample may spend on commands: half the watchdog, so that the last command's kill, the sysfs
    reads and the write fit before the watchdog with room to spare."""
    return watchdog_seconds(interval) / 2.0


def _reap_abandoned():
    _ABANDONED[:] = [process for process in _ABANDONED if process.poll() is None]


def _kill(process):
    try:
        os.killpg(process.pid, signal.SIGKILL)  # its own session: children that hold the pipe go too
    except OSError:
        pass
    process.stdout.close()
    try:
        process.wait(timeout=_KILL_WAIT_S)
    except subprocess.TimeoutExpired:
        _ABANDONED.append(process)


def run_command(argv, timeout=COMMAND_TIMEOUT_S):
    """(exit code, stdout) of a read-only command, decoded as UTF-8 with replacement. A missing program raises
    FileNotFoundError; one that does not answer within timeout seconds is killed and raises CommandTimeout."""
    _reap_abandoned()
    # The sampler is a host program, not a module: there is no AnsibleModule.run_command, and it needs its own
    # session to kill a hung command's children with it.
    process = subprocess.Popen(  # pylint: disable=ansible-bad-function
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        out, _err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process)
        raise CommandTimeout("%s did not answer in %.1f s (killed)" % (argv[0], timeout)) from None
    return process.returncode, out.decode("utf-8", errors="replace")


def _label(value):
    return "" if value is None else str(value)


def _bytes_per_second(gbps):
    return None if gbps is None else gbps * 1e9 / 8


def member_in_sync(bond, member):
    """(True/False, why) for one member of a parsed 802.3ad bond: up, in the active aggregator, LACP state
    synchronization + collecting + distributing, and a partner that answers."""
    slave = next((item for item in bond["slaves"] if item["name"] == member), None)
    if slave is None:
        return False, "not enslaved"
    if slave["mii_status"] != "up":
        return False, "MII %s" % slave["mii_status"]
    if bond["mode"] != "802.3ad":
        return True, None
    active = (bond.get("active_aggregator") or {}).get("aggregator_id")
    if active is not None and slave["aggregator_id"] != active:
        return False, "aggregator %s, active %s" % (slave["aggregator_id"], active)
    if slave["partner_mac"] in (None, ZERO_MAC):
        return False, "no LACP partner"
    state = slave["actor_port_state"]
    if state is not None and state & _LACP_IN_SYNC != _LACP_IN_SYNC:
        return False, "actor LACP state %d" % state
    return True, None


class Sampler:
    """Samples one host against its expected state; keeps what flap counting and command caching need."""

    def __init__(self, expected, run=None, clock=time.time, sys_root=None, proc_root=None):
        self.expected = expected
        self.run = run
        self.clock = clock
        self.sys_root = sys_root or expected.get("sys_root") or "/sys"
        self.proc_root = proc_root or expected.get("proc_root") or "/proc"
        self.command_interval = float(expected.get("command_interval") or 0)
        # mlnx_qos is a Python program (about 0.1 s of CPU a run): asked every command_interval on eight rails it
        # would cost several percent of a core for a setting that changes only when someone changes it.
        self.qos_interval = float(expected.get("qos_interval") or self.command_interval)
        self.command_timeout = float(expected.get("command_timeout") or COMMAND_TIMEOUT_S)
        self.budget = float(expected.get("sample_budget") or sample_budget_seconds(expected.get("interval") or 5))
        self.host = expected["host"]
        self._commands = {}
        self._absent = set()
        self._ports = {}
        self._sample_time = None
        self._deadline = None
        self._timed_out = set()

    # -- commands, cached for command_interval ------------------------------------------------------------------
    def command(self, key, argv, interval=None):
        """(ok, stdout) of argv, run at most once per interval (command_interval unless given); absent(key) tells
        whether its program was missing at the last run. Not run, and not remembered, when the sample's budget is
        spent or its program timed out earlier in this sample."""
        now = self.clock()
        cached = self._commands.get(key)
        if cached and now - cached[0] < (self.command_interval if interval is None else interval):
            return cached[1]
        skipped = self._why_not_asked(argv)
        if skipped:
            LOG.warning("%s not asked: %s", " ".join(argv), skipped)
            return (False, "")
        self._absent.discard(key)
        try:
            code, out = self.run(argv, min(self.command_timeout, self._remaining()))
            result = (code == 0, out)
        except FileNotFoundError:
            self._absent.add(key)
            result = (False, "")
        except CommandTimeout as exc:
            LOG.warning("%s: %s", " ".join(argv), exc)
            self._timed_out.add(argv[0])
            result = (False, "")
        except OSError:
            result = (False, "")
        self._commands[key] = (now, result)
        return result

    def _why_not_asked(self, argv):
        if self.run is None:
            return "no command runner"
        if argv[0] in self._timed_out:
            return "it timed out in this sample"
        if self._remaining() <= 0:
            return "the sample's %.0f s budget is spent" % self.budget
        return None

    def _remaining(self):
        return float("inf") if self._deadline is None else self._deadline - time.monotonic()

    def absent(self, key):
        """True when the program of command key was not installed at its last run."""
        return key in self._absent

    # -- the sample --------------------------------------------------------------------------------------------
    # (reader, the source it marks down when it fails), in the order they run.
    _READERS = (("_ports_sample", "sysfs"), ("_pcie_sample", "pcie"), ("_lldp_sample", "lldp"),
                ("_bond_sample", "bonding"), ("_routing_sample", "frr"), ("_ipsec_sample", "swanctl"),
                ("_roce_sysfs_sample", "sysfs"), ("_roce_qos_sample", "mlnx_qos"), ("_ethtool_sample", "ethtool"))

    def sample(self):
        """The exposition of one sample."""
        now = self._sample_time = self.clock()
        self._deadline = time.monotonic() + self.budget
        self._timed_out = set()
        exposition = Exposition()
        families = {name: exposition.family(name, text, kind) for name, kind, text in METRICS}
        host = {"host": self.host}
        sources = {}
        for reader, source in self._READERS:
            self._read_apart(reader, source, families, host, sources)
        for source, ok in sorted(sources.items()):
            families["gpufabric_health_source_up"].add(dict(host, source=source), ok)
        families["gpufabric_health_sample_timestamp_seconds"].add(host, round(now, 3))
        return exposition

    def _read_apart(self, reader, source, families, host, sources):
        """Run one reader on families of its own and keep its series only when it finished: a reader that raises
        (a parser's bug, two rails alike) adds none and marks its source down; the others are still written."""
        own = {name: Family(name, family.help, family.kind) for name, family in families.items()}
        try:
            getattr(self, reader)(own, host, sources)
        except Exception as exc:  # pylint: disable=broad-except
            LOG.warning("%s: %s failed, its series are left out: %s", source, reader.strip("_"), exc)
            sources[source] = False
            return
        for name, family in own.items():
            families[name].samples.extend(family.samples)

    def _port_labels(self, rail):
        labels = {"host": self.host}
        for key in _PORT_LABELS:
            labels[key] = _label(rail.get(key))
        return labels

    def _ports_sample(self, families, host, sources):
        now = self._sample_time
        readable = True
        for rail in self.expected.get("rails", []):
            labels = self._port_labels(rail)
            up, rate_gbps, changes = None, None, None
            if rail.get("device") and rail.get("port") and rail.get("link_layer") == "InfiniBand":
                port = health_readers.read_ib_port(self.sys_root, rail["device"], rail["port"])
                if port["exists"] and port["state"]:
                    up = port["state"] in _UP_IB_STATES
                    rate_gbps = port["rate_gbps"] if up else None
            elif rail.get("netdev"):
                netdev = health_readers.read_netdev(self.sys_root, rail["netdev"])
                if netdev["exists"] and netdev["operstate"] not in (None, "unknown"):
                    up = netdev["operstate"] == "up"
                    rate_gbps = netdev["speed_mbps"] / 1000.0 if up and netdev["speed_mbps"] else None
                changes = netdev["carrier_changes"]
            if up is None:
                readable = False
            key = (rail.get("rail"), rail.get("netdev"), rail.get("device"), rail.get("port"))
            state = self._ports.setdefault(key, {"up": up, "since": now, "down_seconds": 0.0, "changes": 0})
            if state["up"] is False:
                # Down at the last sample: the time since then counts as down (a sample is a few seconds).
                state["down_seconds"] += max(0.0, now - state["since"])
            if up is not None and state["up"] is not None and up != state["up"]:
                state["changes"] += 1
            state["up"], state["since"] = up, now
            families["gpufabric_port_up"].add(labels, up)
            families["gpufabric_port_rate_bytes_per_second"].add(labels, _bytes_per_second(rate_gbps))
            if rail.get("expected_rate_gbps"):
                families["gpufabric_port_expected_rate_bytes_per_second"].add(
                    labels, _bytes_per_second(float(rail["expected_rate_gbps"])))
            families["gpufabric_port_down_seconds_total"].add(labels, round(state["down_seconds"], 3))
            families["gpufabric_port_state_changes_total"].add(labels, changes if changes is not None else state["changes"])
        if self.expected.get("rails"):
            sources["sysfs"] = readable

    def _pcie_sample(self, families, host, sources):
        for item in self.expected.get("pcie", []):
            link = health_readers.read_pcie_link(self.sys_root, item["pci"])
            labels = dict(host, device=_label(item.get("device")), pci=item["pci"], kind=_label(item.get("kind")),
                          rail=_label(item.get("rail")))
            families["gpufabric_pcie_link_width"].add(labels, link["current_width"])
            families["gpufabric_pcie_link_expected_width"].add(labels, link["expected_width"])
            speed = link["current_speed_gts"]
            expected = link["expected_speed_gts"]
            families["gpufabric_pcie_link_speed_transfers_per_second"].add(labels, None if speed is None else speed * 1e9)
            families["gpufabric_pcie_link_expected_speed_transfers_per_second"].add(
                labels, None if expected is None else expected * 1e9)
            if not link["exists"]:
                sources["pcie"] = False
            else:
                sources.setdefault("pcie", True)

    def _lldp_sample(self, families, host, sources):
        rails = [rail for rail in self.expected.get("rails", []) if rail.get("leaf") and rail.get("netdev")]
        if not rails:
            return
        ok, out = self.command("lldp", ["lldpcli", "-f", "json0", "show", "neighbors"])
        neighbours = None
        if ok:
            try:
                neighbours = lldp.neighbors_by_interface(lldp.parse_lldp(out))
            except ParseError:
                neighbours = None
        sources["lldp"] = neighbours is not None
        for rail in rails:
            seen = ((neighbours or {}).get(rail["netdev"]) or [None])[0]
            # Discovery's own naming of a switch and its port (the fabric map's), so that expected and seen compare alike.
            seen_leaf, seen_port = (topology.switch_name(seen), topology.switch_port_name(seen)) if seen else (None, None)
            labels = self._port_labels(rail)
            labels.update(seen_leaf=_label(seen_leaf), seen_port=_label(seen_port))
            if neighbours is None or seen is None:
                value = None
            else:
                value = seen_leaf == rail["leaf"] and (not rail.get("leaf_port") or seen_port == rail["leaf_port"])
            families["gpufabric_lldp_neighbour_ok"].add(labels, value)
            # More than one for longer than a TTL: a hub, or a switch that forwards LLDP, between the NIC and the leaf.
            families["gpufabric_lldp_neighbours"].add(
                self._port_labels(rail), None if neighbours is None else len(neighbours.get(rail["netdev"]) or []))

    def _bond_sample(self, families, host, sources):
        for bond in self.expected.get("bonds", []):
            path = os.path.join(self.proc_root, "net", "bonding", bond["bond"])
            text = health_readers.read_text(path)
            parsed = None
            if text is not None:
                try:
                    parsed = bonding_parser.parse_bonding(text)
                except ParseError:
                    parsed = None
            sources["bonding"] = sources.get("bonding", True) and parsed is not None
            for member in bond["members"]:
                value = None if parsed is None else member_in_sync(parsed, member)[0]
                families["gpufabric_bond_member_in_sync"].add(dict(host, bond=bond["bond"], netdev=member), value)

    def _routing_sample(self, families, host, sources):
        for key, command, parser, peers_key, family, field in (
                ("bgp", "show bgp summary json", frr_status.parse_bgp_summary, "bgp_peers",
                 "gpufabric_bgp_peer_established", "established"),
                ("bfd", "show bfd peers json", frr_status.parse_bfd_peers, "bfd_peers", "gpufabric_bfd_peer_up", "up")):
            expected = self.expected.get(peers_key) or []
            if not expected:
                continue
            ok, out = self.command(key, ["vtysh", "-c", command])
            sessions = None
            if ok:
                try:
                    sessions = parser(out)
                except frr_status.FrrStatusError:
                    sessions = None
            sources["frr"] = sources.get("frr", True) and sessions is not None
            for peer in expected:
                value = None
                if sessions is not None:
                    match = [item for item in sessions
                             if peer["peer"] in (item.get("peer"), item.get("interface"))
                             or (peer.get("interface") and item.get("interface") == peer["interface"])]
                    value = bool(match) and any(item[field] for item in match)
                labels = dict(host, peer=peer["peer"], leaf=_label(peer.get("leaf")), netdev=_label(peer.get("interface")))
                families[family].add(labels, value)

    def _ipsec_sample(self, families, host, sources):
        expected = self.expected.get("ipsec") or []
        if not expected:
            return
        ok, out = self.command("ipsec", ["swanctl", "--list-sas"])
        sas = None
        if ok:
            try:
                sas = swanctl.parse_list_sas(out)
            except ParseError:
                sas = None
        sources["swanctl"] = sas is not None
        results = swanctl.evaluate_sas(sas, expected) if sas is not None else []
        for index, peer in enumerate(expected):
            value = None if sas is None else results[index]["child_state"] == "INSTALLED"
            families["gpufabric_ipsec_child_sa_installed"].add(
                dict(host, peer=peer["peer"], child=peer["child"]), value)

    def _roce_rails(self):
        return [rail for rail in self.expected.get("rails", []) if rail.get("roce")]

    def _roce_sysfs_sample(self, families, host, sources):
        """ECN per point (the netdev's sysfs) and CNP counters (the RDMA port's hw_counters)."""
        for rail in self._roce_rails():
            labels = self._port_labels(rail)
            priority = rail["roce"].get("ecn_priority")
            if priority is not None and rail.get("netdev"):
                for point, value in zip(("np", "rp"), health_readers.read_roce_ecn(self.sys_root, rail["netdev"], priority)):
                    families["gpufabric_roce_ecn_enabled"].add(dict(labels, priority=str(priority), point=point), value)
            if rail.get("device") and rail.get("port"):
                hw = health_readers.read_ib_port(self.sys_root, rail["device"], rail["port"])["hw_counters"]
                for kind, name in (("sent", "np_cnp_sent"), ("handled", "rp_cnp_handled")):
                    if name in hw:
                        families["gpufabric_roce_cnp_total"].add(dict(labels, kind=kind), hw[name])

    def _roce_qos_sample(self, families, host, sources):
        for rail in self._roce_rails():
            roce = rail["roce"]
            if rail.get("netdev") and (roce.get("trust") or roce.get("pfc_priority") is not None):
                self._qos_sample(families, self._port_labels(rail), rail["netdev"], roce, sources)

    def _ethtool_sample(self, families, host, sources):
        """Pause frames per direction and priority, and out-of-buffer drops, from ethtool -S."""
        for rail in self._roce_rails():
            if not rail.get("netdev"):
                continue
            labels = self._port_labels(rail)
            ok, out = self.command("ethtool:" + rail["netdev"], ["ethtool", "-S", rail["netdev"]])
            sources["ethtool"] = sources.get("ethtool", True) and ok
            if ok:
                found = health_readers.pause_and_congestion(health_readers.parse_ethtool_stats(out))
                for (direction, prio), frames in sorted(found["pause"].items()):
                    families["gpufabric_roce_pause_frames_total"].add(
                        dict(labels, direction=direction, priority=prio), frames)
                if found["out_of_buffer"] is not None:
                    families["gpufabric_roce_out_of_buffer_total"].add(labels, found["out_of_buffer"])

    def _qos_sample(self, families, labels, netdev, roce, sources):
        """Trust state and PFC per priority as mlnx_qos finds them, against the expected ones. mlnx_qos not installed
        (an inbox-driver host: the rdma role then leaves trust as it is) or a netdev not of mlx5_core (a bond, a
        virtual or another vendor's netdev) is unknown and no source; installed but failing is the mlnx_qos source
        down."""
        qos = None
        if health_readers.read_netdev_driver(self.sys_root, netdev) in _MLNX_QOS_DRIVERS:
            key = "mlnx_qos:" + netdev
            ok, out = self.command(key, ["mlnx_qos", "-i", netdev], self.qos_interval)
            if ok:
                try:
                    qos = mlnx_qos.parse_mlnx_qos(out)
                except ParseError:
                    qos = None
            if not self.absent(key):
                sources["mlnx_qos"] = sources.get("mlnx_qos", True) and qos is not None
        if roce.get("trust"):
            seen = "" if qos is None else qos["trust"]
            families["gpufabric_roce_trust_ok"].add(dict(labels, trust=roce["trust"], seen_trust=seen),
                                                    None if qos is None else seen == roce["trust"])
        lossless = roce.get("pfc_priority")
        if lossless is not None:
            for priority in mlnx_qos.PRIORITIES:
                families["gpufabric_roce_pfc_enabled"].add(
                    dict(labels, priority=str(priority), lossless="true" if priority == lossless else "false"),
                    None if qos is None else qos["pfc_enabled"][priority])
