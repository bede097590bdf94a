# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse `nvidia-smi topo -m` (the GPU/NIC link matrix) and `nvidia-smi --query-gpu` CSV."""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError, clean_lines, describe_line
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.sysfs_text import HostDataError, parse_cpulist

COMMAND = "nvidia-smi topo -m"
QUERY_COMMAND = "nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader"
QUERY_FIELDS = ("index", "name", "pci.bus_id")

# Best first. SOC and CPU are the names drivers before 384 printed for SYS and PHB.
LINK_RANK = {"PIX": 0, "PXB": 1, "PHB": 2, "CPU": 2, "NODE": 3, "SYS": 4, "SOC": 4}
LINK_ALIASES = {"SOC": "SYS", "CPU": "PHB"}

_CELL_SPLIT = re.compile(r"\t| {2,}")
_LINK_CODE = re.compile(r"^(X|NV\d+|[A-Z][A-Z0-9]*)$")
_NVLINK = re.compile(r"^NV(\d+)$")
_GPU_NAME = re.compile(r"^GPU(\d+)$")
_NIC_ALIAS = re.compile(r"^NIC\d+$")
_LEGEND_ENTRY = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_INT = re.compile(r"^\d+$")
_TOKEN = re.compile(r"\S+")
# Codes nvidia-smi prints today and before driver 384; NV# is matched apart. A cell that is none of these
# but reads as several of them written without a separator is split (see _split_run_together).
KNOWN_LINK_CODES = ("X", "SYS", "NODE", "PHB", "PXB", "PIX", "SOC", "CPU")
_NV_PREFIX = re.compile(r"NV\d+")
_CPU_LIST = re.compile(r"\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*")
# Shapes of the known trailing columns; a value of another shape means the row was misread.
_ATTRIBUTE_SHAPES = {
    "CPU Affinity": lambda value: value in ("", "N/A") or bool(_CPU_LIST.fullmatch(value)),
    "NUMA Affinity": lambda value: value == "N/A" or bool(_CPU_LIST.fullmatch(value)),
    "GPU NUMA ID": lambda value: value == "N/A" or bool(_CPU_LIST.fullmatch(value)),
}
# How far right of its header a CPU Affinity value may start (link codes are centred, " X ").
_CPU_AFFINITY_SLACK = 2
_TAB_WIDTH = 8


def _header_cells(line):
    return [cell.strip() for cell in _CELL_SPLIT.split(line.strip()) if cell.strip()]


def _find_header(lines):
    """The header is the first line whose first cell is a GPU; a matrix row would have X beside it."""
    for position, line in enumerate(lines):
        cells = _header_cells(line)
        if cells and _GPU_NAME.match(cells[0]):
            if len(cells) > 1 and cells[1] == "X":
                raise ParseError(COMMAND, "the matrix has no header row naming its columns")
            return position, cells
    return None, None


def _numa_nodes(label, column, value):
    """A NUMA Affinity or GPU NUMA ID cell as a list of node numbers: '0' -> [0], '0,3-9' -> [0, 3, ..., 9],
    N/A or no cell -> [].

    Grace hosts (GH200, GB200, GB300) print lists: the GPU's memory and its MIG memory partitions are NUMA
    nodes of their own, numbered after the nodes that hold the CPUs.
    """
    if value is None or value == "N/A":
        return []
    try:
        return parse_cpulist(value)
    except HostDataError as exc:
        raise ParseError(COMMAND, "row %s: %s %r is no list of NUMA nodes (%s)" % (label, column, value, exc)) from None


def _is_known_code(code):
    return code in KNOWN_LINK_CODES or bool(_NVLINK.match(code))


def _split_run_together(cell):
    """Every way of reading cell as known link codes printed without a separator (PXBNODE, SYSSYS).

    Returns at most two readings: one means the split is unambiguous, two that it is not.
    """
    readings = []

    def walk(rest, parts):
        if len(readings) > 1:
            return
        if not rest:
            readings.append(parts)
            return
        for code in KNOWN_LINK_CODES:
            if rest.startswith(code):
                walk(rest[len(code):], parts + [code])
        match = _NV_PREFIX.match(rest)
        if match:
            # NV12NODE is NV12 + NODE; NV1 + 2NODE cannot be a code: try every digit count.
            for end in range(3, match.end() + 1):
                walk(rest[end:], parts + [rest[:end]])

    walk(cell, [])
    return readings


