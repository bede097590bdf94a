# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the output of the nccl-tests benchmarks (all_reduce_perf, all_gather_perf, sendrecv_perf ...).

The results table is read through its own header line, so both layouts in use parse the
same way: the old one (``size count type redop time algbw busbw error ...``, where
``error`` is the largest numerical error, e.g. ``7e-07``) and the current one (a ``root``
column and ``#wrong`` counts, ``N/A`` when a check did not run). NCCL_DEBUG lines that
interleave with the rows, CRLF endings and unknown extra columns are skipped.

Bandwidths stay in GB/s (10^9 bytes per second) as nccl-tests prints them: ``algbw`` is
size / time, ``busbw`` is algbw times the collective's correction factor (2(n-1)/n for
all_reduce), the figure to compare with the hardware's bus bandwidth.
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError, clean_lines

COMMAND = "nccl-tests"

_HEADER_START = re.compile(r"^#\s+size\s+count\b")
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(?P<value>\S+)")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(?P<count>\d+)\s+(?P<verdict>\S+)")
_PARAMETERS = re.compile(r"^#\s*nThread\s")
_PARAMETER_VALUES = {
    "n_threads": re.compile(r"\bnThread\s+(\d+)"),
    "n_gpus": re.compile(r"\bnGpus\s+(\d+)"),
    "min_bytes": re.compile(r"\bminBytes\s+(\d+)"),
    "max_bytes": re.compile(r"\bmaxBytes\s+(\d+)"),
    "warmup_iters": re.compile(r"\bwarmup iters:\s*(\d+)"),
    "iters": re.compile(r"(?<!warmup )(?<!agg )\biters:\s*(\d+)"),
}
# nccl-tests before the Group field (added with ncclGroup support in 2.x) printed no "Group <n>".
_RANK = re.compile(
    r"^#\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+(?P<group>\d+)\s+)?Pid\s+(?P<pid>\d+)\s+on\s+(?P<host>\S+)\s+"
    r"device\s+(?P<device>\d+)\s+\[(?P<bus_id>[^\]]*)\]\s*(?P<model>.*)$"
)
_TEST_NAME = re.compile(r"^#\s*Collective test starting:\s*(?P<name>\S+)")
# The messages of nccl-tests' CUDACHECK/NCCLCHECK/TESTCHECK macros and its timeout.
_FAILURE = re.compile(r"\bTest (?:CUDA |NCCL )?failure\b|\bTest timeout\b", re.IGNORECASE)

_GROUP_COLUMNS = {"time": "time_us", "algbw": "algbw", "busbw": "busbw", "#wrong": "wrong", "wrong": "wrong", "error": "max_error"}
_REQUIRED = ("size", "count", "type", "time", "algbw", "busbw")


class _Table:
    """Column positions of one results header line."""

    def __init__(self, header):
        self.columns = header.lstrip("#").split()
        missing = [name for name in _REQUIRED if name not in self.columns]
        if missing:
            raise ParseError(COMMAND, "results header %r lacks the column(s) %s" % (header.strip(), ", ".join(missing)))
        # Groups start at each "time": the first is out-of-place, the second in-place.
        self.groups = [index for index, name in enumerate(self.columns) if name == "time"]

    def looks_like_row(self, line):
        """A line starting with a size and holding half the columns or more, such as a row with a cell lost or
        two cells run together; NCCL_DEBUG lines between rows start with the host name."""
        values = line.split()
        return bool(values) and values[0].isdigit() and len(values) >= len(self.columns) // 2

    def parse_row(self, line):
        values = line.split()
        if len(values) < len(self.columns) or not values[0].isdigit():
            return None
        try:
            row = {
                "size_bytes": int(values[self.columns.index("size")]),
                "count": int(values[self.columns.index("count")]),
                "type": values[self.columns.index("type")],
                "redop": values[self.columns.index("redop")] if "redop" in self.columns else None,
                "root": int(values[self.columns.index("root")]) if "root" in self.columns else None,
            }
            sides = []
            for group_number, start in enumerate(self.groups):
                end = self.groups[group_number + 1] if group_number + 1 < len(self.groups) else len(self.columns)
                side = {"time_us": None, "algbw": None, "busbw": None, "wrong": None, "max_error": None}
                for index in range(start, end):
                    key = _GROUP_COLUMNS.get(self.columns[index])
                    if key is not None:
                        side[key] = _value(values[index], key)
                sides.append(side)
        except ValueError:
            return None  # a line that only looks like a row (numbers where words belong)
        row["out_of_place"] = sides[0]
        row["in_place"] = sides[1] if len(sides) > 1 else None
        return row


def _value(text, key):
    if text == "N/A":
        return None
    if key == "wrong":
        return int(text)
    return float(text)


