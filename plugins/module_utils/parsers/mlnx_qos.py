# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse `mlnx_qos -i IF` (MLNX_OFED and mlnx-tools): the QoS state of one mlx5 netdev.

The output seen (tests/fixtures/mlnx_qos: DCBX OS or firmware controlled, trust dscp and pcp) is a list of
"Name: value" lines and indented tables:

    DCBX mode: OS controlled
    Priority trust state: dscp
    dscp2prio mapping:
            prio:0 dscp:07,06,05,04,03,02,01,00,
            ...                           (eight DSCP values a line: a priority may take several lines;
                                           the table is printed only under trust dscp)
    Receive buffer size (bytes): 130944,130944,0,0,0,0,0,0,max_buffer_size=262016
    Cable len: 7
    PFC configuration:
            priority    0   1   2   3   4   5   6   7
            enabled     0   0   0   1   0   0   0   0
            buffer      0   0   0   1   0   0   0   0
    tc: 0 ratelimit: unlimited, tsa: ets, bw: 50%
             priority:  0
            ...

Read here: the trust state, the DCBX mode, PFC enabled per priority and the dscp2prio map; what the health
sampler compares with what the rdma role configured. Older mlnx_qos releases print "default priority:" and
put no DCBX line; lines not read here are skipped, so they do not matter. The trust state and the PFC table are
required: without them the text is not an answer about QoS and ParseError says so.
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError, clean_lines, describe_line

COMMAND = "mlnx_qos -i"
TRUST_STATES = ("dscp", "pcp")
PRIORITIES = tuple(range(8))

_DSCP_LINE = re.compile(r"^prio:(\d+)\s+dscp:([\d,\s]*)$")


def _pfc_row(number, line, name):
    words = line.split()
    if not words or words[0] != name:
        raise ParseError(COMMAND, "%s: expected the PFC %r row" % (describe_line(number, line), name))
    values = words[1:]
    if len(values) != len(PRIORITIES) or not all(value.isdigit() for value in values):
        raise ParseError(COMMAND, "%s: expected 8 numbers, one per priority" % describe_line(number, line))
    return [int(value) for value in values]


def _dscp_entry(number, line):
    match = _DSCP_LINE.match(line.strip())
    if not match:
        return None
    priority = int(match.group(1))
    dscps = [item.strip() for item in match.group(2).split(",") if item.strip()]
    if priority not in PRIORITIES or not all(item.isdigit() and int(item) < 64 for item in dscps):
        raise ParseError(COMMAND, "%s: not a priority 0-7 with DSCP values 0-63" % describe_line(number, line))
    return priority, [int(item) for item in dscps]


def parse_mlnx_qos(text):
    """{trust, dcbx_mode, pfc_enabled: {priority: bool}, dscp2prio: {dscp: priority} or None}.

    dcbx_mode is None when the release prints no DCBX line; dscp2prio is None when no table is printed
    (trust pcp). Raises ParseError on text that is not this output or whose PFC table is damaged.
    """
    lines = clean_lines(text, COMMAND)
    found = {"trust": None, "dcbx_mode": None, "pfc_enabled": None, "dscp2prio": None}
    number = 0
    while number < len(lines):
        line = lines[number]
        stripped = line.strip()
        if stripped.startswith("Priority trust state:"):
            trust = stripped.split(":", 1)[1].strip()
            if trust not in TRUST_STATES:
                raise ParseError(COMMAND, "%s: trust state %r is not one of %s"
                                 % (describe_line(number + 1, line), trust, ", ".join(TRUST_STATES)))
            found["trust"] = trust
        elif stripped.startswith("DCBX mode:"):
            found["dcbx_mode"] = stripped.split(":", 1)[1].strip() or None
        elif stripped == "dscp2prio mapping:":
            mapping = {}
            while number + 1 < len(lines):
                entry = _dscp_entry(number + 2, lines[number + 1])
                if entry is None:
                    break
                number += 1
                for dscp in entry[1]:
                    if dscp in mapping and mapping[dscp] != entry[0]:
                        raise ParseError(COMMAND, "%s: DSCP %d already maps to priority %d"
                                         % (describe_line(number + 1, lines[number]), dscp, mapping[dscp]))
                    mapping[dscp] = entry[0]
            found["dscp2prio"] = mapping
        elif stripped == "PFC configuration:":
            if number + 2 >= len(lines):
                raise ParseError(COMMAND, "the PFC table ends after its title (truncated output)")
            header = _pfc_row(number + 2, lines[number + 1], "priority")
            if header != list(PRIORITIES):
                raise ParseError(COMMAND, "%s: priorities are not 0 to 7" % describe_line(number + 2, lines[number + 1]))
            enabled = _pfc_row(number + 3, lines[number + 2], "enabled")
            if any(value not in (0, 1) for value in enabled):
                raise ParseError(COMMAND, "%s: PFC enabled is not 0 or 1" % describe_line(number + 3, lines[number + 2]))
            found["pfc_enabled"] = {priority: bool(value) for priority, value in zip(PRIORITIES, enabled)}
            number += 2
        number += 1
    if found["trust"] is None:
        raise ParseError(COMMAND, "no 'Priority trust state:' line (not mlnx_qos output, or a NIC without QoS)")
    if found["pfc_enabled"] is None:
        raise ParseError(COMMAND, "no 'PFC configuration:' table")
    return found
