# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kernel text files (sysfs, procfs) and the kernel's cpulist syntax: one implementation for the modules and the
host programs.

Standard library only and no imports from the collection: the rdma role copies this file unchanged next to
gpufabric_rdma_tune.py on the host (as the cooling role copies its module_utils into the controller package).
"""

from __future__ import annotations

import os
import re

_CPULIST_ITEM = re.compile(r"([0-9]+)(?:-([0-9]+))?")


class HostDataError(ValueError):
    """A kernel text file or a setting in the kernel's syntax that cannot be read."""


def parse_cpulist(text):
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]; '' -> [] (the format of cpulist, smp_affinity_list, online)."""
    cpus = set()
    text = text.strip()
    if not text:
        return []
    for item in text.split(","):
        match = _CPULIST_ITEM.fullmatch(item.strip())
        if not match:
            raise HostDataError("%r is not a CPU list (expected e.g. 0-3,8)" % text)
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise HostDataError("%r is not a CPU list: range %s runs backwards" % (text, item))
        cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_cpulist(cpus):
    """[0, 1, 2, 8] -> '0-2,8': the inverse of parse_cpulist."""
    ranges = []
    for cpu in sorted(cpus):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)


def read_text(path, default=None):
    """A sysfs/procfs attribute without its trailing newline, or default when it cannot be read."""
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError:
        return default


def write_text(path, value):
    """Write one attribute in a single write(2), as the kernel expects."""
    with open(path, "w") as handle:
        handle.write(value)


def cpu_node(node, sysfs_root="/sys"):
    """The NUMA node whose CPUs serve NUMA node `node`, with those CPUs: (node, cpus).

    A node without CPUs (on Grace hosts each GPU's memory and its MIG memory partitions are such nodes) is served
    by the node with CPUs nearest to it in the kernel's distance table; (node, []) when no such node is known.
    (node, None) when sysfs says nothing about `node` (no NUMA information at all): the caller decides.
    """
    base = os.path.join(sysfs_root, "devices", "system", "node")
    own = read_text(os.path.join(base, "node%d" % node, "cpulist"))
    if own is None:
        return node, None
    cpus = parse_cpulist(own)
    if cpus:
        return node, cpus
    # node<N>/distance lists the distance to each online node, in the order of their numbers.
    online = parse_cpulist(read_text(os.path.join(base, "online"), ""))
    distances = read_text(os.path.join(base, "node%d" % node, "distance"), "").split()
    nearest = None
    for other, distance in zip(online, distances):
        other_cpus = parse_cpulist(read_text(os.path.join(base, "node%d" % other, "cpulist"), ""))
        if other_cpus and distance.isdigit() and (nearest is None or int(distance) < nearest[0]):
            nearest = (int(distance), other, other_cpus)
    return (nearest[1], nearest[2]) if nearest else (node, [])
