# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checking a running bond (parsed from /proc/net/bonding) against its normalised definition."""

from __future__ import annotations


def runtime_problems(parsed, expected):
    """Compare a bond parsed by bonding.parse_bonding with its normalised definition.

    Returns sentences naming the bond: the parser's own health findings (members down, several aggregators,
    no LACP partner, churn) plus every configured setting that the kernel does not show.
    """
    name = expected["name"]
    problems = ["%s: %s" % (name, problem) for problem in parsed.get("problems", [])]
    if parsed.get("mode") != expected["mode"]:
        problems.append("%s: the kernel runs mode %s, configured %s (a changed bond mode often needs the bond to be "
                        "recreated)" % (name, parsed.get("mode"), expected["mode"]))
    slaves = parsed.get("slaves", [])
    names = {slave["name"] for slave in slaves}
    macs = {(slave.get("permanent_hw_addr") or "").lower() for slave in slaves}
    for member in expected["members"]:
        if member["name"] and member["name"] not in names:
            problems.append("%s: member %s is not enslaved" % (name, member["name"]))
        if member["mac"] and member["mac"] not in macs:
            problems.append("%s: no enslaved interface has the permanent MAC address %s" % (name, member["mac"]))
    if len(slaves) > len(expected["members"]):
        problems.append("%s: %d interfaces are enslaved, %d configured (%s)" % (
            name, len(slaves), len(expected["members"]), ", ".join(sorted(names))))
    checks = [("xmit_hash_policy", "transmit hash policy"), ("miimon", "MII polling interval")]
    if expected["mode"] == "802.3ad":
        checks += [("lacp_rate", "LACP rate"), ("ad_select", "aggregator selection"), ("min_links", "min links")]
    for key, label in checks:
        running = parsed.get("mii_polling_ms") if key == "miimon" else parsed.get(key)
        if expected.get(key) is not None and running is not None and str(running) != str(expected[key]):
            problems.append("%s: %s is %s in the kernel, configured %s" % (name, label, running, expected[key]))
    if expected["mode"] == "802.3ad":
        aggregator = parsed.get("active_aggregator") or {}
        if not aggregator or aggregator.get("partner_mac") is None:
            problems.append("%s: no active aggregator and no LACP partner: is the switch side an LACP port-channel?"
                            % name)
        elif aggregator.get("number_of_ports") is not None and aggregator["number_of_ports"] != len(slaves):
            problems.append("%s: the active aggregator holds %d of %d members" % (
                name, aggregator["number_of_ports"], len(slaves)))
    return problems
