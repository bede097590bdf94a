# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every parser on the real captures of tests/fixtures, damaged the way real machines damage them.

The mutations are the four seen on real hosts, applied at random positions: a cell blanked (an empty CPU
Affinity), two adjacent cells run together (PXBNODE), a suffix appended by a newer kernel (fail_over_mac), an
optional field dropped (the Group of older nccl-tests), plus a line lost. The property is the same for every
parser: it either returns values that agree with the parse of the unmutated capture wherever the mutation did
not touch them (a touched value may only become blank), or it refuses with a ParseError naming the line; never
a traceback, never a value moved into another field. Examples stay few (the unit suite runs on a loaded
machine); hypothesis draws other positions on every run.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
from fixture_data import fixture_names, read_fixture
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.proc_bonding import parse_bonding
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibstat import parse_ibstat
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.lldp import parse_lldp_neighbors
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nvidia_smi_topo import parse_nvidia_smi_topo
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.perftest import parse_perftest

FEW = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_TOKEN = re.compile(r"\S+")
_BLANK = (None, "", [], {})


# ---------------------------------------------------------------- mutations of one line


def _cells(line):
    return [(match.start(), match.end()) for match in _TOKEN.finditer(line)]


def _blank_cell(line, index):
    """The cell replaced by as many spaces: columns right of it keep their positions."""
    start, end = _cells(line)[index]
    return line[:start] + " " * (end - start) + line[end:]


def _join_cells(line, index):
    """The separator between cell index and the next one deleted."""
    cells = _cells(line)
    return line[:cells[index][1]] + line[cells[index + 1][0]:]


def _replace_line(text, number, new):
    lines = text.split("\n")
    lines[number - 1] = new
    return "\n".join(lines)


def _drop_line(text, number):
    lines = text.split("\n")
    del lines[number - 1]
    return "\n".join(lines)


# ---------------------------------------------------------------- comparison with the unmutated parse


def _disagreements(original, mutated, path="", ignore=()):
    """Where mutated holds a value other than original's, a blank (None, "", [], {}) or a missing key aside.

    A list may lose elements (a lost GID, mgmt address) but what remains must be the original's, in order.
    """
    if mutated in _BLANK and not isinstance(mutated, bool):
        return []
    if isinstance(original, dict) and isinstance(mutated, dict):
        found = []
        for key in mutated:
            if key in ignore and not path:
                continue
            if key not in original:
                found.append("%s/%s gained %r" % (path, key, mutated[key]))
            else:
                found.extend(_disagreements(original[key], mutated[key], "%s/%s" % (path, key)))
        return found
    if isinstance(original, list) and isinstance(mutated, list):
        if len(original) == len(mutated):
            found = []
            for index, (before, after) in enumerate(zip(original, mutated)):
                found.extend(_disagreements(before, after, "%s/%d" % (path, index)))
            return found
        remaining = iter(original)
        if all(any(item == candidate for candidate in remaining) for item in mutated):
            return []
        return ["%s: %r is not what remains of %r" % (path, mutated, original)]
    return [] if original == mutated else ["%s: %r became %r" % (path, original, mutated)]


def _assert_agrees(original, mutated, ignore=()):
    problems = _disagreements(original, mutated, ignore=ignore)
    assert not problems, problems


# ---------------------------------------------------------------- nvidia-smi topo -m

TOPO = {name: read_fixture("nvidia_smi_topo/" + name) for name in fixture_names("nvidia_smi_topo")}
TOPO_PARSED = {name: parse_nvidia_smi_topo(text) for name, text in TOPO.items()}


def _matrix_rows(text):
    """(line number, label) of every matrix row: the lines after the header up to the first blank one."""
    lines = text.split("\n")
    header = next(index for index, line in enumerate(lines) if re.match(r"\s*(\x1b\[[0-9;]*m)?GPU0\b", line))
    rows = []
    for index in range(header + 1, len(lines)):
        if not lines[index].strip() or lines[index].strip().startswith("Legend"):
            break
        rows.append((index + 1, lines[index].split()[0]))
    return rows