def _link_cells(label, number, line, tokens, devices):
    """The link codes of one row, run-together cells split; raises ParseError naming the line."""
    codes = []
    for text, unused_start in tokens:
        if not _LINK_CODE.match(text):
            break
        codes.append(text)
    if len(codes) >= len(devices):
        return codes[:len(devices)], tokens[len(devices):]
    missing = len(devices) - len(codes)
    split = []
    for code in codes:
        readings = [] if _is_known_code(code) else _split_run_together(code)
        if len(readings) > 1:
            raise ParseError(COMMAND, "%s: row %s holds %r, which reads as link codes in more than one way"
                             % (describe_line(number, line), label, code))
        split.extend(readings[0] if readings and len(readings[0]) > 1 else [code])
    if len(split) == len(devices):
        return split, tokens[len(codes):]
    if len(codes) < len(tokens):
        raise ParseError(COMMAND, "%s: row %s holds %r where a link code (X, NV#, PIX, PXB, PHB, NODE, SYS) "
                         "belongs" % (describe_line(number, line), label, tokens[len(codes)][0]))
    raise ParseError(COMMAND, "%s: row %s has %d link cells, the header has %d devices (%d missing and no "
                     "cell splits into that many link codes)"
                     % (describe_line(number, line), label, len(codes), len(devices), missing))


def _attribute_cells(label, number, line, rest, attributes, cpu_start):
    """Map the cells right of the matrix to the attribute columns.

    An empty CPU Affinity (a cgroup granting no CPU of the GPU's NUMA node) prints nothing but
    padding. The CPU Affinity value starts under its header; NUMA Affinity and the later values
    follow at tab stops that do not line up with their headers, so only that first position is used.
    """
    texts = [text for text, unused_start in rest]
    if not texts:
        return {}
    if len(texts) >= len(attributes):
        # Values past the named columns (none seen so far) are ignored, as before.
        values = dict(zip(attributes, texts))
    elif (len(texts) == len(attributes) - 1 and attributes[0] == "CPU Affinity" and cpu_start is not None
          and rest[0][1] > cpu_start + _CPU_AFFINITY_SLACK):
        values = dict(zip(attributes[1:], texts))
        values["CPU Affinity"] = ""
    else:
        raise ParseError(COMMAND, "%s: row %s has %d values for the %d columns %s and the blank one is not "
                         "the CPU Affinity: cannot tell which value is missing"
                         % (describe_line(number, line), label, len(texts), len(attributes), ", ".join(attributes)))
    for column, value in values.items():
        shape = _ATTRIBUTE_SHAPES.get(column)
        if shape is not None and not shape(value):
            raise ParseError(COMMAND, "%s: row %s holds %r under %s, which is no value of that column"
                             % (describe_line(number, line), label, value, column))
    return values


def _empty_result(errors):
    return {"gpus": [], "nics": [], "matrix": {}, "nearest_nics": {}, "nearest_link": {}, "nvlinks": {},
            "attribute_columns": [], "legend_found": False, "errors": errors}


