# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet fabric map: which leaf switch and port every host's rail reaches, and what is miscabled.

``build_fabric_map`` is a pure function over ``{host: gpufabric_topology}`` (the facts of
``gpufabric.core.topology_facts``, schema in docs/topology.md), each host's peer group and an optional
rail-to-interface override. It never parses command output itself: the LLDP neighbours, RDMA ports and
interfaces come already parsed in the facts.

A host's rails are those its facts hold: topology_facts resolves them once (topology.resolve_rails), from the
inventory's ``gpufabric_rail_interfaces``, else GPU i and its nearest RDMA NIC, else, on a host without GPUs, its
RDMA devices with an ACTIVE port. The map derives none of its own; a host without rails is an info finding.
``rail_interfaces`` (deprecated, for one release) resolves a host's rails again from its facts with that
override, through the same function.

Routed uplinks (BGP sessions to the leaves, from the facts' ``routing`` section) are carried per host and
gathered per leaf in ``leaves``, beside the LLDP view; they are not rails.

Every check runs in one pass over the hosts plus one pass over the groups, so building the map grows
linearly with the number of hosts (see benchmarks/bench_fabric_map.py).
"""

from __future__ import annotations

import re
from collections import Counter

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.topology import RailInterfacesError, resolve_rails
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.topology import (
    normalize_rail_interfaces as normalize_rail_interfaces_of,
)

SCHEMA_VERSION = 1
SEVERITIES = ("info", "warning", "error")
DEFAULT_PEER_GROUP = "all"

_DIGITS = re.compile(r"(\d+)")
# States of a usable port: RDMA port state ACTIVE, or netdev operstate up.
_UP_STATES = frozenset(("ACTIVE", "UP"))


class FabricMapError(ValueError):
    """The input given to build_fabric_map is not what it documents; the message says what to fix."""


def natural_key(text):
    """Sort key putting node2 before node10 and Ethernet8 before Ethernet16."""
    return [int(part) if part.isdigit() else part.lower() for part in _DIGITS.split(str(text))]


def normalize_rail_interfaces(value, host):
    """{rail index: netdev} from a list or a mapping (topology.normalize_rail_interfaces); FabricMapError naming
    the host on anything else."""
    try:
        return normalize_rail_interfaces_of(value, "gpufabric_rail_interfaces of %s" % host)
    except RailInterfacesError as exc:
        raise FabricMapError(str(exc))


def _map_rail(fact):
    """A rail of the facts (topology.resolve_rails) as a row of the map; older facts lack up, mtu and exists."""
    state = fact.get("state")
    up = fact.get("up")
    if up is None and state:
        up = state in _UP_STATES
    return {
        "rail": fact.get("rail"),
        "gpu": fact.get("gpu"),
        "device": fact.get("device"),
        "port": fact.get("port"),
        "netdev": fact.get("netdev"),
        "state": state,
        "up": up,
        "rate_gbps": fact.get("rate_gbps"),
        "link_layer": fact.get("link_layer"),
        "mtu": fact.get("mtu"),
        "active_mtu": fact.get("active_mtu"),
        # A switch that sends no system name is named by its chassis ID.
        "switch": fact.get("switch") or fact.get("switch_id"),
        "switch_port": fact.get("switch_port"),
        "exists": fact.get("exists", True),
    }


def host_rails(topology, rail_interfaces=None):
    """(rails, rail_source) of one host: the rails its facts resolved (topology_facts).

    rail_interfaces (deprecated, the filter's parameter) resolves them again from the facts with that override,
    through the same topology.resolve_rails.
    """
    if rail_interfaces:
        facts, source, _findings = resolve_rails(topology, rail_interfaces)
    else:
        facts = [fact for fact in topology.get("rails") or [] if isinstance(fact, dict)]
        source = topology.get("rail_source") or ("gpu" if facts else "none")
    rails = []
    for position, fact in enumerate(facts):
        rail = _map_rail(fact)
        if not isinstance(rail["rail"], int):
            rail["rail"] = position
        rails.append(rail)
    return rails, source


def _plurality(counter):
    """The most common value when it is strictly more common than the next one, else None (a tie)."""
    common = counter.most_common(2)
    if not common:
        return None
    if len(common) == 2 and common[0][1] == common[1][1]:
        return None
    return common[0][0]


def _finding(severity, kind, message, host=None, group=None, rail=None, scope="fleet"):
    """scope fleet: found by comparing hosts here; scope host: found by topology_facts on the host itself."""
    return {"severity": severity, "kind": kind, "scope": scope, "host": host, "group": group, "rail": rail,
            "message": message}


def _fmt_rate(rate):
    return ("%g Gb/s" % rate) if rate is not None else "unknown rate"


def _fmt_counts(counter, fmt=str):
    return ", ".join("%s on %d" % (fmt(value), count)
                     for value, count in sorted(counter.items(), key=lambda item: (-item[1], natural_key(item[0]))))


def _check_input(topologies, peer_groups, rail_interfaces):
    if not isinstance(topologies, dict):
        raise FabricMapError(
            "fabric_map expects a mapping of host name to gpufabric_topology facts, not %s"
            % type(topologies).__name__)
    for name, value in (("peer_groups", peer_groups), ("rail_interfaces", rail_interfaces)):
        if value is not None and not isinstance(value, dict):
            raise FabricMapError("fabric_map %s must be a mapping keyed by host name, not %s"
                                 % (name, type(value).__name__))
    for host, topology in topologies.items():
        if topology is not None and not isinstance(topology, dict):
            raise FabricMapError(
                "the gpufabric_topology of %s is a %s, not a mapping: pass the facts that "
                "gpufabric.core.topology_facts returns" % (host, type(topology).__name__))
        if isinstance(topology, dict) and topology.get("schema_version") not in (None, SCHEMA_VERSION):
            raise FabricMapError(
                "the gpufabric_topology of %s has schema_version %r; this fabric_map reads version %d"
                % (host, topology.get("schema_version"), SCHEMA_VERSION))


class _Tally:
    """What the pass over the hosts accumulates for the checks across hosts."""

    def __init__(self):
        self.findings = []
        self.rail_stats = {}  # (group, rail index) -> {"switch"|"rate"|"mtu"|"active_mtu": Counter, "hosts": n}
        self.port_owners = {}  # (switch, switch port) -> [(host, rail index)]
        self.ports_down = []
        self.unlinked_ib_rails = 0


def build_fabric_map(topologies, peer_groups=None, rail_interfaces=None):
    """Build the fabric map of a fleet.

    topologies: {host: gpufabric_topology or None}; None (or a missing host) means no facts were gathered.
    peer_groups: {host: group name}; hosts of one group are expected to be cabled alike. Default "all".
    rail_interfaces: {host: list or mapping of rail index -> netdev}, overriding GPU-derived rails.

    Returns a JSON-ready dict: hosts, rails, switches, findings and a summary (layout in the RETURN of
    `ansible-doc -t filter gpufabric.core.fabric_map`).
    """
    _check_input(topologies, peer_groups, rail_interfaces)
    peer_groups = peer_groups or {}
    rail_interfaces = rail_interfaces or {}
    tally = _Tally()
    hosts = {}
    for host in sorted(topologies, key=natural_key):
        hosts[host] = _add_host(host, topologies[host], peer_groups.get(host) or DEFAULT_PEER_GROUP,
                                rail_interfaces.get(host), tally)
    findings = tally.findings
    rails_out = _rail_checks(hosts, tally.rail_stats, findings)
    switches = _switches(hosts, tally.port_owners, findings)
    if tally.unlinked_ib_rails:
        findings.append(_finding("info", "infiniband_rails", "%d InfiniBand rails carry no LLDP, so their leaf "
                                 "switch is not in this map; use ibnetdiscover for the IB fabric"
                                 % tally.unlinked_ib_rails))
    # The message last: findings that tie on the rest keep one order whatever order the facts listed them in.
    findings.sort(key=lambda item: (-SEVERITIES.index(item["severity"]), natural_key(item["host"] or ""),
                                    item["rail"] if item["rail"] is not None else -1, item["kind"], item["message"]))
    _host_status(hosts, findings)
    leaves = _leaves(hosts)
    summary = dict(_summary(hosts, rails_out, switches, findings), rail_ports_down=tally.ports_down)
    summary.update(_routing_summary(hosts, leaves))
    return {
        "schema_version": SCHEMA_VERSION,
        "summary": summary,
        "hosts": hosts,
        "rails": rails_out,
        "switches": switches,
        "findings": findings,
        "leaves": leaves,
    }


def _routed_uplinks(topology):
    """A host's routed uplinks (BGP sessions to its leaves) from the facts' routing section, for the map."""
    uplinks = []
    for uplink in ((topology or {}).get("routing") or {}).get("uplinks") or []:
        if not isinstance(uplink, dict) or not uplink.get("peer"):
            continue
        remote_as = uplink.get("remote_as")
        uplinks.append({
            "peer": uplink["peer"],
            "interface": uplink.get("interface"),
            "unnumbered": bool(uplink.get("unnumbered")),
            # A leaf that sends no hostname and has no description is named by its AS and address.
            "leaf": uplink.get("leaf") or uplink.get("description") or "AS%s %s" % (remote_as, uplink["peer"]),
            "remote_as": remote_as,
            "state": uplink.get("state"),
            "established": bool(uplink.get("established")),
        })
    return sorted(uplinks, key=lambda item: (natural_key(item["leaf"]), natural_key(item["peer"])))


def _leaves(hosts):
    """{leaf: its AS numbers, and the sessions hosts have to it} from every host's routed uplinks."""
    leaves = {}
    for host, entry in hosts.items():
        for uplink in entry["routed_uplinks"]:
            leaf = leaves.setdefault(uplink["leaf"], {"remote_as": set(), "sessions": []})
            if uplink["remote_as"] is not None:
                leaf["remote_as"].add(uplink["remote_as"])
            leaf["sessions"].append({"host": host, "peer": uplink["peer"], "interface": uplink["interface"],
                                     "state": uplink["state"], "established": uplink["established"]})
    out = {}
    for name in sorted(leaves, key=natural_key):
        sessions = leaves[name]["sessions"]
        out[name] = {
            "remote_as": sorted(leaves[name]["remote_as"]),
            "hosts": len({session["host"] for session in sessions}),
            "established": sum(1 for session in sessions if session["established"]),
            "sessions": sessions,
        }
    return out


def _routing_summary(hosts, leaves):
    uplinks = [uplink for entry in hosts.values() for uplink in entry["routed_uplinks"]]
    return {
        "routed_hosts": sum(1 for entry in hosts.values() if entry["routed_uplinks"]),
        "routed_uplinks": len(uplinks),
        "routed_uplinks_down": sum(1 for uplink in uplinks if not uplink["established"]),
        "leaves": len(leaves),
    }


def _add_host(host, topology, group, rail_interfaces, tally):
    """One host's entry in the map; what the checks across hosts need goes into tally."""
    entry = {"peer_group": group, "facts": topology is not None, "source": None, "rail_source": "none",
             "rdma_devices": [], "rails": [], "status": "ok", "miscabled": False,
             "routed_uplinks": _routed_uplinks(topology)}
    findings = tally.findings
    if topology is None:
        findings.append(_finding("error", "no_facts", "%s has no topology facts: the host was unreachable "
                                 "or topology_facts failed on it" % host, host=host, group=group))
        return entry
    entry["source"] = topology.get("source")
    for item in topology.get("findings") or []:
        if isinstance(item, dict) and item.get("message"):
            # What topology_facts found on the host itself (a GPU far from its NIC, a bond without partner).
            severity = item.get("severity") if item.get("severity") in SEVERITIES else "warning"
            findings.append(_finding(severity, item.get("kind") or "host", "%s: %s" % (host, item["message"]),
                                     host=host, group=group, scope="host"))
    rdma = topology.get("rdma") or {}
    entry["rdma_devices"] = sorted((device.get("name") for device in rdma.get("devices") or []
                                    if isinstance(device, dict) and device.get("name")), key=natural_key)

    rails, entry["rail_source"] = host_rails(topology, normalize_rail_interfaces(rail_interfaces, host))
    entry["rails"] = rails
    if not rails:
        findings.append(_finding(
            "info", "no_rails", "%s has no rails: no GPU with a nearest RDMA NIC in its facts, no RDMA device with "
            "an ACTIVE port on a host without GPUs, and no gpufabric_rail_interfaces in the inventory" % host,
            host=host, group=group))
    lldp = topology.get("lldp") or {}
    for rail in rails:
        _add_rail(host, group, rail, lldp, tally)
    if rails and lldp.get("available") is False:
        findings.append(_finding("warning", "no_lldp", "%s has no LLDP data (%s): its rails cannot be placed "
                                 "on switches" % (host, lldp.get("reason") or "lldpd not available"),
                                 host=host, group=group))
    return entry


def _add_rail(host, group, rail, lldp, tally):
    findings = tally.findings
    stats = tally.rail_stats.setdefault((group, rail["rail"]), {
        "switch": Counter(), "rate": Counter(), "mtu": Counter(), "active_mtu": Counter(), "hosts": 0})
    stats["hosts"] += 1
    label = _rail_label(rail)
    if not rail.pop("exists"):
        findings.append(_finding(
            "error", "rail_interface_missing", "%s rail %d names interface %s in gpufabric_rail_interfaces, "
            "but the host has no such interface" % (host, rail["rail"], rail["netdev"]),
            host=host, group=group, rail=rail["rail"]))
        return
    if rail["up"] is False:
        tally.ports_down.append("%s rail %d (%s)" % (host, rail["rail"], label))
        # topology_facts already reports every RDMA port down on its host; the netdev of an
        # inventory rail is only checked here.
        if rail["device"] is None:
            findings.append(_finding("error", "port_down", "%s rail %d (%s) is %s" % (
                host, rail["rail"], label, rail["state"]), host=host, group=group, rail=rail["rail"]))
    for key, stat in (("rate_gbps", "rate"), ("mtu", "mtu"), ("active_mtu", "active_mtu")):
        # A port that is down shows no negotiated rate worth comparing (ibstat prints 40 Gb/s).
        if rail[key] is not None and not (key == "rate_gbps" and rail["up"] is False):
            stats[stat][rail[key]] += 1
    if rail["switch"] is not None:
        stats["switch"][rail["switch"]] += 1
        if rail["switch_port"] is not None:
            tally.port_owners.setdefault((rail["switch"], rail["switch_port"]), []).append((host, rail["rail"]))
    elif rail["link_layer"] == "InfiniBand":
        # InfiniBand does not speak LLDP: the switch of an IB rail is unknown here, not missing.
        tally.unlinked_ib_rails += 1
    elif lldp.get("available") is not False:  # a host without LLDP at all is reported once, not per rail
        findings.append(_finding("warning", "no_neighbor", "%s rail %d (%s) has no LLDP neighbour: "
                                 "the cable, the switch's LLDP or lldpd on the host is missing" % (
                                     host, rail["rail"], label), host=host, group=group, rail=rail["rail"]))


def _rail_label(rail):
    parts = [part for part in (rail["device"] and ("%s port %s" % (rail["device"], rail["port"])
                                                   if rail["port"] is not None else rail["device"]),
                               rail["netdev"]) if part]
    return ", ".join(parts) or "no NIC"


def _rail_checks(hosts, rail_stats, findings):
    """Mark each rail aligned or not against its peer group's plurality and report the outliers."""
    expected = {}
    rails_out = []
    for (group, index) in sorted(rail_stats, key=lambda key: (key[1], natural_key(key[0]))):
        stats = rail_stats[(group, index)]
        values = {stat: _plurality(stats[stat]) for stat in ("switch", "rate", "mtu", "active_mtu")}
        expected[(group, index)] = values
        if values["switch"] is None and len(stats["switch"]) > 1:
            findings.append(_finding(
                "warning", "rail_ambiguous", "rail %d of group %s has no majority switch (%s): cannot tell "
                "which hosts are miscabled" % (index, group, _fmt_counts(stats["switch"])), group=group, rail=index))
        rails_out.append({
            "rail": index, "group": group, "hosts": stats["hosts"],
            "expected_switch": values["switch"], "switches": dict(stats["switch"]),
            "expected_rate_gbps": values["rate"], "expected_mtu": values["mtu"],
            "expected_active_mtu": values["active_mtu"],
        })
    for host in hosts:
        entry = hosts[host]
        group = entry["peer_group"]
        for rail in entry["rails"]:
            values = expected[(group, rail["rail"])]
            stats = rail_stats[(group, rail["rail"])]
            rail["expected_switch"] = values["switch"]
            rail["aligned"] = None if rail["switch"] is None or values["switch"] is None \
                else rail["switch"] == values["switch"]
            if rail["aligned"] is False:
                entry["miscabled"] = True
                findings.append(_finding(
                    "error", "rail_misaligned", "%s rail %d (%s) reaches %s port %s, but rail %d of its peers in "
                    "group %s reaches %s (%s)" % (
                        host, rail["rail"], _rail_label(rail), rail["switch"], rail["switch_port"], rail["rail"],
                        group, values["switch"], _fmt_counts(stats["switch"])),
                    host=host, group=group, rail=rail["rail"]))
            if (values["rate"] is not None and rail["rate_gbps"] is not None and rail["up"] is not False
                    and rail["rate_gbps"] != values["rate"]):
                findings.append(_finding(
                    "warning", "rate_mismatch", "%s rail %d (%s) runs at %s; rail %d of its peers in group %s runs "
                    "at %s (%s)" % (host, rail["rail"], _rail_label(rail), _fmt_rate(rail["rate_gbps"]),
                                    rail["rail"], group, _fmt_rate(values["rate"]),
                                    _fmt_counts(stats["rate"], _fmt_rate)),
                    host=host, group=group, rail=rail["rail"]))
            for key, what in (("mtu", "netdev MTU"), ("active_mtu", "RDMA active MTU")):
                if values[key] is not None and rail[key] is not None and rail[key] != values[key]:
                    findings.append(_finding(
                        "warning", "mtu_mismatch", "%s rail %d (%s) has %s %s; rail %d of its peers in group %s "
                        "has %s (%s)" % (host, rail["rail"], _rail_label(rail), what, rail[key], rail["rail"],
                                         group, values[key], _fmt_counts(stats[key])),
                        host=host, group=group, rail=rail["rail"]))
    return rails_out


def _switches(hosts, port_owners, findings):
    switches = {}
    for (switch, port), owners in port_owners.items():
        entry = switches.setdefault(switch, {"ports": [], "hosts": set(), "rails": set()})
        for host, rail in owners:
            entry["ports"].append({"port": port, "host": host, "rail": rail})
            entry["hosts"].add(host)
            entry["rails"].add(rail)
        if len(owners) > 1:
            # One finding per host involved, so that each of them shows the problem in its status.
            for host, rail in owners:
                others = ", ".join("%s rail %d" % owner for owner in owners if owner != (host, rail))
                findings.append(_finding(
                    "error", "switch_port_conflict", "%s rail %d reaches %s port %s, which %s also reach: stale "
                    "LLDP data, a loop or a shared segment" % (host, rail, switch, port, others),
                    host=host, group=hosts[host]["peer_group"], rail=rail))
    out = {}
    for switch in sorted(switches, key=natural_key):
        entry = switches[switch]
        out[switch] = {
            "ports": sorted(entry["ports"], key=lambda item: (natural_key(item["port"]), natural_key(item["host"]),
                                                              item["rail"])),
            "hosts": len(entry["hosts"]),
            "rails": sorted(entry["rails"]),
        }
    return out


def _host_status(hosts, findings):
    """A host's status is the worst severity among the findings naming it."""
    worst = {}
    for item in findings:
        if item["host"] is not None:
            worst[item["host"]] = max(worst.get(item["host"], 0), SEVERITIES.index(item["severity"]))
    for host, entry in hosts.items():
        level = worst.get(host, 0)
        if not entry["facts"]:
            entry["status"] = "no_facts"
        else:
            entry["status"] = "ok" if level == 0 else SEVERITIES[level]


def _summary(hosts, rails_out, switches, findings):
    counts = Counter(item["severity"] for item in findings)
    return {
        "hosts": len(hosts),
        "hosts_with_facts": sum(1 for entry in hosts.values() if entry["facts"]),
        "rails": len({item["rail"] for item in rails_out}),
        "switches": len(switches),
        "findings": {severity: counts.get(severity, 0) for severity in SEVERITIES},
        "miscabled_hosts": [host for host, entry in hosts.items() if entry["miscabled"]],
        "hosts_by_status": dict(Counter(entry["status"] for entry in hosts.values())),
    }