@FEW
@given(data=st.data())
def test_nvidia_smi_topo_blanked_or_joined_cell(data):
    name = data.draw(st.sampled_from(sorted(TOPO)), label="capture")
    text, original = TOPO[name], TOPO_PARSED[name]
    number, label = data.draw(st.sampled_from(_matrix_rows(text)), label="row")
    line = text.split("\n")[number - 1]
    devices = len(original["matrix"])
    cells = len(_cells(line))
    join = data.draw(st.booleans(), label="join") and cells > 2
    index = data.draw(st.integers(1, cells - (2 if join else 1)), label="cell")  # cell 0 is the row's label
    mutated = _replace_line(text, number, _join_cells(line, index) if join else _blank_cell(line, index))

    is_cpu_affinity = (not join and label.startswith("GPU") and index == devices + 1
                       and original["attribute_columns"][:1] == ["CPU Affinity"])
    if join and index < devices:
        # Two link cells run together (PXBNODE): split back, the parse is the original one.
        assert parse_nvidia_smi_topo(mutated) == original
    elif is_cpu_affinity:
        # An empty CPU Affinity: that one value is blank, NUMA Affinity and GPU NUMA ID keep theirs.
        expected = copy.deepcopy(original)
        next(gpu for gpu in expected["gpus"] if gpu["name"] == label)["cpu_affinity"] = ""
        assert parse_nvidia_smi_topo(mutated) == expected
    else:
        # A lost link cell, or values that cannot be placed: refused, naming the line.
        with pytest.raises(ParseError) as error:
            parse_nvidia_smi_topo(mutated)
        assert "line %d (%s" % (number, label) in str(error.value)


# ---------------------------------------------------------------- /proc/net/bonding

BONDS = {name: read_fixture("bonding/" + name) for name in fixture_names("bonding")}
BONDS_PARSED = {name: parse_bonding(text) for name, text in BONDS.items()}
# The verdict is derived from the values: it may change when a value is blanked.
_BOND_VERDICT = ("problems", "healthy", "errors")


def _key_value_lines(text):
    return [number for number, line in enumerate(text.split("\n"), start=1)
            if re.match(r"^\s*[^:]+:\s*\S", line)]


@FEW
@given(data=st.data())
def test_bonding_kernel_suffix_blanked_value_or_lost_line(data):
    name = data.draw(st.sampled_from(sorted(BONDS)), label="capture")
    text, original = BONDS[name], BONDS_PARSED[name]
    lines = text.split("\n")
    mutation = data.draw(st.sampled_from(["suffix", "blank", "drop"]), label="mutation")
    if mutation == "suffix":
        suffix = data.draw(st.sampled_from(["fail_over_mac active", "fail_over_mac follow"])
                           | st.from_regex(r"[a-z_]{1,12} [a-z0-9]{1,8}", fullmatch=True), label="suffix")
        number = next(n for n, line in enumerate(lines, start=1) if line.startswith("Bonding Mode:"))
        mutated = parse_bonding(_replace_line(text, number, lines[number - 1] + " (%s)" % suffix))
        expected = dict(original, mode_suffixes=[suffix])
        assert mutated == expected
        return
    number = data.draw(st.sampled_from(_key_value_lines(text) if mutation == "blank"
                                       else [n for n, line in enumerate(lines, start=1) if line.strip()]), label="line")
    line = lines[number - 1]
    mutated_text = (_replace_line(text, number, line.split(":", 1)[0] + ":") if mutation == "blank"
                    else _drop_line(text, number))
    try:
        mutated = parse_bonding(mutated_text)
    except ParseError as error:
        if not line.startswith("Bonding Mode:"):
            # Without a mode there is nothing to name but its absence; otherwise the refused line is named.
            assert re.search(r"line \d+ \(", str(error)), str(error)
        return
    assert len(mutated["slaves"]) == len(original["slaves"])
    _assert_agrees(original, mutated, ignore=_BOND_VERDICT)


# ---------------------------------------------------------------- nccl-tests

NCCL = {relpath: read_fixture(relpath) for relpath in (
    "nccl_tests/deepops-4x-dgx-a100-slurm-allreduce-old-format.txt",
    "nccl_tests/deepops-dgx-roce-cx5-k8s-allreduce-old-format.txt",
    "nccl_tests/moc-h100-roce-2node-allreduce.txt",
    "nccl_debug/moc-h100-roce-4gpu-sendrecv-debug.txt",
)}
NCCL_PARSED = {relpath: parse_nccl_tests(text) for relpath, text in NCCL.items()}
# Figures derived from the rows: a dropped row may change them.
_NCCL_DERIVED = ("rows", "errors", "busbw_max", "wrong", "ranks")


