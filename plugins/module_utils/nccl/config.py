# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL's configuration derived from gpufabric_topology, and the checks on what users add to it.

derive() turns one host's topology facts into NCCL variables; nccl_config() merges the user's
overrides over them and refuses names NCCL does not define, debugging-only variables and values a
config file cannot carry; hca_consistency() compares hosts that must agree; topology_xml() writes
the optional NCCL topology file. Pure functions: the filters and the unit tests call them alike.
"""

from __future__ import annotations

import difflib
import re
from xml.sax.saxutils import quoteattr

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.roce import port_gid_index

# The variables NCCL reads, compiled from NCCL's user guide ("Environment Variables", releases 2.18-2.27) plus the
# undocumented graph-file pair: a name outside this set is a typo or another library's variable, which NCCL would
# silently ignore. Add names here as NCCL grows them.
NCCL_VARIABLES = frozenset((
    # System configuration
    "NCCL_SOCKET_IFNAME", "NCCL_SOCKET_FAMILY", "NCCL_SOCKET_RETRY_CNT", "NCCL_SOCKET_RETRY_SLEEP_MSEC",
    "NCCL_SOCKET_NTHREADS", "NCCL_NSOCKS_PERTHREAD", "NCCL_CROSS_NIC", "NCCL_IB_HCA", "NCCL_IB_TIMEOUT",
    "NCCL_IB_RETRY_CNT", "NCCL_IB_GID_INDEX", "NCCL_IB_ADDR_FAMILY", "NCCL_IB_ADDR_RANGE",
    "NCCL_IB_ROCE_VERSION_NUM", "NCCL_IB_SL", "NCCL_IB_TC", "NCCL_IB_FIFO_TC", "NCCL_IB_RETURN_ASYNC_EVENTS",
    "NCCL_OOB_NET_ENABLE", "NCCL_OOB_NET_IFNAME", "NCCL_UID_STAGGER_THRESHOLD", "NCCL_UID_STAGGER_RATE",
    "NCCL_NET", "NCCL_NET_PLUGIN", "NCCL_TUNER_PLUGIN", "NCCL_PROFILER_PLUGIN", "NCCL_IGNORE_CPU_AFFINITY",
    "NCCL_CONF_FILE", "NCCL_DEBUG", "NCCL_DEBUG_FILE", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_TIMESTAMP_FORMAT",
    "NCCL_DEBUG_TIMESTAMP_LEVELS", "NCCL_COLLNET_ENABLE", "NCCL_COLLNET_NODE_THRESHOLD", "NCCL_CTA_POLICY",
    "NCCL_TOPO_FILE", "NCCL_TOPO_DUMP_FILE", "NCCL_SET_THREAD_NAME", "NCCL_HOSTID", "NCCL_WARN_ENABLE_DEBUG_INFO",
    "NCCL_RAS_ENABLE", "NCCL_RAS_ADDR", "NCCL_RAS_TIMEOUT_FACTOR", "NCCL_MNNVL_ENABLE", "NCCL_MNNVL_UUID",
    "NCCL_MNNVL_CLIQUE_ID", "NCCL_IB_DATA_DIRECT", "NCCL_NET_GDR_C2C",
    # Debugging and tuning (NCCL documents these as workarounds; the role derives a few of them)
    "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL", "NCCL_P2P_DIRECT_DISABLE", "NCCL_SHM_DISABLE", "NCCL_BUFFSIZE",
    "NCCL_NTHREADS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS", "NCCL_CHECKS_DISABLE", "NCCL_CHECK_POINTERS",
    "NCCL_LAUNCH_MODE", "NCCL_IB_DISABLE", "NCCL_IB_AR_THRESHOLD", "NCCL_IB_QPS_PER_CONNECTION",
    "NCCL_IB_SPLIT_DATA_ON_QPS", "NCCL_IB_CUDA_SUPPORT", "NCCL_IB_PCI_RELAXED_ORDERING",
    "NCCL_IB_ADAPTIVE_ROUTING", "NCCL_IB_ECE_ENABLE", "NCCL_IB_MERGE_NICS", "NCCL_IB_MERGE_VFS",
    "NCCL_IB_USE_INLINE", "NCCL_MEM_SYNC_DOMAIN", "NCCL_NET_GDR_LEVEL",
    "NCCL_NET_GDR_READ", "NCCL_NET_SHARED_BUFFERS", "NCCL_NET_SHARED_COMMS", "NCCL_NET_FORCE_FLUSH",
    "NCCL_NET_OVERHEAD", "NCCL_SINGLE_RING_THRESHOLD", "NCCL_LL_THRESHOLD",
    "NCCL_TREE_THRESHOLD", "NCCL_ALGO", "NCCL_PROTO", "NCCL_NVB_DISABLE", "NCCL_PXN_DISABLE",
    "NCCL_P2P_PXN_LEVEL", "NCCL_RUNTIME_CONNECT", "NCCL_GRAPH_REGISTER", "NCCL_LOCAL_REGISTER",
    "NCCL_LEGACY_CUDA_REGISTER", "NCCL_SET_STACK_SIZE", "NCCL_GRAPH_MIXING_SUPPORT", "NCCL_DMABUF_ENABLE",
    "NCCL_P2P_NET_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE", "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_P2P_LL_THRESHOLD",
    "NCCL_ALLOC_P2P_NET_LL_BUFFERS", "NCCL_COMM_BLOCKING", "NCCL_CGA_CLUSTER_SIZE", "NCCL_MAX_CTAS",
    "NCCL_MIN_CTAS", "NCCL_NVLS_ENABLE", "NCCL_NVLS_NCHANNELS", "NCCL_NVLS_CHUNKSIZE", "NCCL_NCHANNELS_PER_NET_PEER",
    "NCCL_NVLINK_UTIL_CENTRIC_SCHED_ENABLE", "NCCL_WORK_FIFO_DEPTH", "NCCL_WORK_FIFO_BYTES", "NCCL_CUMEM_ENABLE",
    "NCCL_CUMEM_HOST_ENABLE", "NCCL_NET_DISABLE_INTRA",
    "NCCL_GRAPH_FILE", "NCCL_GRAPH_DUMP_FILE", "NCCL_IGNORE_DISABLED_P2P",
))

# Variables that only help while a problem is being diagnosed: they slow jobs down, fill disks or pin NCCL to one
# machine's graph. Refused unless the user allows debugging variables explicitly.
DEBUG_ONLY_VARIABLES = frozenset((
    "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE", "NCCL_DEBUG_TIMESTAMP_FORMAT", "NCCL_DEBUG_TIMESTAMP_LEVELS",
    "NCCL_TOPO_DUMP_FILE", "NCCL_GRAPH_DUMP_FILE", "NCCL_GRAPH_FILE", "NCCL_CHECK_POINTERS",
    "NCCL_WARN_ENABLE_DEBUG_INFO",
))
# NCCL_DEBUG itself is production-safe at these levels (NVIDIA's own /etc/nccl.conf example sets WARN).
PRODUCTION_DEBUG_LEVELS = ("VERSION", "WARN")

# Names NCCL used to read and renamed: refused with the current name.
RENAMED_VARIABLES = {
    "NCCL_IB_GDR_LEVEL": "NCCL_NET_GDR_LEVEL",
    "NCCL_MAX_NRINGS": "NCCL_MAX_NCHANNELS",
    "NCCL_MIN_NRINGS": "NCCL_MIN_NCHANNELS",
}

# Variables this role wrote in earlier releases and no longer writes (a graph file pins NCCL to the hardware it was
# dumped on). The files are fully templated, so they disappear on the next run; verify checks they are gone.
RETIRED_VARIABLES = ("NCCL_GRAPH_FILE", "NCCL_IB_GDR_LEVEL", "NCCL_TREE_THRESHOLD")

# nvidia-smi link codes to NCCL path levels: NCCL has no NODE level, its PHB means "same NUMA node, through the CPU".
NCCL_LEVEL_OF_LINK = {"PIX": "PIX", "PXB": "PXB", "PHB": "PHB", "NODE": "PHB", "SYS": "SYS"}
GDR_LEVELS = ("LOC", "PIX", "PXB", "PHB", "SYS")

# Cluster-size hints for NCCL_ALGO: (largest node count, algorithms), the last tier without a bound.
DEFAULT_ALGORITHM_TIERS = (
    {"max_nodes": 4, "algorithms": "Ring"},
    {"max_nodes": 32, "algorithms": "Tree,Ring"},
    {"max_nodes": None, "algorithms": "NVLSTree,Tree"},
)

# What /etc/nccl.conf (no quoting at all), systemd/docker/enroot env files and a profile script can all carry.
# Matched whole (fullmatch): with match and `$`, a value with a trailing newline passed and split the file.
_SAFE_VALUE = re.compile(r"[A-Za-z0-9_.,:=^/+@%-]*")
_VARIABLE_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
INTERFACE_NAME = re.compile(r"[A-Za-z0-9_.:@-]{1,15}")

DEFAULT_OPTIONS = {
    "socket_ifname": [],            # exact interface names for bootstrap; empty: default_interface
    "default_interface": None,      # the default-route interface (ansible_facts.default_ipv4.interface)
    "gdr_level_max": "PHB",         # never use GPUDirect RDMA beyond this distance
    "roce_qps_per_connection": 4,   # spread RoCE flows over ECMP paths; None: NCCL's default
    "ib_qps_per_connection": None,  # InfiniBand: NCCL's default (adaptive routing balances IB)
    "roce_traffic_class": None,     # NCCL_IB_TC for RoCE (the fabric's lossless class); None: not written
    "algorithm_hints": False,
    "cluster_nodes": 1,
    "algorithm_tiers": DEFAULT_ALGORITHM_TIERS,
    "topology_file": None,          # path of the NCCL topology XML the role writes; None: none
    "hca_selection": "gpu_affine",  # the rails' ACTIVE ports; all_active also takes rails of a host without GPUs
}
HCA_SELECTIONS = ("gpu_affine", "all_active")


class NcclConfigError(ValueError):
    """The topology facts or the options cannot be used to derive a configuration."""


def _finding(findings, severity, message):
    findings.append({"severity": severity, "message": message})


def suggest(name):
    """The NCCL variable closest to name, or None."""
    matches = difflib.get_close_matches(str(name).upper(), sorted(NCCL_VARIABLES), n=1, cutoff=0.6)
    return matches[0] if matches else None


def format_value(value):
    """NCCL reads every value as text: booleans become 1/0 (YAML true would otherwise be 'True')."""
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def check_variables(variables, allow_debug=False, prefix=""):
    """Problems with user-given NCCL variables, one sentence each; an empty list means all are accepted.

    A value of None asks to drop a derived variable and is always accepted for a known name. `prefix` goes before
    each variable's name (nccl_variables. names the role variable).
    """
    if not isinstance(variables, dict):
        return ["%snccl variables must be a dict of NCCL_* names to values, got %s"
                % (prefix.rstrip(".") + ": " if prefix else "", type(variables).__name__)]
    raw = []
    for name in sorted(variables, key=str):
        _check_variable(raw, name, variables[name], allow_debug)
    return [prefix + problem for problem in raw]


def _check_variable(problems, name, value, allow_debug):
    if not isinstance(name, str) or not _VARIABLE_NAME.fullmatch(name):
        problems.append("%r: not a variable name (NCCL_ followed by capitals, digits and _)" % (name,))
        return
    if name in RENAMED_VARIABLES:
        problems.append("%s: NCCL renamed it %s; use the new name" % (name, RENAMED_VARIABLES[name]))
        return
    if name not in NCCL_VARIABLES:
        close = suggest(name)
        problems.append("%s: not an NCCL variable; %s" % (
            name, "did you mean %s?" % close if close else "no NCCL variable has a similar name"))
        return
    if value is None:
        return
    if isinstance(value, (dict, list)):
        problems.append("%s: the value must be a string or a number, got a %s" % (name, type(value).__name__))
        return
    text = format_value(value)
    if not _SAFE_VALUE.fullmatch(text):
        problems.append("%s: the value %r holds characters that nccl.conf and environment files cannot carry "
                        "(whitespace, quotes, $, `, \\, ;, # ...)" % (name, text))
        return
    if allow_debug:
        return
    if name in DEBUG_ONLY_VARIABLES:
        problems.append("%s: a debugging variable, refused in production (NCCL's documentation: keeping it set "
                        "may slow jobs down or make them hang); set nccl_allow_debug_variables: true while you "
                        "diagnose, and remove it after" % name)
    elif name == "NCCL_DEBUG" and text.upper() not in PRODUCTION_DEBUG_LEVELS:
        problems.append("NCCL_DEBUG=%s: a debugging level, refused in production; use %s, or set "
                        "nccl_allow_debug_variables: true while you diagnose"
                        % (text, " or ".join(PRODUCTION_DEBUG_LEVELS)))


def _options(options):
    merged = dict(DEFAULT_OPTIONS)
    merged.update({k: v for k, v in (options or {}).items() if k in DEFAULT_OPTIONS})
    unknown = sorted(set(options or {}) - set(DEFAULT_OPTIONS))
    if unknown:
        raise NcclConfigError("unknown option(s) %s; known: %s" % (", ".join(unknown), ", ".join(sorted(DEFAULT_OPTIONS))))
    if merged["hca_selection"] not in HCA_SELECTIONS:
        raise NcclConfigError("hca_selection must be one of %s, got %r" % (", ".join(HCA_SELECTIONS), merged["hca_selection"]))
    if merged["gdr_level_max"] not in GDR_LEVELS:
        raise NcclConfigError("gdr_level_max must be one of %s, got %r" % (", ".join(GDR_LEVELS), merged["gdr_level_max"]))
    names = merged["socket_ifname"] or []
    if isinstance(names, str):
        names = [names]
    bad = [name for name in names if not isinstance(name, str) or not INTERFACE_NAME.fullmatch(name)]
    if bad:
        raise NcclConfigError("socket_ifname must list interface names (up to 15 of A-Z a-z 0-9 _ . : @ -), got %r" % bad)
    merged["socket_ifname"] = list(names)
    return merged


# Where the facts' rails came from (topology.resolve_rails) that each hca_selection accepts: a host whose facts hold no
# GPU (a GPU server before its driver loads) gets rails from every RDMA device, which gpu_affine must not hand to NCCL.
RAIL_SOURCES_OF_SELECTION = {"gpu_affine": ("inventory", "gpu"), "all_active": ("inventory", "gpu", "rdma_devices")}


def _rail_ports(topology, selection, findings):
    """The ACTIVE RDMA ports of the host's rails, as topology_facts resolved them: [(rail, device, port, link)].

    NCCL is given exactly the rails every other consumer reads (the fabric map, the bandwidth sweep); a rail whose
    port is not ACTIVE, or whose NIC is not an RDMA device, is left out with a warning.
    """
    rails = topology.get("rails") or []
    source = topology.get("rail_source") or ("gpu" if rails else "none")
    if source not in RAIL_SOURCES_OF_SELECTION[selection]:
        return []
    ports_of = {device.get("name"): {port.get("port"): port for port in device.get("ports") or []}
                for device in (topology.get("rdma") or {}).get("devices") or []}
    chosen = []
    for rail in rails:
        label = "rail %s (%s)" % (rail.get("rail"), ", ".join(
            str(part) for part in (rail.get("gpu"), rail.get("device"), rail.get("netdev")) if part))
        port = ports_of.get(rail.get("device"), {}).get(rail.get("port"))
        if port is None:
            _finding(findings, "warning", "%s has no RDMA port this host reports: left out of NCCL_IB_HCA" % label)
        elif port.get("state") != "ACTIVE":
            _finding(findings, "warning", "%s: %s port %s is %s, left out of NCCL_IB_HCA%s" % (
                label, rail["device"], rail.get("port"), port.get("state") or "in an unknown state",
                ": its GPU's traffic goes to a farther NIC" if rail.get("gpu") else ""))
        else:
            chosen.append((rail, rail["device"], port, rail.get("link")))
    return chosen


def _choose_link_layer(affine, findings):
    counts = {}
    for _rail, _nic, port, _link in affine:
        counts[port.get("link_layer")] = counts.get(port.get("link_layer"), 0) + 1
    # Most ports wins; on a tie InfiniBand, the fabric GPU clusters are usually built for.
    chosen = sorted(counts, key=lambda layer: (-counts[layer], layer != "InfiniBand", str(layer)))[0]
    kept = []
    for rail, nic, port, link in affine:
        if port.get("link_layer") == chosen:
            kept.append((rail, nic, port, link))
        else:
            _finding(findings, "warning", "%s port %s (%s) left out of NCCL_IB_HCA: the other rails' ports are %s, "
                     "and NCCL must not mix link layers" % (nic, port.get("port"), port.get("link_layer"), chosen))
    return chosen, kept


def _gdr_level(kept, limit):
    rank = {level: index for index, level in enumerate(GDR_LEVELS)}
    links = [NCCL_LEVEL_OF_LINK.get(link) for _rail, _nic, _port, link in kept]
    if not links or None in links:
        return None  # a link code the facts do not know: leave NCCL's own default
    worst = max(links, key=rank.get)
    return worst if rank[worst] <= rank[limit] else limit


def _gid_index(kept, findings):
    indexes = {}
    for _rail, nic, port, _link in kept:
        index, reason = port_gid_index(port)
        label = "%s:%s" % (nic, port.get("port"))
        if reason:
            _finding(findings, "warning", "%s: %s; NCCL_IB_GID_INDEX not written, set it in nccl_variables"
                     % (label, reason))
            return None
        if label not in indexes.get(index, []):
            indexes.setdefault(index, []).append(label)
    if None in indexes:
        _finding(findings, "warning", "no RoCE v2 GID index known for %s (the facts hold no GID table: capture "
                 "ibv_devinfo -v or sysfs): NCCL_IB_GID_INDEX not written, NCCL picks the GID itself"
                 % ", ".join(indexes[None]))
        return None
    if len(indexes) > 1:
        _finding(findings, "warning", "the RoCE v2 GID index differs between ports (%s): NCCL_IB_GID_INDEX takes one "
                 "value for all, so it is not written; give every rail netdev its addresses in the same order"
                 % "; ".join("%s on %s" % (index, ", ".join(ports)) for index, ports in sorted(indexes.items())))
        return None
    return next(iter(indexes))


def _algorithms(options):
    nodes = int(options["cluster_nodes"] or 1)
    for tier in options["algorithm_tiers"] or ():
        bound = tier.get("max_nodes")
        if bound is None or nodes <= int(bound):
            return tier.get("algorithms")
    return None


def derive(topology, options=None):
    """NCCL variables derived from one host's gpufabric_topology.

    Returns {"variables": {name: text}, "hca": ["mlx5_0:1", ...], "link_layer": str|None,
    "findings": [{"severity", "message"}]}. A finding of severity error means the derivation could not decide
    something NCCL needs (RDMA devices present but no usable GPU-affine port).
    """
    if not isinstance(topology, dict) or "rdma" not in topology or "gpus" not in topology:
        raise NcclConfigError("expected gpufabric_topology (a dict with gpus and rdma, docs/topology.md); run "
                              "gpufabric.core.topology_facts first")
    options = _options(options)
    findings = []
    variables = {}

    interfaces = options["socket_ifname"] or ([options["default_interface"]] if options["default_interface"] else [])
    if interfaces:
        # '=' makes NCCL match the names exactly instead of as prefixes (eth1 would also match eth10).
        variables["NCCL_SOCKET_IFNAME"] = "=" + ",".join(interfaces)
    else:
        _finding(findings, "warning", "no bootstrap interface: give nccl_socket_ifname or gather facts for the "
                 "default-route interface; NCCL_SOCKET_IFNAME not written, NCCL picks an interface itself")

    rdma = topology.get("rdma") or {}
    hca = []
    link_layer = None
    if not rdma.get("available"):
        variables["NCCL_IB_DISABLE"] = "1"
        _finding(findings, "info", "RDMA not available (%s): NCCL_IB_DISABLE=1, NCCL uses TCP sockets"
                 % (rdma.get("reason") or "unknown reason"))
    else:
        affine = _rail_ports(topology, options["hca_selection"], findings)
        if not affine:
            source = topology.get("rail_source") or ("gpu" if topology.get("rails") else "none")
            if source == "rdma_devices" and options["hca_selection"] == "gpu_affine":
                reason = ("the facts hold no GPU topology to tell which RDMA ports are GPU-affine (name the rails in "
                          "gpufabric_rail_interfaces, or set nccl_hca_selection: all_active for a host without GPUs)")
            elif source == "none":
                reason = ("the host has no rails: no GPU with a nearest RDMA NIC, no RDMA device with an ACTIVE "
                          "port and no gpufabric_rail_interfaces")
            else:
                reason = "no rail has an ACTIVE RDMA port"
            _finding(findings, "error", "RDMA devices are present but %s: NCCL would silently fall back to a "
                     "farther NIC or TCP; bring the links up, or set NCCL_IB_HCA (or NCCL_IB_DISABLE) in "
                     "nccl_variables" % reason)
        else:
            link_layer, kept = _choose_link_layer(affine, findings)
            for _rail, nic, port, _link in kept:
                entry = "%s:%s" % (nic, port.get("port"))
                if entry not in hca:
                    hca.append(entry)
            # '=' for exact names: without it mlx5_1 also selects mlx5_10 and mlx5_11.
            variables["NCCL_IB_HCA"] = "=" + ",".join(hca)
            level = _gdr_level(kept, options["gdr_level_max"])
            if level:
                variables["NCCL_NET_GDR_LEVEL"] = level
            if link_layer == "Ethernet":
                gid = _gid_index(kept, findings)
                if gid is not None:
                    variables["NCCL_IB_GID_INDEX"] = str(gid)
                qps = options["roce_qps_per_connection"]
                if options["roce_traffic_class"] is not None:
                    variables["NCCL_IB_TC"] = str(int(options["roce_traffic_class"]))
            else:
                qps = options["ib_qps_per_connection"]
            if qps is not None:
                variables["NCCL_IB_QPS_PER_CONNECTION"] = str(int(qps))
                if int(qps) > 1:
                    # Each message goes whole over one QP, QPs taken in turn: no per-message split overhead.
                    variables["NCCL_IB_SPLIT_DATA_ON_QPS"] = "0"
    if options["algorithm_hints"]:
        algorithms = _algorithms(options)
        if algorithms:
            variables["NCCL_ALGO"] = algorithms
    if options["topology_file"]:
        variables["NCCL_TOPO_FILE"] = options["topology_file"]
    return {"variables": variables, "hca": hca, "link_layer": link_layer, "findings": findings}


def nccl_config(topology, overrides=None, options=None, allow_debug=False):
    """derive() with the user's overrides merged over it (None drops a derived variable).

    Returns derive()'s keys plus "derived" (before overrides), "variables" (what the files get, sorted by name),
    "problems" (sentences; any problem means nothing may be written) and "retired" (names that must be gone).
    A derivation error is no longer a problem when the user set NCCL_IB_HCA or NCCL_IB_DISABLE.
    """
    overrides = overrides if overrides is not None else {}
    result = derive(topology, options)
    problems = check_variables(overrides, allow_debug=allow_debug)
    decided = isinstance(overrides, dict) and ("NCCL_IB_HCA" in overrides or "NCCL_IB_DISABLE" in overrides)
    for finding in result["findings"]:
        if finding["severity"] == "error" and not decided:
            problems.append(finding["message"])
    merged = dict(result["variables"])
    if isinstance(overrides, dict) and not problems:
        for name, value in overrides.items():
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = format_value(value)
    result["derived"] = result["variables"]
    result["variables"] = dict(sorted(merged.items()))
    result["problems"] = problems
    # What must not be left in the files: retired names the user did not set on purpose.
    result["retired"] = [name for name in RETIRED_VARIABLES if name not in result["variables"]]
    return result


def hca_consistency(hosts):
    """Problems between hosts that must use the same NICs.

    hosts: [{"host": name, "group": consistency group or None, "variables": the host's final variables}].
    Hosts of one group must agree on NCCL_IB_HCA (as a set: the order does not matter to NCCL) and on
    NCCL_IB_DISABLE; otherwise collectives between them fall back or hang.
    """
    groups = {}
    for entry in hosts:
        if entry.get("group"):
            groups.setdefault(entry["group"], []).append(entry)
    problems = []
    for group, members in sorted(groups.items()):
        by_value = {}
        for member in members:
            variables = member.get("variables") or {}
            hca = variables.get("NCCL_IB_HCA")
            key = ("TCP only (NCCL_IB_DISABLE=1)" if variables.get("NCCL_IB_DISABLE") == "1"
                   else ("NCCL_IB_HCA=" + ",".join(sorted(hca.lstrip("=").split(",")))) if hca
                   else "no NCCL_IB_HCA (NCCL uses every port)")
            by_value.setdefault(key, []).append(member["host"])
        if len(by_value) > 1:
            problems.append("consistency group %s: %d different NIC selections, collectives between these hosts "
                            "would fall back or hang: %s" % (group, len(by_value), "; ".join(
                                "%s on %s" % (key, ", ".join(sorted(names))) for key, names in sorted(by_value.items()))))
    return problems


def _cpu_affinity_mask(cpu_list):
    """'0-47,96-143' -> NCCL's comma-separated 32-bit hex words, most significant first."""
    cpus = set()
    for part in (cpu_list or "").split(","):
        part = part.strip()
        if not part:
            continue
        low, _sep, high = part.partition("-")
        cpus.update(range(int(low), int(high or low) + 1))
    if not cpus:
        return None
    mask = sum(1 << cpu for cpu in cpus)
    words = []
    while mask or not words:
        words.append("%08x" % (mask & 0xFFFFFFFF))
        mask >>= 32
    return ",".join(reversed(words))


def topology_xml(topology, hca):
    """An NCCL topology file (NCCL_TOPO_FILE) placing the GPUs and the NICs of hca under their NUMA nodes.

    NCCL loads the file before detecting the topology and completes each PCI device's attributes from sysfs, so
    only placement is written: the NUMA node, each device's PCI bus id, GPU index and RDMA device name. That
    corrects hosts whose PCI topology NCCL cannot see (virtual machines with passthrough devices).
    """
    gpus = (topology.get("gpus") or {}).get("devices") or []
    devices = {device.get("name"): device for device in (topology.get("rdma") or {}).get("devices") or []}
    nics = []
    for entry in hca:
        name, _sep, port = entry.partition(":")
        nics.append((devices.get(name) or {"name": name}, port))
    missing = ["%s (PCI bus id %s, NUMA node %s)" % (gpu.get("name"), gpu.get("pci_bus_id"), gpu.get("numa_node"))
               for gpu in gpus if not gpu.get("pci_bus_id") or gpu.get("numa_node") is None]
    missing += ["%s (PCI address %s, NUMA node %s)" % (nic.get("name"), nic.get("pci_address"), nic.get("numa_node"))
                for nic, _port in nics if not nic.get("pci_address") or nic.get("numa_node") is None]
    if not gpus or missing:
        raise NcclConfigError("an NCCL topology file needs each GPU's and NIC's PCI address and NUMA node; the facts "
                              "lack them for %s: discover with nvidia-smi --query-gpu and sysfs (a live host or a "
                              "full capture), or set nccl_topology_xml: false"
                              % (", ".join(missing) if missing else "every GPU (no GPU in the facts)"))
    numa_nodes = sorted({gpu["numa_node"] for gpu in gpus} | {nic["numa_node"] for nic, _port in nics})
    lines = ['<system version="1">']
    for node in numa_nodes:
        affinity = next((gpu.get("cpu_affinity") for gpu in gpus if gpu["numa_node"] == node and gpu.get("cpu_affinity")),
                        None)
        mask = _cpu_affinity_mask(affinity)
        lines.append('  <cpu numaid=%s%s>' % (quoteattr(str(node)), (" affinity=%s" % quoteattr(mask)) if mask else ""))
        for gpu in gpus:
            if gpu["numa_node"] == node:
                lines.append('    <pci busid=%s>' % quoteattr(gpu["pci_bus_id"].lower()))
                lines.append('      <gpu dev=%s/>' % quoteattr(str(gpu["index"])))
                lines.append('    </pci>')
        for nic, port in nics:
            if nic["numa_node"] == node:
                lines.append('    <pci busid=%s>' % quoteattr(nic["pci_address"].lower()))
                lines.append('      <nic>')
                lines.append('        <net name=%s port=%s/>' % (quoteattr(nic["name"]), quoteattr(port)))
                lines.append('      </nic>')
                lines.append('    </pci>')
        lines.append('  </cpu>')
    lines.append('</system>')
    return "\n".join(lines) + "\n"
