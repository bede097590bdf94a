# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse /proc/net/bonding/<bond> and judge the health of a Linux bond, LACP (802.3ad) above all."""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import FieldsOnce, ParseError, clean_lines, int_or_none

COMMAND = "/proc/net/bonding/<bond>"

# The kernel prints a description of the mode; users and netplan know the mode by its short name.
MODE_NAMES = {
    "load balancing (round-robin)": "balance-rr",
    "fault-tolerance (active-backup)": "active-backup",
    "load balancing (xor)": "balance-xor",
    "fault-tolerance (broadcast)": "broadcast",
    "ieee 802.3ad dynamic link aggregation": "802.3ad",
    "transmit load balancing": "balance-tlb",
    "adaptive load balancing": "balance-alb",
}

ZERO_MAC = "00:00:00:00:00:00"

# LACP port state bits (IEEE 802.1AX): a port carries traffic only with all three set.
_LACP_SYNCHRONIZATION = 0x08
_LACP_COLLECTING = 0x10
_LACP_DISTRIBUTING = 0x20

_KEY_VALUE = re.compile(r"^\s*([^:]+?)\s*:\s*(.*?)\s*$")
_SPEED = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:bps|b/s)$", re.IGNORECASE)
_SPEED_FACTOR_TO_MBPS = {"K": 0.001, "": 1, "M": 1, "G": 1000, "T": 1000000}


def _speed_mbps(value):
    """'100000 Mbps' -> 100000; 'Unknown' (link down) -> None; other units are converted."""
    match = _SPEED.match(value.replace(" ", "")) if value else None
    if not match:
        return None
    number, prefix = match.groups()
    # A bare "bps" suffix never occurs in the kernel's output: its unit is Mbps.
    mbps = float(number) * _SPEED_FACTOR_TO_MBPS[prefix.upper() or "M"]
    return int(mbps) if mbps == int(mbps) else mbps


# The kernel (bond_procfs.c) appends " (fail_over_mac <policy>)" to an active-backup mode whose
# fail_over_mac is not "none"; later kernels may append more "(<option> <value>)" groups.
_MODE_SUFFIX = re.compile(r"\s*\(([^()]*)\)")
_MODE_OPTION = re.compile(r"([a-z_]+)\s+(\S+)")


def _split_mode(value):
    """'fault-tolerance (active-backup) (fail_over_mac active)' -> (short name, description, [suffixes]).

    The descriptions hold parentheses of their own, so the known ones are matched first; what follows
    must be "(...)" groups. An unknown description is returned whole as the name, suffixes unread.
    """
    lowered = value.lower()
    for description in sorted(MODE_NAMES, key=len, reverse=True):
        if not lowered.startswith(description):
            continue
        rest = value[len(description):]
        suffixes = []
        while rest.strip():
            match = _MODE_SUFFIX.match(rest)
            if not match:
                break
            suffixes.append(match.group(1).strip())
            rest = rest[match.end():]
        if not rest.strip():
            return MODE_NAMES[description], value[:len(description)], suffixes
    return value, value, []


def _mode_options(suffixes):
    """["fail_over_mac active"] -> {"fail_over_mac": "active"}; suffixes of another shape are skipped."""
    options = {}
    for suffix in suffixes:
        match = _MODE_OPTION.fullmatch(suffix)
        if match:
            options[match.group(1)] = match.group(2)
    return options


def _hash_policy(value):
    # "layer3+4 (1)" -> "layer3+4"
    return value.split(" (")[0].strip() if value else None


def _new_slave(name):
    return {
        "name": name,
        "mii_status": None,
        "speed_mbps": None,
        "duplex": None,
        "link_failure_count": None,
        "permanent_hw_addr": None,
        "aggregator_id": None,
        "actor_churn_state": None,
        "partner_churn_state": None,
        "actor_churned_count": None,
        "partner_churned_count": None,
        "actor_port_state": None,
        "partner_port_state": None,
        "partner_mac": None,
    }


_SLAVE_FIELDS = {
    "mii status": ("mii_status", str),
    "speed": ("speed_mbps", _speed_mbps),
    "duplex": ("duplex", str),
    "link failure count": ("link_failure_count", int_or_none),
    "permanent hw addr": ("permanent_hw_addr", str.lower),
    "aggregator id": ("aggregator_id", int_or_none),
    "actor churn state": ("actor_churn_state", str),
    "partner churn state": ("partner_churn_state", str),
    "actor churned count": ("actor_churned_count", int_or_none),
    "partner churned count": ("partner_churned_count", int_or_none),
}