def _result_rows(text):
    return [number for number, line in enumerate(text.split("\n"), start=1)
            if line.split()[:1] and line.split()[0].isdigit() and len(line.split()) >= 8]


@FEW
@given(data=st.data())
def test_nccl_tests_damaged_row_or_rank_line_without_group(data):
    relpath = data.draw(st.sampled_from(sorted(NCCL)), label="capture")
    text, original = NCCL[relpath], NCCL_PARSED[relpath]
    lines = text.split("\n")
    rank_lines = [n for n, line in enumerate(lines, start=1) if re.match(r"#\s+Rank\s+\d+\s+Group", line)]
    mutation = data.draw(st.sampled_from(["blank", "join", "group"] if rank_lines else ["blank", "join"]))
    if mutation == "group":
        number = data.draw(st.sampled_from(rank_lines), label="rank line")
        mutated = parse_nccl_tests(_replace_line(text, number, re.sub(r"Group\s+\d+\s+", "", lines[number - 1])))
        position = rank_lines.index(number)
        expected = copy.deepcopy(original)
        expected["ranks"][position]["group"] = None
        assert mutated == expected
        return
    number = data.draw(st.sampled_from(_result_rows(text)), label="row")
    line = lines[number - 1]
    cells = len(_cells(line))
    index = data.draw(st.integers(0, cells - (2 if mutation == "join" else 1)), label="cell")
    mutated = parse_nccl_tests(_replace_line(
        text, number, _join_cells(line, index) if mutation == "join" else _blank_cell(line, index)))
    # The damaged row is left out and named in errors; every other row is read as before.
    position = _result_rows(text).index(number)
    assert mutated["rows"] == original["rows"][:position] + original["rows"][position + 1:]
    assert any(error.startswith("line %d (" % number) for error in mutated["errors"]), mutated["errors"]
    assert mutated["ranks"] == original["ranks"]
    _assert_agrees(original, mutated, ignore=_NCCL_DERIVED)


# ---------------------------------------------------------------- ibstat and ibv_devinfo

RDMA = {name: read_fixture("ibstat_ibv_devinfo/" + name) for name in fixture_names("ibstat_ibv_devinfo")}


def _rdma_parser(name):
    return parse_ibstat if "ibstat" in name else parse_ibv_devinfo


RDMA_PARSED = {name: _rdma_parser(name)(text) for name, text in RDMA.items()}


def _by_name(parsed):
    return {device["name"]: device for device in parsed.get("cas", parsed.get("devices", []))}


@FEW
@given(data=st.data())
def test_ibstat_and_ibv_devinfo_blanked_value_or_lost_line(data):
    name = data.draw(st.sampled_from(sorted(RDMA)), label="capture")
    text, original = RDMA[name], RDMA_PARSED[name]
    lines = text.split("\n")
    blank = data.draw(st.booleans(), label="blank")
    choices = _key_value_lines(text) if blank else [n for n, line in enumerate(lines, start=1) if line.strip()]
    number = data.draw(st.sampled_from(choices), label="line")
    line = lines[number - 1]
    mutated_text = _replace_line(text, number, line.split(":", 1)[0] + ":") if blank else _drop_line(text, number)
    try:
        mutated = _rdma_parser(name)(mutated_text)
    except ParseError as error:
        assert re.search(r"line \d+ \(", str(error)), str(error)
        return
    before, after = _by_name(original), _by_name(mutated)
    if set(after) != set(before):
        # A lost "CA '<name>'"/"hca_id:" line: that device is gone and its lines are reported in errors.
        assert set(after) < set(before) and mutated["errors"]
    for device_name, device in after.items():
        ports_before = {port["port"]: port for port in before[device_name]["ports"]}
        ports_after = {port["port"]: port for port in device["ports"]}
        if set(ports_after) != set(ports_before):
            # A lost "Port <n>:" line: the device says in errors that it lists no port.
            assert not ports_after and any(device_name in error for error in mutated["errors"]), mutated["errors"]
        _assert_agrees(dict(before[device_name], ports=None), dict(device, ports=None))
        for number_, port in ports_after.items():
            _assert_agrees(ports_before[number_], port)


