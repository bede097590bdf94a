# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the output of the perftest tools (ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat ...).

One function, ``parse_perftest(text)``, for the client or the server side of any perftest
version seen in the wild: the perftest 1.x layout (no MsgRate column), the 2.x-25.x layout
with its two-column parameter block, tables with warning lines inside them, and runs that
failed with the tool's own error message.

Bandwidth units, from perftest's own source (``format_factor`` in ``print_report_bw``, and
``/ 0x100000`` in the 1.x tools): a value printed as ``MB/sec`` is MiB per second, 2^20 bytes,
exactly like the ``MiB/sec`` label newer releases print for the same computation; ``Gb/sec``
(``--report_gbits``) is 10^9 bits per second (``format_factor`` 125000000 bytes). Every
bandwidth is returned in Gbit/s (10^9 bit/s), the unit of the port rates in ibstat and
in ``gpufabric_topology``, so a gate compares like with like.

Latency tools (``ib_write_lat``, ``ib_send_lat`` ...) print ``t_min``, ``t_max``,
``t_typical``, ``t_avg``, ``t_stdev`` and the 99 % and 99.9 % percentiles in usec (or
cycles with ``-C``), or ``t_avg`` and ``tps average`` in duration mode (``-D``). Those
columns are read from the header names perftest defines (``RESULT_FMT_LAT`` and
``RESULT_FMT_LAT_DUR`` in ``perftest_parameters.h``); no captured latency output is in the
fixture set yet, so that path is tested on outputs written from those definitions only.
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError, clean_lines

COMMAND = "perftest"

# Gbit/s per unit printed in a bandwidth column header. perftest divides bytes by 0x100000
# under its "MB/sec" label (newer releases print "MiB/sec" for the same number) and by
# 125000000 bytes, 10^9 bits, under "Gb/sec".
_MIB_PER_SEC_IN_GBPS = 2 ** 20 * 8 / 1e9
BANDWIDTH_UNITS = {
    "Gb/sec": 1.0,
    "MB/sec": _MIB_PER_SEC_IN_GBPS,
    "MiB/sec": _MIB_PER_SEC_IN_GBPS,
}

_TITLE = re.compile(r"^\s*(?P<test>\S.*?\b(?:BW|Latency|Lat)\b.*?)\s+Test\s*$")
_DASHES = re.compile(r"^\s*-{20,}\s*$")
_SERVER_BANNER = re.compile(r"Waiting for client", re.IGNORECASE)
# Column names: "#bytes", "BW peak[Gb/sec]", "99.9% percentile[usec]", "tps average", "CPU_Util[%]".
_COLUMN = re.compile(r"#\S+|tps average|[^\s#\[\]][^#\[\]]*?\[[^\]]*\]|\S+")
_PARAMETER = re.compile(r"(?P<key>[A-Za-z][\w .*/\-]*?)\s*:\s*(?P<value>\S+)")
# Address lines carry colons too; they describe QPs, not the run.
_NOT_PARAMETERS_LOWER = ("local address", "remote address", "gid:")
_CLOCK_WARNING = re.compile(r"Conflicting CPU frequency values|Correlation coefficient r\^2")
_COMMAND_LINE = re.compile(r"^(?:\S*[#$]\s*)?(?:ib_\w+|raw_ethernet_\w+)(?:\s|$)")
_ERROR_LINE = re.compile(
    r"^(?:couldn't|could not|unable to|cannot|can't|no ib devices|no rdma devices)"
    r"|\bfail(?:ed|ure)?\b|completion with error|\bnot found\b|\berror\b|segmentation fault|\baborted\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")
_NUMERIC = re.compile(r"^[-+]?\d[-+\d.eE]*$")

# Latency column name (before its "[unit]") -> row key stem.
_LATENCY_COLUMNS = {
    "t_min": "t_min",
    "t_max": "t_max",
    "t_typical": "t_typical",
    "t_avg": "t_avg",
    "t_stdev": "t_stdev",
    "99% percentile": "t_p99",
    "99.9% percentile": "t_p99_9",
}
_LATENCY_UNITS = {"usec": "us", "cycles": "cycles"}


def _split_unit(column):
    match = re.match(r"^(?P<name>.*?)\[(?P<unit>[^\]]*)\]$", column)
    if match:
        return match.group("name").strip(), match.group("unit").strip()
    return column, None


def _bandwidth_factor(column):
    unit = _split_unit(column)[1]
    if unit not in BANDWIDTH_UNITS:
        raise ParseError(
            COMMAND,
            "unknown bandwidth unit %r in column %r; expected one of %s"
            % (unit, column, ", ".join(sorted(BANDWIDTH_UNITS))),
        )
    return BANDWIDTH_UNITS[unit]