_BOND_FIELDS = {
    "bonding mode": ("mode_line", str),
    "transmit hash policy": ("xmit_hash_policy", _hash_policy),
    "mii status": ("mii_status", str),
    "mii polling interval (ms)": ("mii_polling_ms", int_or_none),
    "up delay (ms)": ("up_delay_ms", int_or_none),
    "down delay (ms)": ("down_delay_ms", int_or_none),
    "lacp rate": ("lacp_rate", str),
    "min links": ("min_links", int_or_none),
    "aggregator selection policy (ad_select)": ("ad_select", str),
    "system mac address": ("system_mac", str.lower),
    "currently active slave": ("active_slave", str),
    "primary slave": ("primary_slave", str),
}

_AGGREGATOR_FIELDS = {
    "aggregator id": ("aggregator_id", int_or_none),
    "number of ports": ("number_of_ports", int_or_none),
    "actor key": ("actor_key", int_or_none),
    "partner key": ("partner_key", int_or_none),
    "partner mac address": ("partner_mac", str.lower),
}


def parse_bonding(text):
    """Parse the text of /proc/net/bonding/<bond>.

    Returns a dict with the bond's mode (short name such as 802.3ad), mode_description (the kernel's
    name of it), mode_suffixes (what the kernel appended, "fail_over_mac active"), fail_over_mac
    (active-backup only: none, active or follow), LACP settings, the active aggregator, one dict per
    slave, the health verdict: healthy (bool) and problems (sentences), and errors: what could not be
    read (an unknown mode, no slave section). Raises ParseError when the text is not bonding driver output.
    """
    lines = clean_lines(text, COMMAND)
    bond = {
        "driver_version": None,
        "mode": None,
        "mode_description": None,
        "mode_suffixes": [],
        "fail_over_mac": None,
        "xmit_hash_policy": None,
        "mii_status": None,
        "mii_polling_ms": None,
        "up_delay_ms": None,
        "down_delay_ms": None,
        "lacp_rate": None,
        "min_links": None,
        "ad_select": None,
        "system_mac": None,
        "active_slave": None,
        "primary_slave": None,
        "active_aggregator": None,
        "slaves": [],
    }
    section = "bond"  # bond, aggregator, slave, actor_pdu, partner_pdu
    slave = None
    errors = []
    fields = FieldsOnce(COMMAND, "a 'Slave Interface:' line")
    number = 0

    def store(block, name, value):
        # A field twice in one block: the values of two slaves (or of the bond and a slave) would mix.
        fields.set(block, name, value, number, lines[number - 1])

    for number, line in enumerate(lines, start=1):
        if not line.strip():
            if section == "aggregator":
                section = "bond"
            continue
        stripped = line.strip()
        if stripped.startswith("Ethernet Channel Bonding Driver:"):
            bond["driver_version"] = stripped.split(":", 1)[1].strip()
            continue
        lowered = stripped.lower()
        if lowered == "802.3ad info":
            section = "bond"
            continue
        if lowered == "active aggregator info:":
            bond["active_aggregator"] = {field[0]: None for field in _AGGREGATOR_FIELDS.values()}
            section = "aggregator"
            continue
        if lowered.startswith("details actor lacp pdu"):
            section = "actor_pdu"
            continue
        if lowered.startswith("details partner lacp pdu"):
            section = "partner_pdu"
            continue
        match = _KEY_VALUE.match(stripped)
        if not match:
            continue  # free text such as "(none)" lines of other modes: nothing to read
        key, value = match.group(1).lower(), match.group(2)
        if key == "slave interface":
            slave = _new_slave(value)
            bond["slaves"].append(slave)
            section = "slave"
            continue
        if section == "aggregator" and key in _AGGREGATOR_FIELDS:
            name, convert = _AGGREGATOR_FIELDS[key]
            store(bond["active_aggregator"], name, convert(value))
        elif section in ("actor_pdu", "partner_pdu") and slave is not None:
            prefix = "actor" if section == "actor_pdu" else "partner"
            if key == "port state":
                store(slave, prefix + "_port_state", int_or_none(value))
            elif key == "system mac address" and prefix == "partner":
                store(slave, "partner_mac", value.lower())
            elif key in _SLAVE_FIELDS:
                # A slave field after the PDU blocks: the kernel never does this, but stay exact.
                section = "slave"
                name, convert = _SLAVE_FIELDS[key]
                store(slave, name, convert(value))
        elif section == "slave" and key in _SLAVE_FIELDS:
            name, convert = _SLAVE_FIELDS[key]
            store(slave, name, convert(value))
        elif section in ("bond", "aggregator") and key in _BOND_FIELDS:
            section = "bond"
            name, convert = _BOND_FIELDS[key]
            store(bond, name, convert(value))
    mode_line = bond.pop("mode_line", None)
    if mode_line is None:
        raise ParseError(COMMAND, "no 'Bonding Mode:' line; this is not the content of /proc/net/bonding/<bond>")
    if not mode_line.strip():
        raise ParseError(COMMAND, "the 'Bonding Mode:' line names no mode")
    bond["mode"], bond["mode_description"], bond["mode_suffixes"] = _split_mode(mode_line)
    if bond["mode"] not in MODE_NAMES.values():
        errors.append("unknown bonding mode %r: the mode is returned as printed" % mode_line)
    if bond["mode"] == "active-backup":
        # Printed only when not "none" (bond_procfs.c).
        bond["fail_over_mac"] = _mode_options(bond["mode_suffixes"]).get("fail_over_mac", "none")
    if not bond["slaves"]:
        errors.append("no 'Slave Interface:' section: the bond lists no slave")
    bond["errors"] = errors
    bond["problems"] = bond_problems(bond)
    bond["healthy"] = not bond["problems"]
    return bond


