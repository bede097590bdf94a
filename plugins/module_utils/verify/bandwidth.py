# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Point-to-point bandwidth tests: command lines, iperf3 results, rail plans, server lifecycle.

A test runs between two hosts: a server started detached on one (``bandwidth_server``) and
a client on the other (``bandwidth_client``). Both modules call the functions here so that
they build matching command lines and agree on ports and rails without talking to each
other. Text output of perftest is parsed by ``perftest.parse_perftest``; iperf3's ``-J``
output is JSON and is read here.

Conventions: bandwidth is always in Gbit/s (10^9 bit/s). A test's direction is named from
the client's point of view: ``client_to_server_gbps`` and ``server_to_client_gbps``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from ansible_collections.gpufabric.core.plugins.module_utils.fabric.roce import port_gid_index
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.sysfs_text import cpu_node, format_cpulist

IPERF3 = "iperf3"
PERFTEST_BW_TOOLS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_atomic_bw")
PERFTEST_LAT_TOOLS = ("ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_lat")
PERFTEST_TOOLS = PERFTEST_BW_TOOLS + PERFTEST_LAT_TOOLS
TOOLS = (IPERF3,) + PERFTEST_TOOLS

# The tools' own default ports: iperf3 listens on 5201, perftest exchanges QP data on 18515.
DEFAULT_PORTS = {IPERF3: 5201}
PERFTEST_DEFAULT_PORT = 18515

_TCP_LISTEN = "0A"


class BandwidthError(Exception):
    """A test cannot be planned or run; the message says what to change."""


def default_port(tool):
    return DEFAULT_PORTS.get(tool, PERFTEST_DEFAULT_PORT)


def is_perftest(tool):
    return tool in PERFTEST_TOOLS


# ---------------------------------------------------------------------------------------------
# iperf3 -J
# ---------------------------------------------------------------------------------------------

def _gbps(section):
    if not isinstance(section, dict) or "bits_per_second" not in section:
        return None
    return round(float(section["bits_per_second"]) / 1e9, 3)


def parse_iperf3_json(text):
    """Return the result of one iperf3 client run from its ``-J`` output.

    Keys: error (null or iperf3's own message), version, protocol, streams, duration_s,
    reverse, bidirectional, client_to_server_gbps, server_to_client_gbps (null for a
    direction the run did not measure), retransmits, reverse_retransmits, cpu_local_percent,
    cpu_remote_percent. Rates are taken at the receiver, which is what arrived.
    """
    command = "iperf3 -J"
    if not isinstance(text, str) or not text.strip():
        raise ParseError(command, "the output is empty")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ParseError(command, "not JSON (%s); was iperf3 run without -J?" % exc)
    if not isinstance(data, dict) or not ({"start", "end", "error"} & set(data)):
        raise ParseError(command, "JSON without iperf3's start/end sections")
    start = data.get("start") or {}
    end = data.get("end") or {}
    test_start = start.get("test_start") or {}
    reverse = bool(test_start.get("reverse"))
    bidirectional = bool(test_start.get("bidir")) or "sum_received_bidir_reverse" in end
    # UDP runs report one "sum" seen from the receiver; TCP runs split sent and received.
    forward = end.get("sum_received") or end.get("sum")
    backward = end.get("sum_received_bidir_reverse")
    if reverse and not bidirectional:
        forward, backward = None, forward
    result = {
        "error": data.get("error") or None,
        "version": (start.get("version") or "").strip() or None,
        "protocol": test_start.get("protocol"),
        "streams": test_start.get("num_streams"),
        "duration_s": test_start.get("duration"),
        "reverse": reverse,
        "bidirectional": bidirectional,
        "client_to_server_gbps": _gbps(forward),
        "server_to_client_gbps": _gbps(backward),
        "retransmits": (end.get("sum_sent") or {}).get("retransmits"),
        "reverse_retransmits": (end.get("sum_sent_bidir_reverse") or {}).get("retransmits"),
        "cpu_local_percent": (end.get("cpu_utilization_percent") or {}).get("host_total"),
        "cpu_remote_percent": (end.get("cpu_utilization_percent") or {}).get("remote_total"),
    }
    if result["error"] is None and result["client_to_server_gbps"] is None and result["server_to_client_gbps"] is None:
        raise ParseError(command, "no end.sum_received or end.sum section: the run did not finish")
    return result