class _Table:
    """How to read the rows under one results header line."""

    def __init__(self, header):
        self.columns = _COLUMN.findall(header.strip())
        names = [_split_unit(column)[0] for column in self.columns]
        self.kind = None
        self.bandwidth_unit = None
        if "BW average" in names or "BW peak" in names:
            self.kind = "bw"
            for column in self.columns:
                if _split_unit(column)[0] in ("BW peak", "BW average"):
                    self.bandwidth_unit = _split_unit(column)[1]
                    _bandwidth_factor(column)
        elif any(name in _LATENCY_COLUMNS for name in names):
            self.kind = "lat"
        else:
            raise ParseError(COMMAND, "results header %r has neither bandwidth nor latency columns" % header.strip())
        for required in ("#bytes", "#iterations"):
            if required not in names:
                raise ParseError(COMMAND, "results header %r lacks the %s column" % (header.strip(), required))
        self.names = names

    def parse_row(self, line):
        """Return the row dict, or None when line is not a row of this table."""
        values = line.split()
        if len(values) < len(self.columns) or not all(_NUMBER.match(value) for value in values[: len(self.columns)]):
            return None
        # Values past the header's columns (a CPU_Util printed without its header) are skipped.
        row = {}
        for column, name, value in zip(self.columns, self.names, values):
            if name == "#bytes":
                row["bytes"] = int(float(value))
            elif name == "#iterations":
                row["iterations"] = int(float(value))
            elif name == "#sl":
                row["sl"] = int(float(value))
            elif self.kind == "bw" and name == "BW peak":
                row["bw_peak_gbps"] = _round(float(value) * _bandwidth_factor(column))
            elif self.kind == "bw" and name == "BW average":
                row["bw_avg_gbps"] = _round(float(value) * _bandwidth_factor(column))
            elif name == "MsgRate":
                row["msg_rate_mpps"] = float(value)
            elif name in _LATENCY_COLUMNS:
                unit = _LATENCY_UNITS.get(_split_unit(column)[1])
                if unit is None:
                    raise ParseError(COMMAND, "unknown latency unit in column %r; expected usec or cycles" % column)
                row["%s_%s" % (_LATENCY_COLUMNS[name], unit)] = float(value)
            elif name == "tps average":
                row["tps_avg"] = float(value)
        if self.kind == "bw":
            row.setdefault("bw_peak_gbps", None)
            row.setdefault("bw_avg_gbps", None)
            # perftest 1.x prints no message rate.
            row.setdefault("msg_rate_mpps", None)
        return row


def _round(value):
    # Keep the printed precision meaningful without float noise like 0.06299999999.
    return round(value, 6)


def _link_layer(value):
    # The vocabulary of gpufabric_topology (ibstat's "Link layer"): InfiniBand or Ethernet.
    if value is None:
        return None
    return {"IB": "InfiniBand", "INFINIBAND": "InfiniBand", "ETHERNET": "Ethernet"}.get(value.upper(), value)


def _int_or_none(value):
    match = re.match(r"^(\d+)", value or "")
    return int(match.group(1)) if match else None


