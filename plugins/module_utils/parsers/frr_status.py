# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""FRRouting state, parsed from vtysh's JSON output, and the problems it shows.

Pure functions from text to data (no I/O), shared by the frr_status module and its tests:
- parse_bgp_summary: `show bgp summary json` (FRR 8.x: one object per address family, peers keyed by address or,
  for unnumbered sessions, by interface name);
- parse_bfd_peers: `show bfd peers json` (a list of sessions);
- parse_route: `show ip route PREFIX json` / `show ipv6 route PREFIX json`;
- status_problems: what is wrong against the uplinks the inventory expects.
"""

from __future__ import annotations

import json


class FrrStatusError(ValueError):
    """An output that is not what the FRR command prints."""


def _load(text, command, kind):
    try:
        data = json.loads(text) if text and text.strip() else None
    except ValueError as exc:
        raise FrrStatusError("%s: output is not JSON (%s): %r" % (command, exc, text[:200])) from None
    if not isinstance(data, kind):
        raise FrrStatusError("%s: expected a JSON %s, got %r" % (command, kind.__name__, (text or "")[:200]))
    return data


def _int(value, default=0):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def parse_bgp_summary(text):
    """Sessions from `show bgp summary json`, one entry per peer (address families merged).

    Each entry: peer (address or interface name), interface (for unnumbered sessions), remote_as, state,
    established, uptime_ms, prefixes_received (per address family and total), description, hostname.
    bgpd not running (empty output) gives an empty list.
    """
    data = _load(text, "show bgp summary json", dict) if text and text.strip() else {}
    sessions = {}
    for family, summary in sorted(data.items()):
        if not isinstance(summary, dict):
            continue
        peers = summary.get("peers")
        for peer, info in sorted(peers.items() if isinstance(peers, dict) else []):
            if not isinstance(info, dict):
                continue
            session = sessions.setdefault(peer, {
                "peer": peer,
                "interface": peer if info.get("idType") == "interface" else None,
                "remote_as": info.get("remoteAs"),
                "local_as": info.get("localAs", summary.get("as")),
                "state": info.get("state", "unknown"),
                "established": info.get("state") == "Established",
                "uptime_ms": _int(info.get("peerUptimeMsec")),
                # Counters since bgpd started: a reset session shows as one more of each.
                "connections_established": _int(info.get("connectionsEstablished")),
                "connections_dropped": _int(info.get("connectionsDropped")),
                "description": info.get("desc"),
                "hostname": info.get("hostname"),
                "prefixes_received": {},
                "prefixes_received_total": 0,
            })
            received = _int(info.get("pfxRcd"))
            session["prefixes_received"][family] = received
            session["prefixes_received_total"] += received
    return [sessions[key] for key in sorted(sessions)]


def detection_time_ms(peer):
    """Local detection time of a BFD session (RFC 5880 6.8.4): the remote's multiplier times the agreed receive
    interval, the slower of our receive and the remote's transmit interval. Before the remote is heard from, the
    local values (what the session will time out with once up)."""
    multiplier = _int(peer.get("remote-detect-multiplier")) or _int(peer.get("detect-multiplier"))
    interval = max(_int(peer.get("receive-interval")), _int(peer.get("remote-transmit-interval")))
    return multiplier * interval


def parse_bfd_peers(text):
    """Sessions from `show bfd peers json`: peer, local, interface, status, up, uptime_s (or downtime_s),
    diagnostic, intervals in ms, detect_multiplier and detection_time_ms."""
    data = _load(text, "show bfd peers json", list) if text and text.strip() else []
    peers = []
    for item in data:
        if not isinstance(item, dict):
            continue
        peers.append({
            "peer": item.get("peer"),
            "local": item.get("local"),
            "interface": item.get("interface"),
            "multihop": bool(item.get("multihop")),
            "status": item.get("status", "unknown"),
            "up": item.get("status") == "up",
            "uptime_s": _int(item.get("uptime")),
            "downtime_s": _int(item.get("downtime")),
            "diagnostic": item.get("diagnostic"),
            "receive_interval_ms": _int(item.get("receive-interval")),
            "transmit_interval_ms": _int(item.get("transmit-interval")),
            "detect_multiplier": _int(item.get("detect-multiplier")),
            "remote_receive_interval_ms": _int(item.get("remote-receive-interval")),
            "remote_transmit_interval_ms": _int(item.get("remote-transmit-interval")),
            "remote_detect_multiplier": _int(item.get("remote-detect-multiplier")),
            "detection_time_ms": detection_time_ms(item),
        })
    return peers


def parse_route(text, prefix):
    """The selected route to prefix from `show ip[v6] route PREFIX json`: protocol, installed and the next hops
    in the FIB (ip, interface). A prefix with no route gives installed false and no next hops."""
    data = _load(text, "show route %s json" % prefix, dict) if text and text.strip() else {}
    route = {"prefix": prefix, "protocol": None, "installed": False, "nexthops": []}
    for entry in data.get(prefix) or []:
        if not isinstance(entry, dict) or not entry.get("selected"):
            continue
        route["protocol"] = entry.get("protocol")
        route["installed"] = bool(entry.get("installed"))
        route["nexthops"] = [
            {"ip": hop.get("ip"), "interface": hop.get("interfaceName")}
            for hop in entry.get("nexthops") or []
            if isinstance(hop, dict) and hop.get("fib") and hop.get("active", True)
        ]
        break
    return route


def _uplink_name(uplink):
    label = uplink.get("peer") or uplink["interface"]
    return "%s (leaf %s)" % (label, uplink["leaf"]) if uplink.get("leaf") else label


def find_session(sessions, uplink):
    """The BGP session of an uplink: keyed by the peer address, or by the interface when unnumbered."""
    key = uplink.get("peer") or uplink.get("interface")
    return next((s for s in sessions if s["peer"] == key), None)


def find_bfd_peer(bfd_peers, uplink):
    """The BFD session of an uplink: by peer address when numbered, by interface when unnumbered (its peer is the
    leaf's link-local address, learnt at run time)."""
    if uplink.get("peer"):
        return next((p for p in bfd_peers if p["peer"] == uplink["peer"]), None)
    return next((p for p in bfd_peers if p["interface"] == uplink["interface"]), None)


def status_problems(sessions, bfd_peers, routes, uplinks, min_nexthops=None):
    """Problems against the expected uplinks, one sentence each, naming the peer, the leaf and the route.

    uplinks: dicts with interface, peer (None when unnumbered), leaf, bfd (whether a BFD session is expected).
    routes: parsed routes that must have min_nexthops next hops (default: one per uplink).
    """
    problems = []
    for uplink in uplinks:
        name = _uplink_name(uplink)
        session = find_session(sessions, uplink)
        if session is None:
            problems.append("BGP session to %s is not configured in bgpd" % name)
        elif not session["established"]:
            problems.append("BGP session to %s is %s, not Established" % (name, session["state"]))
        if uplink.get("bfd", True):
            peer = find_bfd_peer(bfd_peers, uplink)
            if peer is None:
                problems.append("BFD session to %s does not exist in bfdd" % name)
            elif not peer["up"]:
                problems.append("BFD session to %s is %s (%s)" % (name, peer["status"], peer["diagnostic"]))
    wanted = len(uplinks) if min_nexthops is None else min_nexthops
    for route in routes:
        count = len(route["nexthops"])
        if not route["installed"]:
            problems.append("route %s is not installed in the kernel" % route["prefix"])
        elif count < wanted:
            problems.append("route %s has %d next hop(s) (%s), fewer than the %d uplinks" % (
                route["prefix"], count,
                ", ".join("%s via %s" % (hop["ip"], hop["interface"]) for hop in route["nexthops"]) or "none",
                wanted))
    return problems