# ---------------------------------------------------------------------------------------------
# Command lines
# ---------------------------------------------------------------------------------------------

def iperf3_server_argv(port, bind_address=None):
    """iperf3 server serving exactly one test (-1), so it exits by itself when the client is done."""
    argv = [IPERF3, "-s", "-1", "-J", "-p", str(port)]
    if bind_address:
        argv += ["-B", bind_address]
    return argv


def iperf3_client_argv(server, port, duration, streams=1, bidirectional=True, bind_address=None, extra_args=()):
    argv = [IPERF3, "-c", server, "-p", str(port), "-t", str(duration), "-P", str(streams), "-J"]
    if bidirectional:
        argv.append("--bidir")
    if bind_address:
        argv += ["-B", bind_address]
    return argv + list(extra_args)


def perftest_argv(tool, test, duration, message_size=None, qps=1, bidirectional=False, use_cuda=False, server=None, extra_args=()):
    """ib_*_bw / ib_*_lat command line for one rail; server=None builds the server side.

    Both sides take the same test parameters: perftest exchanges them and refuses a mismatch.
    """
    if not is_perftest(tool):
        raise BandwidthError("%s is not a perftest tool; choose one of %s" % (tool, ", ".join(PERFTEST_TOOLS)))
    argv = [tool, "-d", test["device"], "-i", str(test.get("ib_port") or 1), "-p", str(test["port"]), "-F"]
    if tool in PERFTEST_BW_TOOLS:
        # Duration mode bounds the run's time whatever the link does; bandwidth in Gbit/s.
        argv += ["-D", str(duration), "--report_gbits", "-q", str(qps)]
        if bidirectional:
            argv.append("-b")
    if message_size:
        argv += ["-s", str(message_size)]
    if test.get("gid_index") is not None:
        argv += ["-x", str(test["gid_index"])]
    if use_cuda:
        if test.get("cuda_device") is None:
            raise BandwidthError(
                "use_cuda is set but rail %s has no GPU index; GPUDirect needs the rail's GPU from the topology facts"
                % test.get("rail")
            )
        argv.append("--use_cuda=%d" % test["cuda_device"])
    argv += list(extra_args)
    if server:
        argv.append(server)
    return argv


def timeout_argv(seconds, argv):
    """Wrap argv in coreutils timeout: the process ends even when Ansible loses the host."""
    return ["timeout", "--kill-after=5", str(int(seconds)), *argv]


def numa_binding_node(numa_node, sysfs_root="/sys"):
    """The NUMA node to bind a test of the NIC's node numa_node to: (node, its cpulist or None, remark).

    The node itself when it has CPUs. On a Grace host a GPU's memory is a NUMA node without CPUs, which numactl
    --cpunodebind refuses: the nearest node with CPUs (the kernel's distance table) runs the test instead, and
    the remark says so. node is -1 when no node with CPUs is known; the cpulist is None without NUMA sysfs.
    """
    node, cpus = cpu_node(numa_node, sysfs_root)
    if cpus is None:
        return numa_node, None, ""
    if not cpus:
        return -1, None, "NUMA node %d has no CPUs and no node with CPUs is known" % numa_node
    remark = "" if node == numa_node else " (node %d has no CPUs; %d is the nearest that has)" % (numa_node, node)
    return node, format_cpulist(cpus), remark


def numa_binding_argv(numa_node, numactl_path=None, cpulist=None):
    """Prefix that runs a test on the CPUs (and memory) of the NIC's NUMA node.

    numactl binds memory too; taskset (util-linux, always present) binds CPUs only.
    Returns ([], reason) when no binding is possible.
    """
    if numa_node is None or int(numa_node) < 0:
        return [], "the NIC's NUMA node is unknown: not bound"
    if numactl_path:
        return [numactl_path, "--cpunodebind=%d" % numa_node, "--membind=%d" % numa_node], None
    if cpulist:
        return ["taskset", "-c", cpulist], None
    return [], "numactl is missing and NUMA node %d has no cpulist: not bound" % numa_node


# ---------------------------------------------------------------------------------------------
# Rails: which NIC of each host takes part in a perftest test
# ---------------------------------------------------------------------------------------------

