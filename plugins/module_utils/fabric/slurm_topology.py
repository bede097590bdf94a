# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Slurm network topology from the fabric map: topology/tree per rail, topology/block, a leaf-ordered host list.

``build_slurm_topology`` is a pure function over the output of ``fabric_map.build_fabric_map``; it reads the map
as it is and never parses command output. What it places is what the map proved through LLDP: a host whose
place the map could not establish (no facts, miscabled, a rail without LLDP neighbour or down, a switch port
shared with another host, no majority switch for its rail) is left out of the tree and the host list and named
with its reasons. Nothing is guessed.

topology/tree: one ``SwitchName`` per leaf with the nodes that the chosen rail reaches through it. A
rail-optimised fabric has one tree per rail (rail i of every host on the leaves of rail i), and Slurm reads one
tree, so every rail's file is built and the chosen rail's is the result. The level above the leaves comes from
the inventory (``spines``: leaf -> spine) or from LLDP on the leaves' uplinks (``switch_neighbors``: leaf ->
its parsed LLDP neighbours; a neighbour that is neither a host port of that leaf nor a host or leaf of the map is
an uplink).

topology/block (Slurm 23.11 and later): blocks given per host (an NVLink domain or a rack), with BlockSizes
checked as slurmctld checks them (the first size is the base block; each further size is the base times a power
of two; every block has at least the base's node count).
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.map import natural_key

# Node and switch names that Slurm's hostlist parser reads back as written: no brackets, commas, '=' or spaces.
_SLURM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\Z")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_TRAILING_NUMBER = re.compile(r"(.*?)(\d+)\Z")
# slurmctld refuses a block level above 2**15 times the base block (block_record.c).
_MAX_BLOCK_LEVEL = 15


class SlurmTopologyError(ValueError):
    """The input is not what build_slurm_topology documents; the message names what to fix."""


def compress_hostlist(names):
    """Slurm hostlist expression of names: node01,node02,node03,gpu7 -> gpu7,node[01-03].

    Numbers are grouped by prefix and digit count, so that node9 and node10 stay separate ranges and the
    zero padding of node01 is kept, as Slurm's parser expands them.
    """
    groups = {}
    plain = []
    for name in set(names):
        match = _TRAILING_NUMBER.match(name)
        if match:
            groups.setdefault((match.group(1), len(match.group(2))), []).append(int(match.group(2)))
        else:
            plain.append(name)
    parts = [(name, name) for name in plain]
    for (prefix, width), numbers in groups.items():
        numbers.sort()
        ranges = []
        for number in numbers:
            if ranges and number == ranges[-1][1] + 1:
                ranges[-1][1] = number
            else:
                ranges.append([number, number])
        if len(numbers) == 1:
            text = "%s%0*d" % (prefix, width, numbers[0])
        else:
            text = "%s[%s]" % (prefix, ",".join(
                "%0*d" % (width, low) if low == high else "%0*d-%0*d" % (width, low, width, high)
                for low, high in ranges))
        parts.append(("%s%0*d" % (prefix, width, numbers[0]), text))
    return ",".join(item[1] for item in sorted(parts, key=lambda item: natural_key(item[0])))


def _check_mapping(value, name):
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise SlurmTopologyError("%s must be a mapping, not %s" % (name, type(value).__name__))
    return value


def _node_names(fabric_map, node_names):
    """{inventory host: Slurm NodeName}, checked: Slurm-safe and unique."""
    node_names = _check_mapping(node_names, "node_names")
    names = {}
    owners = {}
    for host in fabric_map["hosts"]:
        name = node_names.get(host, host)
        if not isinstance(name, str) or not _SLURM_NAME.match(name):
            raise SlurmTopologyError(
                "node_names[%s] (the Slurm NodeName of %s) must be letters, digits, '.', '_' or '-', starting with "
                "a letter or digit, got %r" % (host, host, name))
        if name in owners:
            raise SlurmTopologyError("node_names gives %s and %s the same Slurm NodeName %s"
                                     % (owners[name], host, name))
        owners[name] = host
        names[host] = name
    unknown = sorted(set(node_names) - set(fabric_map["hosts"]), key=natural_key)
    if unknown:
        raise SlurmTopologyError("node_names names hosts that are not in the fabric map: %s" % ", ".join(unknown))
    return names


class _SwitchNames:
    """LLDP switch names made Slurm-safe (a chassis ID MAC has colons); two switches never share a name."""

    def __init__(self):
        self.slurm = {}
        self.owner = {}

    def __call__(self, switch):
        if switch not in self.slurm:
            name = _UNSAFE.sub("-", str(switch)).lstrip("-._") or "switch"
            if name in self.owner:
                raise SlurmTopologyError("switches %s and %s both become Slurm switch %s"
                                         % (self.owner[name], switch, name))
            self.owner[name] = switch
            self.slurm[switch] = name
        return self.slurm[switch]

    def renamed(self):
        return {name: switch for switch, name in self.slurm.items() if name != switch}


def _check_map(fabric_map):
    if not isinstance(fabric_map, dict) or not isinstance(fabric_map.get("hosts"), dict) \
            or not isinstance(fabric_map.get("findings"), list):
        raise SlurmTopologyError("the input must be the fabric map that gpufabric.core.fabric_map returns "
                                 "(a mapping with hosts, switches and findings)")
    if fabric_map.get("schema_version") != 1:
        raise SlurmTopologyError("the fabric map has schema_version %r; slurm_topology reads version 1"
                                 % fabric_map.get("schema_version"))


def _host_reasons(fabric_map):
    """{host: [reasons]} for what keeps a host out of every rail's tree."""
    reasons = {}
    for host, entry in fabric_map["hosts"].items():
        if not entry.get("facts"):
            reasons.setdefault(host, []).append("no topology facts (unreachable, or topology_facts failed)")
    for item in fabric_map["findings"]:
        host = item.get("host")
        if host is None:
            continue
        if item.get("kind") == "rail_misaligned":
            reasons.setdefault(host, []).append("miscabled: " + item["message"])
        elif item.get("kind") == "switch_port_conflict":
            reasons.setdefault(host, []).append("switch port conflict: " + item["message"])
    return reasons


def _rail_reason(entry, index):
    """Why this host's rail cannot be placed, or None."""
    for rail in entry.get("rails") or []:
        if rail.get("rail") != index:
            continue
        if rail.get("up") is False:
            return "rail %d (%s) is %s" % (index, rail.get("netdev") or rail.get("device"), rail.get("state"))
        if rail.get("switch") is None:
            return "rail %d (%s) has no LLDP neighbour" % (index, rail.get("netdev") or rail.get("device"))
        if rail.get("expected_switch") is None:
            return "rail %d of peer group %s has no majority switch, so the map cannot tell where it belongs" % (
                index, entry.get("peer_group"))
        return None
    return "has no rail %d" % index


def _rails_of(fabric_map):
    return sorted({rail["rail"] for entry in fabric_map["hosts"].values() for rail in entry.get("rails") or []
                   if isinstance(rail.get("rail"), int)})


def _spines(fabric_map, spines, switch_neighbors):
    """{leaf (LLDP name): sorted spine names}: the inventory's spines win over the leaves' LLDP."""
    spines = _check_mapping(spines, "spines")
    switch_neighbors = _check_mapping(switch_neighbors, "switch_neighbors")
    leaves = fabric_map.get("switches") or {}
    hosts = set(fabric_map["hosts"])
    found = {}
    for leaf, neighbours in switch_neighbors.items():
        if leaf not in leaves:
            raise SlurmTopologyError("switch_neighbors names switch %s, which no host reaches in the fabric map "
                                     "(leaves of the map: %s)" % (leaf, ", ".join(leaves) or "none"))
        if not isinstance(neighbours, list):
            raise SlurmTopologyError("switch_neighbors[%s] must be the list of LLDP neighbours that "
                                     "gpufabric.core.parse_lldp returns" % leaf)
        host_ports = {port["port"] for port in leaves[leaf].get("ports") or []}
        uplinks = set()
        for neighbour in neighbours:
            if not isinstance(neighbour, dict):
                continue
            name = neighbour.get("chassis_name") or neighbour.get("chassis_id")
            if not name or neighbour.get("local_interface") in host_ports or name in hosts or name in leaves:
                continue  # a host port, a host, or a leaf-to-leaf link (MLAG peer): not a level above
            uplinks.add(name)
        if uplinks:
            found[leaf] = sorted(uplinks, key=natural_key)
    for leaf, value in spines.items():
        if leaf not in leaves:
            raise SlurmTopologyError("spines names leaf %s, which no host reaches in the fabric map (leaves of the "
                                     "map: %s)" % (leaf, ", ".join(leaves) or "none"))
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list) or not names or not all(isinstance(name, str) and name for name in names):
            raise SlurmTopologyError("spines[%s] must name a spine switch or a list of them, got %r" % (leaf, value))
        found[leaf] = sorted(set(names), key=natural_key)
    return found


