# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse `ibstat` (infiniband-diags), and name RDMA port states the same way for every source.

ibstat, ibv_devinfo and sysfs spell port states differently (Active, PORT_ACTIVE (4), 4: ACTIVE);
normalize_port_state and normalize_physical_state give one spelling, used by all three parsers.
"""

from __future__ import annotations

import functools
import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import (
    FieldsOnce,
    ParseError,
    clean_lines,
    describe_line,
    int_or_none,
)

COMMAND = "ibstat"

# IB logical port states by their numeric code (IBTA spec, also the sysfs and verbs codes).
PORT_STATES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
_PORT_STATE_ALIASES = {"INITIALIZING": "INIT", "INITIALIZE": "INIT"}

# IB physical port states by numeric code, spelled as ibstat and sysfs spell them.
PHYSICAL_STATES = {
    0: "NoStateChange",
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "PhyTest",
}
_PHYSICAL_BY_KEY = {name.lower(): name for name in PHYSICAL_STATES.values()}

_CODE_PREFIX = re.compile(r"^\s*(\d+)\s*:\s*(.*)$")     # sysfs: "4: ACTIVE"
_CODE_SUFFIX = re.compile(r"^(.*?)\s*\((\d+)\)\s*$")     # verbs: "PORT_ACTIVE (4)"
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:b(?:it)?(?:/s(?:ec)?|ps)?)?\b", re.IGNORECASE)
_RATE_FACTOR_TO_GBPS = {"": 1.0, "G": 1.0, "M": 0.001, "K": 0.000001, "T": 1000.0}
_CA = re.compile(r"^CA '([^']+)'\s*$")
_PORT = re.compile(r"^\s+Port (\d+):\s*$")
_KEY_VALUE = re.compile(r"^\s+([^:]+?):\s*(.*)$")
# A LID, an LMC, a count: whole unsigned numbers.
_unsigned = functools.partial(int_or_none, signed=False)


def _split_code(value):
    """Return (name, numeric code or None) from '4: ACTIVE', 'PORT_ACTIVE (4)' or 'Active'."""
    value = (value or "").strip()
    match = _CODE_PREFIX.match(value)
    if match:
        return match.group(2).strip(), int(match.group(1))
    match = _CODE_SUFFIX.match(value)
    if match:
        return match.group(1).strip(), int(match.group(2))
    return value, None


def normalize_port_state(value):
    """One spelling for a logical port state: ACTIVE, DOWN, INIT, ARMED, ACTIVE_DEFER; None when empty."""
    name, code = _split_code(value)
    if code is not None and code in PORT_STATES:
        return PORT_STATES[code]
    name = name.upper().replace(" ", "_")
    if name.startswith("PORT_"):
        name = name[len("PORT_"):]
    name = _PORT_STATE_ALIASES.get(name, name)
    return name or None


def normalize_physical_state(value):
    """One spelling for a physical port state: LinkUp, Disabled, Polling, Sleep ...; None when empty."""
    name, code = _split_code(value)
    if code is not None and code in PHYSICAL_STATES:
        return PHYSICAL_STATES[code]
    key = name.replace("_", "").replace(" ", "").lower()
    return _PHYSICAL_BY_KEY.get(key, name or None)


def parse_rate_gbps(value):
    """'400' (ibstat, Gb/s), '400 Gb/sec (4X NDR)' (sysfs), '100 Gbps' -> float Gb/s; None if unreadable."""
    match = _RATE.match(value or "")
    if not match:
        return None
    return float(match.group(1)) * _RATE_FACTOR_TO_GBPS[match.group(2).upper()]


_CA_FIELDS = {
    "ca type": "ca_type",
    "number of ports": "number_of_ports",
    "firmware version": "firmware_version",
    "hardware version": "hardware_version",
    "node guid": "node_guid",
    "system image guid": "system_image_guid",
}

_PORT_FIELDS = {
    "state": ("state", normalize_port_state),
    "physical state": ("physical_state", normalize_physical_state),
    "rate": ("rate_gbps", parse_rate_gbps),
    "base lid": ("base_lid", _unsigned),
    "lmc": ("lmc", _unsigned),
    "sm lid": ("sm_lid", _unsigned),
    "capability mask": ("capability_mask", str),
    "port guid": ("port_guid", str),
    "link layer": ("link_layer", str),
}


def _new_port(number):
    port = {"port": number}
    for name, unused_convert in _PORT_FIELDS.values():
        port[name] = None
    return port


def parse_ibstat(text):
    """Parse `ibstat` output.

    Returns {"cas": [{name, ca_type, number_of_ports, firmware_version, ..., ports: [{port, state,
    physical_state, rate_gbps, link_layer, base_lid, sm_lid, port_guid, ...}]}], "errors": [lines]}.
    Lines the tools print on failure (ibwarn, ibpanic, iberror, driver messages) land in errors, so a
    partial output still gives the CAs it lists; so does a CA that lists no port. Raises ParseError when there is neither a CA nor an
    error line.
    """
    lines = clean_lines(text, COMMAND)
    cas = []
    errors = []
    ca = None
    port = None
    fields = FieldsOnce(COMMAND, "a \"CA '<name>'\" or 'Port <n>:' line")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        match = _CA.match(line)
        if match:
            ca = {"name": match.group(1), "ports": []}
            ca.update({name: None for name in _CA_FIELDS.values()})
            cas.append(ca)
            port = None
            continue
        if not line[0].isspace() or ca is None:
            # Unindented text that is not a CA header is a message of the tool or a library.
            errors.append(line.strip())
            continue
        match = _PORT.match(line)
        if match:
            port = _new_port(int(match.group(1)))
            if any(known["port"] == port["port"] for known in ca["ports"]):
                raise ParseError(COMMAND, "%s: CA '%s' lists port %d twice; a \"CA '<name>'\" line is missing "
                                 "before it" % (describe_line(number, line), ca["name"], port["port"]))
            ca["ports"].append(port)
            continue
        match = _KEY_VALUE.match(line)
        if not match:
            continue
        key, value = match.group(1).strip().lower(), match.group(2).strip()
        if port is None and key in _PORT_FIELDS:
            raise ParseError(COMMAND, "%s: %r outside any port block of CA '%s'; a 'Port <n>:' line is missing "
                             "before it" % (describe_line(number, line), match.group(1).strip(), ca["name"]))
        if port is not None and key in _PORT_FIELDS:
            name, convert = _PORT_FIELDS[key]
            fields.set(port, name, convert(value), number, line)
        elif key in _CA_FIELDS:
            fields.set(ca, _CA_FIELDS[key], _unsigned(value) if key == "number of ports" else value, number, line)
    for ca in cas:
        if not ca["ports"]:
            errors.append("CA '%s' lists no port (no 'Port <n>:' block): the output is cut or the device is gone"
                          % ca["name"])
    if not cas and not errors:
        raise ParseError(COMMAND, "no \"CA '<name>'\" block found")
    if not cas and not any(_looks_like_tool_message(line) for line in errors):
        raise ParseError(COMMAND, "no \"CA '<name>'\" block found; the output starts with %r" % errors[0][:120])
    return {"cas": cas, "errors": errors}


def _looks_like_tool_message(line):
    lowered = line.lower()
    return any(word in lowered for word in ("ibwarn", "ibpanic", "iberror", "error", "failed", "can't", "cannot",
                                            "no such", "not found", "unable"))
