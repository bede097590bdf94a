# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Path MTU per rail, proven with DF pings: a packet of the configured MTU must cross to the peer, one byte more
must not leave the host unfragmented; when the first fails, a bounded binary search finds the largest that crosses.

A switch port left at 1500 on a 9000 fabric drops jumbo frames without a word (no ICMP from an L2 hop): small pings
pass, large RDMA messages stall. IPv4 headers take 28 bytes of the MTU (20 IP, 8 ICMP), IPv6 48 (40 and 8).
"""

from __future__ import annotations

import re
import time

HEADERS = {"ipv4": 28, "ipv6": 48}
MTU_RANGE = (68, 9216)
# Probes of one target at most (the configured size, one byte more, then a search over 68..MTU-1: 14 steps at 9216).
MAX_PROBES = 18
# Seconds the one-byte-more probe waits: ping waits for a reply even after the host refused to send (EMSGSIZE), and a
# packet that does cross is answered well within this on a fabric.
OVER_WAIT_S = 0.2

PASS, LOST, TOO_BIG, FRAG_NEEDED, ERROR = "pass", "lost", "too_big", "frag_needed", "error"
_LOCAL_TOO_LONG = re.compile(r"local error: message too long, mtu[=:] ?(\d+)")
_FRAG_NEEDED = re.compile(r"From (\S+) .*(?:Frag needed and DF set \(mtu = (\d+)\)|Packet too big: mtu=(\d+))")
_RECEIVED = re.compile(r"(\d+) packets transmitted, (\d+) received")


def family_of(address):
    return "ipv6" if ":" in address else "ipv4"


def payload(mtu, family):
    """The ping -s size whose packet is mtu bytes."""
    return mtu - HEADERS[family]


def ping_argv(ping, address, size, interface=None, wait_s=1):
    argv = [ping, "-M", "do", "-s", str(size), "-c", "1", "-W", "%g" % wait_s, "-n", "-q"]
    if interface:
        argv += ["-I", interface]
    return argv + [address]


def parse_ping(rc, out, err=""):
    """(outcome, mtu or None) of one DF ping: pass (a reply), lost (no reply, no error: a silent drop),
    too_big (refused on this host, with the MTU of its route), frag_needed (a router's ICMP, with its MTU), error."""
    text = (out or "") + "\n" + (err or "")
    local = _LOCAL_TOO_LONG.search(text)
    if local:
        return TOO_BIG, int(local.group(1))
    router = _FRAG_NEEDED.search(text)
    if router:
        return FRAG_NEEDED, int(router.group(2) or router.group(3))
    received = _RECEIVED.search(text)
    if received:
        return (PASS, None) if int(received.group(2)) > 0 and rc == 0 else (LOST, None)
    return ERROR, None


def check_path(probe, mtu, family, max_probes=MAX_PROBES, budget_s=30.0, clock=time.monotonic):
    """Prove the path MTU with probe(size, over=False) -> (outcome, mtu) (over: the one-byte-more probe, which may
    wait less); returns a dict:
    status ok | mismatch | error, path_mtu (the largest packet that crossed), probes, seconds, detail."""
    started = clock()
    probes = []

    def run(size, over=False):
        outcome = probe(size, over=True) if over else probe(size)
        probes.append({"size": size, "outcome": outcome[0], "mtu": outcome[1]})
        return outcome

    def result(status, path_mtu, detail):
        return {"status": status, "configured_mtu": mtu, "family": family, "path_mtu": path_mtu,
                "probes": len(probes), "seconds": round(clock() - started, 3), "detail": detail,
                "probe_log": probes}

    full, _reported = run(payload(mtu, family))
    if full == ERROR:
        return result("error", None, "ping could not run: see probe_log")
    if full == PASS:
        over, over_mtu = run(payload(mtu, family) + 1, over=True)
        if over == PASS:
            return result("mismatch", None, "a DF packet of %d bytes crossed: the host's route allows more than "
                          "the configured MTU %d" % (mtu + 1, mtu))
        if over == TOO_BIG and over_mtu is not None and over_mtu != mtu:
            return result("mismatch", min(over_mtu, mtu), "the host's route MTU is %d, not %d" % (over_mtu, mtu))
        return result("ok", mtu, "")
    # Search the largest packet that crosses: lo crosses (68, the IPv4 minimum, is assumed), hi does not.
    lo, hi = MTU_RANGE[0] - 1, mtu
    if family == "ipv6":
        lo = 1279
    found = None
    while hi - lo > 1 and len(probes) < max_probes and clock() - started < budget_s:
        middle = (lo + hi) // 2
        outcome, _m = run(payload(middle, family))
        if outcome == PASS:
            lo, found = middle, middle
        else:
            hi = middle
    exact = hi - lo <= 1
    return result("mismatch", found if exact else None,
                  "" if exact else "search stopped after %d probes: the path MTU lies in %d-%d" % (len(probes), lo + 1, hi - 1))


def message(target, result):
    """One sentence naming the host pair, rail, interfaces, both ends' configured MTU and the path MTU found."""
    found = result.get("path_mtu")
    return ("%s -> %s rail %s (%s -> %s): path MTU %s, configured %s on %s (%s) and %s on %s (%s); a DF packet of "
            "%s bytes %s%s (%d probes, %.1f s)" % (
                target["client"], target["server"], target["rail"], target["interface"],
                target.get("peer_interface") or "?", found if found is not None else "unknown",
                target["mtu"], target["client"], target["interface"],
                target.get("peer_mtu") if target.get("peer_mtu") is not None else "?", target["server"],
                target.get("peer_interface") or "?", target["mtu"],
                "does not cross" if result["probe_log"] and result["probe_log"][0]["outcome"] != PASS else "crosses",
                "; " + result["detail"] if result.get("detail") else "", result["probes"], result["seconds"]))


def peer_mtu_problem(target):
    if target.get("peer_mtu") not in (None, target["mtu"]):
        return ("%s -> %s rail %s: configured MTU %s on %s (%s) but %s on %s (%s); both ends of a rail need the same"
                % (target["client"], target["server"], target["rail"], target["mtu"], target["client"],
                   target["interface"], target["peer_mtu"], target["server"], target.get("peer_interface") or "?"))
    return None


def apply_to_verdicts(verdicts, results):
    """Fail both hosts of each pair whose path MTU check did not pass, with its message (verdicts as
    gates.evaluate_bandwidth returns them); returns verdicts."""
    for result in results:
        if result.get("status") == "ok" and not result.get("problem"):
            continue
        text = result.get("message") or result.get("problem")
        for host in (result["client"], result["server"]):
            verdict = verdicts.setdefault(host, {"status": "pass", "rails": {}, "messages": []})
            verdict["status"] = "fail"
            if text not in verdict["messages"]:
                verdict["messages"].append(text)
    return verdicts


def _interface_facts(facts, name):
    return (facts or {}).get((name or "").replace("-", "_").replace(".", "_")) or {}


def _interface_with_address(facts, address):
    for name in (facts or {}).get("interfaces") or []:
        entry = _interface_facts(facts, name)
        if (entry.get("ipv4") or {}).get("address") == address:
            return entry
    return {}


def targets(client, server, client_facts, server_facts, server_address=None, perftest=False, rails=None):
    """The path MTU probes of one pair, seen from the client: (targets, skipped reasons).

    iperf3 (perftest false): rail "tcp", the default route's interface to the server's test address. perftest: each
    rail both hosts have (the rail's netdev on each side) to the server's IPv4 address on its rail netdev."""
    found, skipped = [], []
    if not perftest:
        default = (client_facts or {}).get("default_ipv4") or {}
        address = server_address or ((server_facts or {}).get("default_ipv4") or {}).get("address")
        peer = _interface_with_address(server_facts, address) if address else {}
        if not default.get("interface") or not address:
            return [], ["%s -> %s: no default interface or test address to probe" % (client, server)]
        found.append({"client": client, "server": server, "rail": "tcp", "interface": default["interface"],
                      "address": address, "mtu": int(default.get("mtu") or _interface_facts(
                          client_facts, default["interface"]).get("mtu") or 1500),
                      "peer_interface": peer.get("device"), "peer_mtu": peer.get("mtu")})
        return found, skipped
    mine = {r["rail"]: r for r in ((client_facts or {}).get("gpufabric_topology") or {}).get("rails") or []
            if r.get("netdev")}
    theirs = {r["rail"]: r for r in ((server_facts or {}).get("gpufabric_topology") or {}).get("rails") or []
              if r.get("netdev")}
    for rail in sorted(set(mine) & set(theirs)):
        if rails and rail not in rails:
            continue
        local, remote = mine[rail], theirs[rail]
        peer = _interface_facts(server_facts, remote["netdev"])
        address = (peer.get("ipv4") or {}).get("address")
        if not address:
            skipped.append("%s -> %s rail %s: %s on %s has no IPv4 address to probe" % (
                client, server, rail, remote["netdev"], server))
            continue
        found.append({"client": client, "server": server, "rail": str(rail), "interface": local["netdev"],
                      "address": address,
                      "mtu": int(local.get("mtu") or _interface_facts(client_facts, local["netdev"]).get("mtu") or 1500),
                      "peer_interface": remote["netdev"], "peer_mtu": remote.get("mtu") or peer.get("mtu")})
    return found, skipped