# ---------------------------------------------------------------- lldpctl -f json0

LLDP = {name: json.loads(read_fixture("lldp/" + name)) for name in fixture_names("lldp")}
LLDP_PARSED = {name: parse_lldp_neighbors(copy.deepcopy(decoded)) for name, decoded in LLDP.items()}


def _inner_paths(node, path=()):
    """Paths inside the interface entries (lldp/0/interface/<i>/...), where a neighbour's TLVs live."""
    if len(path) >= 5:
        yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _inner_paths(value, path + (key,))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _inner_paths(value, path + (index,))


@FEW
@given(data=st.data())
def test_lldp_dropped_or_blanked_tlv(data):
    name = data.draw(st.sampled_from(sorted(LLDP)), label="capture")
    decoded, original = copy.deepcopy(LLDP[name]), LLDP_PARSED[name]
    paths = [path for path in _inner_paths(decoded) if not isinstance(path[-1], int)]
    path = data.draw(st.sampled_from(paths), label="path")
    parent = decoded
    for step in path[:-1]:
        parent = parent[step]
    if data.draw(st.booleans(), label="drop") or not isinstance(parent[path[-1]], str):
        del parent[path[-1]]
    else:
        parent[path[-1]] = ""
    try:
        mutated = parse_lldp_neighbors(decoded)
    except ParseError:
        return  # a JSON output has no lines: the message names the interface or the object instead
    assert len(mutated["neighbors"]) == len(original["neighbors"])
    for before, after in zip(original["neighbors"], mutated["neighbors"]):
        # The preferred address is chosen among the others: losing one may elect another one of them.
        assert after["mgmt_ip"] is None or after["mgmt_ip"] in before["mgmt_ips"]
        _assert_agrees(dict(before, mgmt_ip=None), dict(after, mgmt_ip=None))


# ---------------------------------------------------------------- perftest

PERFTEST = {name: read_fixture("perftest/" + name) for name in fixture_names("perftest")}
PERFTEST = {name: text for name, text in PERFTEST.items() if parse_perftest(text)["rows"]}
PERFTEST_PARSED = {name: parse_perftest(text) for name, text in PERFTEST.items()}
_PERFTEST_DERIVED = ("rows", "errors", "bw_avg_gbps_max", "t_typical_us_min")


def _perftest_rows(text, parsed):
    sizes = [str(row["bytes"]) for row in parsed["rows"]]
    numbers = [number for number, line in enumerate(text.split("\n"), start=1)
               if line.split()[:1] and line.split()[0] in sizes and all(re.match(r"^-?[\d.]+$", v) for v in line.split())]
    assert len(numbers) == len(sizes)
    return numbers


@FEW
@given(data=st.data())
def test_perftest_damaged_row_or_lost_parameter_line(data):
    name = data.draw(st.sampled_from(sorted(PERFTEST)), label="capture")
    text, original = PERFTEST[name], PERFTEST_PARSED[name]
    lines = text.split("\n")
    mutation = data.draw(st.sampled_from(["blank", "join", "drop"]), label="mutation")
    if mutation == "drop":
        number = data.draw(st.sampled_from([n for n, line in enumerate(lines, start=1) if ":" in line]), label="line")
        mutated = parse_perftest(_drop_line(text, number))
        assert mutated["rows"] == original["rows"]
        _assert_agrees(original, mutated)
        return
    rows = _perftest_rows(text, original)
    number = data.draw(st.sampled_from(rows), label="row")
    line = lines[number - 1]
    cells = len(_cells(line))
    index = data.draw(st.integers(0, cells - (2 if mutation == "join" else 1)), label="cell")
    mutated = parse_perftest(_replace_line(
        text, number, _join_cells(line, index) if mutation == "join" else _blank_cell(line, index)))
    position = rows.index(number)
    assert mutated["rows"] == original["rows"][:position] + original["rows"][position + 1:]
    assert any(error.startswith("line %d (" % number) for error in mutated["errors"]), mutated["errors"]
    _assert_agrees(original, mutated, ignore=_PERFTEST_DERIVED)