def _tree(fabric_map, index, names, host_reasons, spines, switch_name):
    """One rail's tree: (switch lines, placed {host: (leaf, port)}, excluded {host: reasons})."""
    placed = {}
    excluded = {}
    for host, entry in fabric_map["hosts"].items():
        reasons = list(host_reasons.get(host, []))
        rail_reason = _rail_reason(entry, index)
        if rail_reason:
            reasons.append(rail_reason)
        if reasons:
            excluded[host] = reasons
            continue
        rail = next(rail for rail in entry["rails"] if rail["rail"] == index)
        placed[host] = (rail["switch"], rail.get("switch_port") or "")
    leaves = {}
    for host, (leaf, _port) in placed.items():
        leaves.setdefault(leaf, []).append(names[host])
    switches = []
    parents = {}
    for leaf in sorted(leaves, key=natural_key):
        switches.append({"name": switch_name(leaf), "lldp_name": leaf, "level": 0,
                         "nodes": sorted(leaves[leaf], key=natural_key), "switches": []})
        group = tuple(spines.get(leaf) or ())
        if group:
            parents.setdefault(group, []).append(switch_name(leaf))
    for group in sorted(parents, key=lambda item: natural_key(item[0])):
        name = switch_name(group[0]) if len(group) == 1 else "spines-" + "_".join(switch_name(item) for item in group)
        switches.append({"name": name, "lldp_name": group[0] if len(group) == 1 else None, "level": 1,
                         "nodes": [], "switches": sorted(parents[group], key=natural_key), "spines": list(group)})
    return switches, placed, excluded