RAILS_FROM = ("gpus", "rdma_devices")
# Where the facts' rails came from (topology.resolve_rails) that each rails_from accepts: "gpus" refuses the rails
# of a host whose facts hold no GPU (every RDMA device, storage NICs included), as it always did.
RAIL_SOURCES_OF = {"gpus": ("inventory", "gpu"), "rdma_devices": ("inventory", "gpu", "rdma_devices")}


def sweep_rails(topology, rails_from="gpus"):
    """The rails a test sweeps: the rails topology_facts resolved (gpufabric_topology.rails), none derived here.

    rails_from "gpus" takes them when they come from the inventory or the GPUs; "rdma_devices" also when they are
    the RDMA devices of a host without GPUs.
    """
    if rails_from not in RAILS_FROM:
        raise BandwidthError("rails_from must be one of %s, got %r" % (", ".join(RAILS_FROM), rails_from))
    rails = topology.get("rails") or []
    source = topology.get("rail_source") or ("gpu" if rails else "none")
    if source not in RAIL_SOURCES_OF[rails_from]:
        return []
    # An inventory rail on a plain Ethernet netdev has no RDMA device for perftest.
    return [rail for rail in rails if rail.get("device")]


def rdma_unavailable_reason(topology, rails_from="gpus"):
    """None when the topology facts show RDMA rails to test, else a sentence saying why not."""
    if not isinstance(topology, dict) or not topology:
        return "no gpufabric_topology facts: run gpufabric.core.topology_facts first"
    rdma = topology.get("rdma") or {}
    if rdma.get("available") is False:
        return "no RDMA device on this host (%s)" % (rdma.get("reason") or "topology_facts found none")
    rails = sweep_rails(topology, rails_from)
    if not rails:
        if topology.get("rail_source") == "rdma_devices":
            return ("the rails in the topology facts are the RDMA devices of a host without GPUs: test them with "
                    "rails_from=rdma_devices, or name them in gpufabric_rail_interfaces")
        return ("no RDMA rails in the topology facts: no GPU has a nearest RDMA NIC, no RDMA device has an ACTIVE "
                "port, and gpufabric_rail_interfaces names no RDMA netdev")
    return None


def _gid_index(topology, device, port):
    """The RoCE v2 GID index to test on, the one NCCL is given (fabric/roce.py, port_gid_index): a VLAN's IPv4 GID
    over the untagged one, since the fabric's RoCE traffic rides the VLAN; the port's first IPv4 RoCE v2 GID
    when the facts cannot tell (several VLANs, or no per-address table)."""
    for entry in (topology.get("rdma") or {}).get("devices") or []:
        if entry.get("name") != device:
            continue
        for port_entry in entry.get("ports") or []:
            if port_entry.get("port") == port:
                index, _reason = port_gid_index(port_entry)
                return port_entry.get("roce_v2_gid_index") if index is None else index
    return None


def _cuda_device(rail):
    gpu = rail.get("gpu")
    if isinstance(gpu, int):
        return gpu
    if isinstance(gpu, str) and gpu.upper().startswith("GPU") and gpu[3:].isdigit():
        return int(gpu[3:])
    return None


def _rail_test(topology, rail, port):
    device = rail.get("device")
    ib_port = rail.get("port") or 1
    gid_index = None
    if str(rail.get("link_layer") or "").lower() == "ethernet":
        # RoCE needs the RoCE v2 GID index; InfiniBand addresses by LID.
        gid_index = _gid_index(topology, device, ib_port)
    return {
        "rail": rail.get("rail"),
        "device": device,
        "ib_port": ib_port,
        "port": port,
        "gid_index": gid_index,
        "numa_node": rail.get("numa_node"),
        "cuda_device": _cuda_device(rail),
        "rate_gbps": rail.get("rate_gbps"),
        "link_layer": rail.get("link_layer"),
        "netdev": rail.get("netdev"),
    }