def parse_nvidia_smi_topo(text):
    """Parse `nvidia-smi topo -m`.

    Returns gpus (name, index, cpu_affinity, numa_affinity, numa_affinity_nodes, gpu_numa_id), nics (name, device), the full
    link matrix {row: {column: code}}, nvlinks {GPU: {peer GPU: number of links}}, nearest_nics
    {GPU: [device names with its best link]} and nearest_link {GPU: that link code}, legend_found, and
    errors: why the output holds no GPU ("No devices were found"), empty otherwise.
    Accepts both layouts: the NIC# columns with a "NIC Legend", and the older layout naming the
    RDMA devices (mlx5_N) directly in the header; TAB or space separated; an empty CPU Affinity cell;
    link cells printed without a separator (PXBNODE) when they split one way only; the NUMA node lists of
    Grace hosts ('0,3-9,11-17' under NUMA Affinity: numa_affinity is the first, the CPUs' node, and
    numa_affinity_nodes all of them; gpu_numa_id is the node of the GPU's own memory, None where the GPU's
    memory is no NUMA node).
    """
    lines = clean_lines(text, COMMAND)
    header_at, header = _find_header(lines)
    if header is None:
        said = [line.strip() for line in lines if line.strip()]
        if said and "no devices were found" in said[0].lower():
            return _empty_result(["nvidia-smi listed no GPU: %s" % said[0][:160]])
        raise ParseError(COMMAND, "no header row naming GPU0 ... was found")
    header_line = lines[header_at].expandtabs(_TAB_WIDTH)
    cpu_start = header_line.find("CPU Affinity")
    cpu_start = cpu_start if cpu_start >= 0 else None

    # Row labels, read up to the first blank line or legend: they tell matrix columns from the
    # trailing attribute columns (CPU Affinity, NUMA Affinity, GPU NUMA ID and any newer ones).
    rows = []
    for number, line in enumerate(lines[header_at + 1:], start=header_at + 2):
        if not line.strip() or line.strip().startswith("Legend"):
            break
        rows.append((number, line))
    if not rows:
        raise ParseError(COMMAND, "the header is not followed by any matrix row")
    row_labels = [line.split()[0] for unused_number, line in rows]
    devices = []
    for cell in header:
        if " " in cell or cell not in row_labels:
            break
        devices.append(cell)
    attributes = header[len(devices):]
    if not devices:
        raise ParseError(COMMAND, "the header names no device that also labels a row")

    matrix = {}
    extra = {}
    for (number, row), label in zip(rows, row_labels):
        if label not in devices:
            raise ParseError(COMMAND, "%s: row %r is not a column of the header" % (describe_line(number, row), label))
        tokens = [(match.group(), match.start()) for match in _TOKEN.finditer(row.expandtabs(_TAB_WIDTH))][1:]
        codes, rest = _link_cells(label, number, row, tokens, devices)
        matrix[label] = dict(zip(devices, codes))
        extra[label] = _attribute_cells(label, number, row, rest, attributes, cpu_start) if _GPU_NAME.match(label) else {}

    legend = {}
    for line in lines:
        match = _LEGEND_ENTRY.match(line)
        if match:
            legend[match.group(1)] = match.group(2)

    gpus = []
    nics = []
    for name in devices:
        if _GPU_NAME.match(name):
            values = extra.get(name, {})
            cpu_affinity = values.get("CPU Affinity", "")
            numa = _numa_nodes(name, "NUMA Affinity", values.get("NUMA Affinity"))
            memory = _numa_nodes(name, "GPU NUMA ID", values.get("GPU NUMA ID"))
            gpus.append({
                "name": name,
                "index": int(_GPU_NAME.match(name).group(1)),
                "cpu_affinity": "" if cpu_affinity in ("N/A", None) else cpu_affinity,
                # The lowest node listed is the CPUs' own: on a Grace host the other nodes of the list are the
                # GPU's memory partitions, which have no CPUs to run on.
                "numa_affinity": numa[0] if numa else None,
                "numa_affinity_nodes": numa,
                "gpu_numa_id": memory[0] if memory else None,
            })
        else:
            device = legend.get(name)
            if device is None and not _NIC_ALIAS.match(name):
                device = name  # older layout: the header names the RDMA device itself
            nics.append({"name": name, "device": device})

    nic_label = {nic["name"]: nic["device"] or nic["name"] for nic in nics}
    nearest_nics = {}
    nearest_link = {}
    nvlinks = {}
    for gpu in gpus:
        links = matrix[gpu["name"]]
        ranked = [(LINK_RANK[links[nic]], nic) for nic in nic_label if links.get(nic) in LINK_RANK]
        if ranked:
            best = min(ranked)[0]
            nearest_nics[gpu["name"]] = [nic_label[nic] for rank, nic in ranked if rank == best]
            best_code = next(links[nic] for rank, nic in ranked if rank == best)
            nearest_link[gpu["name"]] = LINK_ALIASES.get(best_code, best_code)
        else:
            nearest_nics[gpu["name"]] = []
            nearest_link[gpu["name"]] = None
        peers = {}
        for other in gpus:
            match = _NVLINK.match(links.get(other["name"], ""))
            if match and other["name"] != gpu["name"]:
                peers[other["name"]] = int(match.group(1))
        nvlinks[gpu["name"]] = peers

    return {
        "gpus": gpus,
        "nics": nics,
        "matrix": matrix,
        "nearest_nics": nearest_nics,
        "nearest_link": nearest_link,
        "nvlinks": nvlinks,
        "attribute_columns": attributes,
        "legend_found": bool(legend) or not any(_NIC_ALIAS.match(nic["name"]) for nic in nics),
        "errors": [],
    }


def _pci_bus_id(value):
    """nvidia-smi prints an 8-digit PCI domain (00000000:18:00.0); sysfs uses 4 (0000:18:00.0)."""
    value = value.strip().lower()
    match = re.match(r"^([0-9a-f]+):([0-9a-f]{2}):([0-9a-f]{2})\.([0-7])$", value)
    if not match:
        return value or None
    domain, bus, device, function = match.groups()
    return "%04x:%s:%s.%s" % (int(domain, 16), bus, device, function)


def parse_nvidia_smi_query_gpu(text):
    """Parse `nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader`.

    Returns [{index, model, pci_bus_id}] with the PCI bus id in sysfs form (0000:18:00.0).
    """
    gpus = []
    for line in clean_lines(text, QUERY_COMMAND):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) < len(QUERY_FIELDS) or not _INT.match(cells[0]):
            raise ParseError(QUERY_COMMAND, "expected 'index, name, pci.bus_id' per line, got %r" % line[:120])
        # A model name never holds a comma today; join the middle cells in case one does.
        gpus.append({
            "index": int(cells[0]),
            "model": ", ".join(cells[1:-1]),
            "pci_bus_id": _pci_bus_id(cells[-1]),
        })
    return gpus