def _tree_conf(index, switches, excluded, names):
    lines = ["# Slurm topology/tree of rail %d, generated by gpufabric.core.slurm_topology from the fabric map." % index,
             "# Each leaf lists the nodes whose rail %d reaches it (LLDP); do not edit, rerun the playbook." % index]
    for host in sorted(excluded, key=natural_key):
        lines.append("# left out: %s: %s" % (names[host], "; ".join(excluded[host])))
    for switch in switches:
        if switch.get("spines") and len(switch["spines"]) > 1:
            lines.append("# %s stands for the spines %s, which every leaf below reaches"
                         % (switch["name"], ", ".join(switch["spines"])))
        if switch["nodes"]:
            lines.append("SwitchName=%s Nodes=%s" % (switch["name"], compress_hostlist(switch["nodes"])))
        else:
            lines.append("SwitchName=%s Switches=%s" % (switch["name"], compress_hostlist(switch["switches"])))
    return "\n".join(lines) + "\n"


def _hostlist(fabric_map, placed, names):
    """Hosts ordered by their leaf on the chosen rail, then by their leaves on the other rails, then leaf port."""
    def key(host):
        leaf, port = placed[host]
        others = [natural_key(rail.get("switch") or "") for rail in
                  sorted(fabric_map["hosts"][host]["rails"], key=lambda rail: rail["rail"])]
        return (natural_key(leaf), others, natural_key(port), natural_key(host))
    return [names[host] for host in sorted(placed, key=key)]