def plan_rail_tests(local_topology, peer_topology, base_port, rails=None, rails_from="gpus"):
    """The per-rail tests of one host pair, seen from the local host.

    Both ends call this with their own and the peer's topology and get the same rails and
    ports: rail r runs on base_port + r. Only rails present on both hosts are tested.
    rails: list of rail numbers to restrict to (None: all common rails).
    rails_from: "gpus" or "rdma_devices", which rails of the facts may be tested (sweep_rails).
    Returns a list of test dicts (local device, peer_device, port, ...), sorted by rail.
    """
    for which, topology in (("this host", local_topology), ("the peer", peer_topology)):
        reason = rdma_unavailable_reason(topology, rails_from)
        if reason:
            raise BandwidthError("cannot plan a perftest test: %s: %s" % (which, reason))
    local = dict((rail.get("rail"), rail) for rail in sweep_rails(local_topology, rails_from))
    peer = dict((rail.get("rail"), rail) for rail in sweep_rails(peer_topology, rails_from))
    common = sorted(set(local) & set(peer), key=lambda number: (str(type(number)), number))
    if rails:
        missing = [number for number in rails if number not in common]
        if missing:
            raise BandwidthError(
                "rails %s are not present on both hosts (common rails: %s)"
                % (", ".join(str(number) for number in missing), ", ".join(str(number) for number in common) or "none")
            )
        common = [number for number in common if number in rails]
    if not common:
        raise BandwidthError("the two hosts have no rail number in common")
    tests = []
    for number in common:
        test = _rail_test(local_topology, local[number], base_port + int(number))
        peer_rail = peer[number]
        test["peer_device"] = peer_rail.get("device")
        rates = [rate for rate in (local[number].get("rate_gbps"), peer_rail.get("rate_gbps")) if rate]
        # The slower end bounds the pair: its rate is what the gate can expect.
        test["rate_gbps"] = min(rates) if rates else None
        tests.append(test)
    return tests


# ---------------------------------------------------------------------------------------------
# Processes: detached servers and their cleanup
# ---------------------------------------------------------------------------------------------

def listening_tcp_ports(proc_net_texts):
    """TCP ports in LISTEN state, from the text of /proc/net/tcp and /proc/net/tcp6."""
    ports = set()
    for text in proc_net_texts:
        for line in text.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 4 or ":" not in fields[1]:
                continue
            if fields[3] == _TCP_LISTEN:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return ""


def current_listening_ports():
    return listening_tcp_ports([_read("/proc/net/tcp"), _read("/proc/net/tcp6")])


def process_alive(pid):
    """True while pid runs and is not a zombie."""
    status = _read("/proc/%d/stat" % pid)
    if not status:
        return False
    # The state field follows the parenthesised command name, which may hold spaces.
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def process_command(pid):
    return [part for part in _read("/proc/%d/cmdline" % pid).split("\0") if part]