def _port_state_flags(state):
    missing = []
    for bit, name in ((_LACP_SYNCHRONIZATION, "in sync"), (_LACP_COLLECTING, "collecting"),
                      (_LACP_DISTRIBUTING, "distributing")):
        if not state & bit:
            missing.append(name)
    return missing


def bond_problems(bond):
    """Return sentences describing what is wrong with a parsed bond; empty when it is healthy."""
    problems = []
    slaves = bond["slaves"]
    if not slaves:
        problems.append("the bond has no slave interfaces")
    if bond["mii_status"] and bond["mii_status"] != "up":
        problems.append("the bond's MII status is %s" % bond["mii_status"])
    for slave in slaves:
        if slave["mii_status"] and slave["mii_status"] != "up":
            problems.append("slave %s is down (MII status %s)" % (slave["name"], slave["mii_status"]))
    speeds = sorted({s["speed_mbps"] for s in slaves if s["speed_mbps"] is not None and s["mii_status"] == "up"})
    if len(speeds) > 1:
        problems.append("slaves run at different speeds (%s Mbps): LACP aggregates only ports of one speed"
                        % ", ".join(str(speed) for speed in speeds))
    if bond["mode"] != "802.3ad":
        return problems

    aggregator = bond["active_aggregator"] or {}
    partner = aggregator.get("partner_mac")
    if partner == ZERO_MAC:
        problems.append("the LACP partner MAC address is %s: no LACP partner answers; check that the switch "
                        "ports are in an LACP port-channel (mode active)" % ZERO_MAC)
    aggregators = {}
    for slave in slaves:
        if slave["aggregator_id"] is not None:
            aggregators.setdefault(slave["aggregator_id"], []).append(slave["name"])
    if len(aggregators) > 1:
        active_id = aggregator.get("aggregator_id")
        groups = "; ".join("%s in aggregator %d" % (", ".join(names), agg_id)
                           for agg_id, names in sorted(aggregators.items()))
        problems.append("slaves are in different aggregators (%s): only the active aggregator %s carries "
                        "traffic; the ports likely reach different port-channels, switches or speeds"
                        % (groups, active_id if active_id is not None else "(unknown)"))
    for slave in slaves:
        for side, whose in (("actor", "this host's"), ("partner", "the switch's")):
            if slave[side + "_churn_state"] == "churned":
                problems.append("slave %s is churned (%s churn state): %s side of the LACP negotiation never "
                                "reached synchronization; check that the switch port is in the bond's port-channel"
                                % (slave["name"], side, whose))
        if slave["partner_mac"] == ZERO_MAC and partner != ZERO_MAC:
            problems.append("slave %s has no LACP partner (partner MAC %s)" % (slave["name"], ZERO_MAC))
        state = slave["actor_port_state"]
        if state is not None and slave["mii_status"] == "up":
            missing = _port_state_flags(state)
            if missing:
                problems.append("slave %s is not %s (actor LACP port state %d): it carries no traffic"
                                % (slave["name"], " / ".join(missing), state))
    return problems