def parse_perftest(text):
    """Parse one perftest run (client or server side) and return a dict.

    Keys:
      test: the title without " Test" ("RDMA_Write BW", "Send BW", "RDMA_Write Latency"),
        None when the output has no title (an error alone, a server still waiting).
      kind: "bw", "lat", or None when no results table was printed.
      side: "server" when the server's "Waiting for client to connect" banner is present,
        else "client" (clients never print it).
      device, link_layer ("InfiniBand"/"Ethernet"), connection_type, transport_type,
        num_qps, mtu, gid_index: from the parameter block, None where not printed.
      bidirectional: True when the title says Bidirectional (bandwidth is the sum of both
        directions then).
      parameters: every "Key : value" pair of the parameter block, as printed.
      bandwidth_unit: the unit the tool printed ("Gb/sec", "MB/sec", "MiB/sec") or None.
      rows: bandwidth rows {bytes, iterations, bw_peak_gbps, bw_avg_gbps, msg_rate_mpps}
        (Gbit/s; msg_rate_mpps None for perftest 1.x), or latency rows {bytes, iterations,
        t_min_us, t_max_us, t_typical_us, t_avg_us, t_stdev_us, t_p99_us, t_p99_9_us} with
        the columns the tool printed (``_cycles`` instead of ``_us`` with -C; ``tps_avg``
        in duration mode).
      bw_avg_gbps_max: the highest average bandwidth of the rows (Gbit/s), None without rows.
      t_typical_us_min: the lowest typical latency of the rows (usec), None without one.
      warnings: lines printed inside the results table that are not rows, and perftest's own warnings
        that it could not measure the CPU clock (its figures are then unreliable).
      clock_unmeasured: True when perftest said it could not measure the CPU clock and printed only zero
        bandwidth: it converts cycles to time with that clock, so the zeros are no measurement (a busy host or
        VM; measuring again may succeed).
      error: None, or the tool's own error lines joined with "; " when the run failed
        (rows printed before the failure are kept).
      errors: what the parser could not read: a results table without rows, a client output that
        ends before its table, a line of numbers that does not fit the header (named by number).

    Raises ParseError when text is not perftest output or a header has an unknown unit.
    """
    lines = clean_lines(text, COMMAND)
    result = {
        "test": None,
        "kind": None,
        "side": "client",
        "device": None,
        "link_layer": None,
        "connection_type": None,
        "transport_type": None,
        "num_qps": None,
        "mtu": None,
        "gid_index": None,
        "bidirectional": False,
        "parameters": {},
        "bandwidth_unit": None,
        "rows": [],
        "bw_avg_gbps_max": None,
        "t_typical_us_min": None,
        "warnings": [],
        "clock_unmeasured": False,
        "error": None,
        "errors": [],
    }
    errors = []
    unread = []
    table_seen = False
    table = None
    in_parameters = False
    recognized = False

    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if _DASHES.match(line):
            # A dashed line closes the parameter block and any results table.
            in_parameters = False
            table = None
            continue
        if _COMMAND_LINE.match(stripped):
            continue
        if _CLOCK_WARNING.search(stripped):
            # perftest times with the CPU cycle counter: when it cannot measure the clock (VMs, busy hosts) it
            # says so before the title, and its figures are not to be trusted (-F only makes it go on).
            result["warnings"].append(stripped)
            continue
        title = _TITLE.match(line)
        if title and not stripped.startswith("#") and result["test"] is None:
            result["test"] = title.group("test")
            result["bidirectional"] = "Bidirectional" in result["test"]
            in_parameters = True
            recognized = True
            continue
        if stripped.startswith("#bytes"):
            table = _Table(stripped)
            table_seen = True
            result["kind"] = table.kind
            result["bandwidth_unit"] = table.bandwidth_unit or result["bandwidth_unit"]
            in_parameters = False
            recognized = True
            continue
        if _SERVER_BANNER.search(line):
            result["side"] = "server"
            recognized = True
            continue
        if set(stripped) <= set("*"):
            continue  # the banner's frame
        if table is not None:
            # After an error perftest prints no more results, only diagnostics such as the
            # hex dump of a failed completion, whose numbers must not pass for a row.
            row = None if errors else table.parse_row(stripped)
            if row is not None:
                result["rows"].append(row)
                continue
            if _ERROR_LINE.search(stripped):
                errors.append(stripped)
            elif not errors and all(_NUMERIC.match(value) for value in stripped.split()):
                # Numbers only, but not as many as the header has columns or two run together: a row
                # with a lost cell, whose values cannot be placed.
                unread.append("line %d (%s): a results row that does not fit the header's %d columns is not read"
                              % (number, stripped[:120], len(table.columns)))
            else:
                result["warnings"].append(stripped)
            continue
        if in_parameters and ":" in stripped and not stripped.lower().startswith(_NOT_PARAMETERS_LOWER):
            for match in _PARAMETER.finditer(stripped):
                result["parameters"].setdefault(match.group("key").strip(), match.group("value"))
            continue
        if _ERROR_LINE.search(stripped):
            errors.append(stripped)
            recognized = True

    if not recognized:
        raise ParseError(COMMAND, "no perftest title, results table, server banner or error message found")

    parameters = result["parameters"]
    result["device"] = parameters.get("Device")
    result["link_layer"] = _link_layer(parameters.get("Link type"))
    result["connection_type"] = parameters.get("Connection type")
    result["transport_type"] = parameters.get("Transport type")
    result["num_qps"] = _int_or_none(parameters.get("Number of qps"))
    result["mtu"] = _int_or_none(parameters.get("Mtu"))
    result["gid_index"] = _int_or_none(parameters.get("GID index"))
    averages = [row["bw_avg_gbps"] for row in result["rows"] if row.get("bw_avg_gbps") is not None]
    result["bw_avg_gbps_max"] = max(averages) if averages else None
    # perftest timed the run with a clock it could not measure (its r^2 check failed): with -F it goes on and
    # divides by a clock rate of 0, printing zeros (without -F it prints "Can't produce a report").
    result["clock_unmeasured"] = bool(
        result["kind"] == "bw" and result["rows"] and any(_CLOCK_WARNING.search(w) for w in result["warnings"])
        and not any(row.get("bw_avg_gbps") or row.get("bw_peak_gbps") for row in result["rows"]))
    typicals = [row["t_typical_us"] for row in result["rows"] if row.get("t_typical_us") is not None]
    result["t_typical_us_min"] = min(typicals) if typicals else None
    result["error"] = "; ".join(errors) if errors else None
    if not errors:
        if table_seen and not result["rows"]:
            unread.append("the results table has no row")
        elif not table_seen and result["side"] == "server":
            unread.append("the server side printed no results (it was still waiting for a client)")
        elif result["test"] is not None and not table_seen:
            unread.append("the output ends before the results table (no '#bytes' header)")
    result["errors"] = unread
    return result