def start_detached(argv, log_path):
    """Start argv in its own session, output to log_path; the process survives this module."""
    with open(log_path, "wb") as log, open(os.devnull, "rb") as devnull:
        # run_command cannot leave a process running after the module returns.
        process = subprocess.Popen(  # pylint: disable=ansible-bad-function
            argv, stdin=devnull, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
    return process


def wait_listening(process, port, deadline_s, log_path):
    """Wait until a started server listens on port; raise BandwidthError with its output if it exits."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BandwidthError(
                "the server exited with code %s before listening on port %d: %s"
                % (process.returncode, port, _read(log_path).strip()[-800:] or "no output")
            )
        if port in current_listening_ports():
            return
        time.sleep(0.05)
    raise BandwidthError("the server did not listen on port %d within %ss: %s" % (port, deadline_s, _read(log_path).strip()[-800:] or "no output"))


def stop_server(pid, expected_tool, grace_s=3.0):
    """Stop a server this collection started, by its process group; return True if it was running.

    The pid is only signalled when its command line still names expected_tool, so a pid
    reused by another process after the server ended is never touched.
    """
    if not process_alive(pid):
        return False
    command = process_command(pid)
    if not any(os.path.basename(part) == expected_tool for part in command):
        return False
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and process_alive(pid):
        time.sleep(0.05)
    if process_alive(pid):
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return True


def run_concurrently(commands, timeout_s):
    """Run several argv lists at once (one per rail); return [(rc, output, started, ended)].

    Each command is wrapped in coreutils timeout by the caller; timeout_s is a backstop.
    """
    started_at = time.time()
    # run_command runs one command at a time; the rails are measured at once.
    processes = [
        subprocess.Popen(  # pylint: disable=ansible-bad-function
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
        for argv in commands
    ]
    results = []
    for process in processes:
        try:
            output, _unused = process.communicate(timeout=max(1.0, timeout_s - (time.time() - started_at)))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _unused = process.communicate()
            output = (output or b"") + b"\nkilled: the test ran past its timeout"
        results.append((process.returncode, output.decode("utf-8", errors="replace"), started_at, time.time()))
    return results


def test_argument_spec():
    """Options both ends of a test take; they must match or perftest refuses the connection."""
    return dict(
        tool=dict(type="str", default=IPERF3, choices=list(TOOLS)),
        port=dict(type="int"),
        duration=dict(type="int", default=10),
        streams=dict(type="int", default=1),
        bidirectional=dict(type="bool", default=True),
        message_size=dict(type="int"),
        qps=dict(type="int", default=1),
        use_cuda=dict(type="bool", default=False),
        numa_binding=dict(type="bool", default=True),
        topology=dict(type="dict"),
        peer_topology=dict(type="dict"),
        rails=dict(type="list", elements="int"),
        rails_from=dict(type="str", default="gpus", choices=list(RAILS_FROM)),
        rdma_required=dict(type="bool", default=False),
        bind_address=dict(type="str"),
        extra_args=dict(type="list", elements="str", default=[]),
    )


def check_test_options(params):
    """Error message for unusable test options, or None."""
    for name in ("duration", "streams", "qps"):
        if params[name] < 1:
            return "%s must be at least 1, got %d" % (name, params[name])
    port = params["port"]
    if port is not None and not 1 <= port <= 65535:
        return "port must be in 1-65535, got %d" % port
    if params["message_size"] is not None and params["message_size"] < 1:
        return "message_size must be a positive number of bytes"
    if is_perftest(params["tool"]) and params["topology"] is None:
        return "tool %s needs topology (this host's gpufabric_topology facts) to choose the NIC of each rail" % params["tool"]
    if params["use_cuda"] and not is_perftest(params["tool"]):
        return "use_cuda applies to perftest tools only, not %s" % params["tool"]
    return None


def plan_tests(params, local_role):
    """The tests of one pair as one end sees them; local_role is "client" or "server".

    iperf3 has a single test on the TCP path; perftest has one per rail, planned from the
    topology facts. Returns (tests, unavailable_reason).
    """
    tool = params["tool"]
    base_port = params["port"] or default_port(tool)
    if not is_perftest(tool):
        return [{"rail": "tcp", "port": base_port, "device": None, "peer_device": None, "numa_node": None, "rate_gbps": None}], None
    reason = rdma_unavailable_reason(params["topology"], params["rails_from"])
    if reason:
        return [], reason
    if params["peer_topology"] is None:
        raise BandwidthError("peer_topology (the %s's gpufabric_topology) is required to match rails" % ("server" if local_role == "client" else "client"))
    return plan_rail_tests(params["topology"], params["peer_topology"], base_port, params["rails"], params["rails_from"]), None


def command_for(params, test, numactl_path, server=None, sysfs_root="/sys"):
    """The full argv of one end of one test: timeout, NUMA binding, then the tool."""
    tool = params["tool"]
    if tool == IPERF3:
        if server:
            argv = iperf3_client_argv(
                server, test["port"], params["duration"], params["streams"], params["bidirectional"], params["bind_address"], params["extra_args"],
            )
        else:
            argv = iperf3_server_argv(test["port"], params["bind_address"])
    else:
        argv = perftest_argv(
            tool, test, params["duration"], params["message_size"], params["qps"], params["bidirectional"], params["use_cuda"], server, params["extra_args"],
        )
    binding_note = "NUMA binding disabled"
    if params["numa_binding"] and test.get("numa_node") is not None:
        node, cpulist, remark = numa_binding_node(test["numa_node"], sysfs_root) if test["numa_node"] >= 0 else (-1, None, "")
        prefix, binding_note = numa_binding_argv(node, numactl_path, cpulist)
        if node < 0 and remark:
            binding_note = remark + ": not bound"
        binding_note = binding_note or "bound to NUMA node %d%s with %s" % (node, remark, os.path.basename(prefix[0]))
        argv = prefix + argv
    elif params["numa_binding"]:
        binding_note = "no NUMA node for this path: not bound"
    return argv, binding_note
