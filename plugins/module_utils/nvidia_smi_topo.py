# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse `nvidia-smi topo -m` (the GPU/NIC link matrix) and `nvidia-smi --query-gpu` CSV."""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.parse_common import ParseError, clean_lines

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
    raise ParseError(COMMAND, "no header row naming GPU0 ... was found")


def _int_or_none(value):
    return int(value) if value is not None and _INT.match(value) else None


def link_rank(code):
    """Rank of a GPU-NIC link code, lower is closer; None for codes that are not PCIe paths."""
    return LINK_RANK.get(code)


def parse_nvidia_smi_topo(text):
    """Parse `nvidia-smi topo -m`.

    Returns gpus (name, index, cpu_affinity, numa_affinity, gpu_numa_id), nics (name, device), the full
    link matrix {row: {column: code}}, nvlinks {GPU: {peer GPU: number of links}}, nearest_nics
    {GPU: [device names with its best link]} and nearest_link {GPU: that link code}, and legend_found.
    Accepts both layouts: the NIC# columns with a "NIC Legend", and the older layout naming the
    RDMA devices (mlx5_N) directly in the header.
    """
    lines = clean_lines(text, COMMAND)
    header_at, header = _find_header(lines)

    # Row labels, read up to the first blank line or legend: they tell matrix columns from the
    # trailing attribute columns (CPU Affinity, NUMA Affinity, GPU NUMA ID and any newer ones).
    rows = []
    for line in lines[header_at + 1:]:
        if not line.strip() or line.strip().startswith("Legend"):
            break
        rows.append(line)
    if not rows:
        raise ParseError(COMMAND, "the header is not followed by any matrix row")
    row_labels = [row.split()[0] for row in rows]
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
    for row, label in zip(rows, row_labels):
        if label not in devices:
            raise ParseError(COMMAND, "row %r is not a column of the header" % label)
        tokens = row.split()[1:]
        if len(tokens) < len(devices):
            raise ParseError(COMMAND, "row %s has %d link cells, the header has %d devices"
                             % (label, len(tokens), len(devices)))
        codes = tokens[:len(devices)]
        for code in codes:
            if not _LINK_CODE.match(code):
                raise ParseError(COMMAND, "row %s holds %r where a link code (X, NV#, PIX, PXB, PHB, NODE, SYS) "
                                 "belongs" % (label, code))
        matrix[label] = dict(zip(devices, codes))
        # Non-empty trailing cells map to the attribute columns in order; an empty CPU Affinity
        # would shift them, so values are checked for shape below.
        extra[label] = dict(zip(attributes, tokens[len(devices):]))

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
            numa = values.get("NUMA Affinity")
            gpus.append({
                "name": name,
                "index": int(_GPU_NAME.match(name).group(1)),
                "cpu_affinity": "" if cpu_affinity in ("N/A", None) else cpu_affinity,
                "numa_affinity": _int_or_none(numa),
                "gpu_numa_id": _int_or_none(values.get("GPU NUMA ID")),
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