def _check_blocks(fabric_map, blocks, block_sizes, names):
    """(blocks in order, findings) for topology/block; raise on what slurmctld would refuse."""
    blocks = _check_mapping(blocks, "blocks")
    members = {}
    for host, block in blocks.items():
        if host not in fabric_map["hosts"]:
            raise SlurmTopologyError("blocks names host %s, which is not in the fabric map" % host)
        if not isinstance(block, str) or not _SLURM_NAME.match(block):
            raise SlurmTopologyError("blocks[%s] (the NVLink domain or rack of %s) must be a name of letters, "
                                     "digits, '.', '_' or '-', got %r" % (host, host, block))
        members.setdefault(block, []).append(names[host])
    order = sorted(members, key=natural_key)
    findings = []
    if block_sizes is not None:
        if not isinstance(block_sizes, list) or not block_sizes or not all(
                isinstance(size, int) and not isinstance(size, bool) and size > 0 for size in block_sizes):
            raise SlurmTopologyError("block_sizes must be a list of positive whole numbers of nodes, got %r"
                                     % (block_sizes,))
        if block_sizes != sorted(set(block_sizes)):
            raise SlurmTopologyError("block_sizes must be in ascending order without repeats, got %r"
                                     % (block_sizes,))
        base = block_sizes[0]
        for size in block_sizes[1:]:
            ratio = size // base
            if size % base or ratio & (ratio - 1) or ratio > 2 ** _MAX_BLOCK_LEVEL:
                raise SlurmTopologyError(
                    "block_sizes %r: %d is not the base block size %d times a power of two (at most 2**%d), as "
                    "Slurm requires" % (block_sizes, size, base, _MAX_BLOCK_LEVEL))
    elif order:
        base = len(members[order[0]])  # slurmctld's base block without BlockSizes: the first block's node count
    if order:
        small = [block for block in order if len(members[block]) < base]
        if small:
            raise SlurmTopologyError(
                "blocks %s have fewer nodes than the base block size %d (%s): slurmctld refuses such a "
                "topology; %s" % (", ".join(small), base, ", ".join(
                    "%s has %d" % (block, len(members[block])) for block in small),
                    "lower the first of block_sizes" if block_sizes is not None
                    else "set block_sizes, whose first size is the base block"))
        larger = [block for block in order if len(members[block]) > base]
        if larger:
            findings.append({"severity": "info", "kind": "block_larger_than_base", "host": None, "rail": None,
                             "message": "blocks %s have more nodes than the base block size %d: Slurm places "
                                        "jobs in units of %d nodes there" % (", ".join(larger), base, base)})
        total = sum(len(nodes) for nodes in members.values())
        for size in block_sizes or []:
            if size > total:
                findings.append({"severity": "warning", "kind": "block_size_too_large", "host": None, "rail": None,
                                 "message": "block size %d is larger than the %d nodes in blocks: no job of that "
                                            "size can ever be placed" % (size, total)})
    missing = sorted(set(fabric_map["hosts"]) - set(blocks), key=natural_key)
    if blocks and missing:
        findings.append({"severity": "warning", "kind": "not_in_block", "host": None, "rail": None,
                         "message": "hosts in no block (Slurm places no job on them under topology/block): %s"
                                    % ", ".join(names[host] for host in missing)})
    return [{"name": block, "nodes": sorted(members[block], key=natural_key)} for block in order], findings


def _block_outputs(block_list, block_sizes):
    conf = ["# Slurm topology/block (23.11 and later), generated by gpufabric.core.slurm_topology.",
            "# Blocks are NVLink domains or racks from the inventory; adjacent blocks aggregate into larger ones."]
    conf += ["BlockName=%s Nodes=%s" % (block["name"], compress_hostlist(block["nodes"])) for block in block_list]
    if block_sizes:
        conf.append("BlockSizes=%s" % ",".join(str(size) for size in block_sizes))
    yaml = ["# Slurm topology.yaml (25.05 and later), generated by gpufabric.core.slurm_topology.",
            "---", "- topology: block", "  cluster_default: true", "  block:"]
    if block_sizes:
        yaml.append("    block_sizes: [%s]" % ", ".join(str(size) for size in block_sizes))
    yaml.append("    blocks:")
    for block in block_list:
        yaml += ["      - block: %s" % block["name"], "        nodes: %s" % compress_hostlist(block["nodes"])]
    return "\n".join(conf) + "\n", "\n".join(yaml) + "\n"