def parse_nccl_tests(text):
    """Parse the output of one nccl-tests run and return a dict.

    Keys:
      test: the benchmark name when printed ("# Collective test starting: gather_perf"), else None.
      parameters: {n_threads, n_gpus, min_bytes, max_bytes, warmup_iters, iters} from the
        "# nThread" line, None where absent.
      ranks: [{rank, group, pid, host, device, bus_id, model}] from "# Using devices"; group is None
        in the layout of nccl-tests before the Group field.
      rows: [{size_bytes, count, type, redop, root, out_of_place: {time_us, algbw, busbw,
        wrong, max_error}, in_place: {...}}]; algbw and busbw in GB/s as printed; ``wrong``
        is the #wrong count (None for N/A or the old layout), ``max_error`` the old layout's
        error column (None in the current one); redop/root None when the layout has no
        such column; in_place None when the table has a single group.
      avg_bus_bandwidth: "# Avg bus bandwidth" in GB/s, None when not printed.
      busbw_max: the highest busbw of any row, GB/s, None without rows.
      wrong: out-of-bounds values in total, from "# Out of bounds values" or else the sum
        of the #wrong columns; None when neither was printed, and when the run checked no result
        (``-c 0``: every #wrong cell N/A, and the "0 OK" summary counts over nothing).
      error: None, or why the run failed: the test's failure lines (CUDA/NCCL failures),
        out-of-bounds values reported as FAILED or counted in #wrong, a run that printed no
        results, or one that stopped before its "# Avg bus bandwidth" summary.
      errors: what the parser could not read: a results table with no row, results without any
        rank line, a line that looks like a results row but does not fit the header (named by number).

    Raises ParseError when text is not nccl-tests output.
    """
    lines = clean_lines(text, COMMAND)
    result = {
        "test": None,
        "parameters": dict((key, None) for key in _PARAMETER_VALUES),
        "ranks": [],
        "rows": [],
        "avg_bus_bandwidth": None,
        "busbw_max": None,
        "wrong": None,
        "error": None,
        "errors": [],
    }
    failures = []
    table = None
    recognized = False
    out_of_bounds = None

    errors = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if _HEADER_START.match(stripped):
            table = _Table(stripped)
            recognized = True
            continue
        match = _AVG_BUSBW.match(stripped)
        if match:
            try:
                result["avg_bus_bandwidth"] = float(match.group("value"))
            except ValueError:
                raise ParseError(COMMAND, "the average bus bandwidth %r is not a number" % match.group("value"))
            recognized = True
            continue
        match = _OUT_OF_BOUNDS.match(stripped)
        if match:
            out_of_bounds = int(match.group("count"))
            if match.group("verdict") != "OK":
                failures.append("Out of bounds values: %s %s" % (match.group("count"), match.group("verdict")))
            recognized = True
            continue
        if _PARAMETERS.match(stripped):
            for key, pattern in _PARAMETER_VALUES.items():
                found = pattern.search(stripped)
                result["parameters"][key] = int(found.group(1)) if found else None
            recognized = True
            continue
        match = _RANK.match(stripped)
        if match:
            result["ranks"].append({
                "rank": int(match.group("rank")),
                "pid": int(match.group("pid")),
                "host": match.group("host"),
                "device": int(match.group("device")),
                "bus_id": match.group("bus_id"),
                "model": match.group("model").strip() or None,
                "group": int(match.group("group")) if match.group("group") is not None else None,
            })
            recognized = True
            continue
        match = _TEST_NAME.match(stripped)
        if match:
            result["test"] = match.group("name")
            continue
        if _FAILURE.search(stripped):
            failures.append(stripped)
            recognized = True
            continue
        if table is not None:
            row = table.parse_row(stripped)
            if row is not None:
                result["rows"].append(row)
            elif table.looks_like_row(stripped):
                errors.append("line %d (%s): a results row that does not fit the header's %d columns is not read"
                              % (number, stripped[:120], len(table.columns)))

    if not recognized:
        raise ParseError(COMMAND, "no results table, '# nThread' header, '# Avg bus bandwidth' or test failure found")

    sides = [side for row in result["rows"] for side in (row["out_of_place"], row["in_place"]) if side]
    busbws = [side["busbw"] for side in sides if side["busbw"] is not None]
    result["busbw_max"] = max(busbws) if busbws else None
    wrongs = [side["wrong"] for side in sides if side["wrong"] is not None]
    # nccl-tests -c 0 prints N/A in every #wrong cell and still "Out of bounds values : 0 OK": zero of nothing checked.
    checked_nothing = (bool(sides) and not wrongs and table is not None
                       and any(_GROUP_COLUMNS.get(column) == "wrong" for column in table.columns))
    if out_of_bounds is not None and not (checked_nothing and out_of_bounds == 0):
        result["wrong"] = out_of_bounds
    elif wrongs:
        result["wrong"] = sum(wrongs)
    if out_of_bounds is None and wrongs and sum(wrongs):
        failures.append("%d wrong values in the #wrong columns" % sum(wrongs))
    if not failures and not result["rows"]:
        failures.append("nccl-tests printed no results (the output ends before the first result row)")
    elif not failures and result["avg_bus_bandwidth"] is None:
        failures.append("nccl-tests stopped before printing '# Avg bus bandwidth' (the run did not finish)")
    result["error"] = "; ".join(failures) if failures else None
    if table is not None and not result["rows"]:
        errors.append("the results table has no row")
    if result["rows"] and not result["ranks"]:
        errors.append("the results table has no rank line ('#  Rank  0 Group  0 Pid ... device ...') before it: "
                      "the GPUs of the run are unknown")
    result["errors"] = errors
    return result