def build_slurm_topology(fabric_map, rail=None, spines=None, switch_neighbors=None, node_names=None,
                         blocks=None, block_sizes=None):
    """Slurm topology of the fabric map.

    rail: the rail whose tree is the result (default: the lowest rail of the map); every rail's tree is built.
    spines: {leaf: spine name or list}, from the inventory. switch_neighbors: {leaf: parsed LLDP neighbours}.
    node_names: {host: Slurm NodeName} (default: the host name). blocks: {host: block name} (NVLink domain or rack).
    block_sizes: BlockSizes for topology/block, checked against the blocks.

    Returns a JSON-ready dict (layout in the RETURN of `ansible-doc -t filter gpufabric.core.slurm_topology`).
    """
    _check_map(fabric_map)
    names = _node_names(fabric_map, node_names)
    rails = _rails_of(fabric_map)
    if rail is not None:
        if isinstance(rail, bool) or not isinstance(rail, int):
            raise SlurmTopologyError("rail must be a rail index (a whole number), got %r" % (rail,))
        if rail not in rails:
            raise SlurmTopologyError("rail %d is not in the fabric map, whose rails are %s"
                                     % (rail, ", ".join(str(index) for index in rails) or "none"))
    chosen = rail if rail is not None else (rails[0] if rails else None)
    spine_of = _spines(fabric_map, spines, switch_neighbors)
    host_reasons = _host_reasons(fabric_map)
    switch_name = _SwitchNames()
    per_rail = {}
    findings = []
    for index in rails:
        switches, placed, excluded = _tree(fabric_map, index, names, host_reasons, spine_of, switch_name)
        tops = [switch["name"] for switch in switches if switch["level"] == 1] + [
            switch["name"] for switch in switches if switch["level"] == 0 and not spine_of.get(switch["lldp_name"])]
        per_rail[index] = {
            "rail": index,
            "switches": switches,
            "top_switches": tops,
            "topology_conf": _tree_conf(index, switches, excluded, names),
            "hostlist": _hostlist(fabric_map, placed, names),
            "excluded": [{"host": host, "node": names[host], "reasons": excluded[host]}
                         for host in sorted(excluded, key=natural_key)],
        }
    result = {
        "plugin": "topology/tree",
        "rail": chosen,
        "rails": per_rail,
        "switches": per_rail[chosen]["switches"] if chosen is not None else [],
        "topology_conf": per_rail[chosen]["topology_conf"] if chosen is not None else None,
        "hostlist": per_rail[chosen]["hostlist"] if chosen is not None else [],
        "hostfile": "".join(name + "\n" for name in per_rail[chosen]["hostlist"]) if chosen is not None else "",
        "excluded": per_rail[chosen]["excluded"] if chosen is not None else [],
        "switch_names": switch_name.renamed(),
        "block": None,
    }
    if chosen is None:
        findings.append({"severity": "error", "kind": "no_rails", "host": None, "rail": None,
                         "message": "the fabric map has no rails: there is no tree to write"})
    elif not result["hostlist"]:
        findings.append({"severity": "error", "kind": "nothing_placed", "host": None, "rail": chosen,
                         "message": "no host could be placed on rail %d: the tree would be empty" % chosen})
    tops = per_rail[chosen]["top_switches"] if chosen is not None else []
    if len(tops) > 1:
        findings.append({"severity": "warning", "kind": "tree_not_connected", "host": None, "rail": chosen,
                         "message": "rail %d's tree has %d top-level switches (%s): Slurm places no job across "
                                    "them; name the spines above the leaves (spines, or LLDP on the leaves' "
                                    "uplinks)" % (chosen, len(tops), ", ".join(tops))})
    for item in result["excluded"]:
        findings.append({"severity": "warning", "kind": "host_left_out", "host": item["host"], "rail": chosen,
                         "message": "%s is left out of the topology: %s" % (item["node"], "; ".join(item["reasons"]))})
    if blocks:
        block_list, block_findings = _check_blocks(fabric_map, blocks, block_sizes, names)
        conf, yaml = _block_outputs(block_list, block_sizes)
        result["block"] = {"plugin": "topology/block", "blocks": block_list, "block_sizes": block_sizes,
                           "topology_conf": conf, "topology_yaml": yaml}
        findings += block_findings
    elif block_sizes is not None:
        raise SlurmTopologyError("block_sizes is set but blocks is empty: give each host its NVLink domain or rack")
    result["findings"] = findings
    return result
