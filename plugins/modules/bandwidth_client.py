#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bandwidth_client
short_description: Run the client side of an iperf3 or perftest bandwidth test and return its results
version_added: 0.1.0
description:
  - Runs the client against a server started with M(gpufabric.core.bandwidth_server) on the
    other host, parses the output and returns one result per path in Gbit/s.
  - iperf3 tests the TCP path to O(server); the result names the local interface that carries
    it and that interface's link speed.
  - perftest tools test every rail present on both hosts at the same time, one client per rail
    on the rail's NIC, bound to its NUMA node, with C(--report_gbits); output is read by
    the same parser as the C(gpufabric.core.parse_perftest) filter.
  - Each client runs under C(timeout), O(duration) plus O(timeout_margin) seconds.
author:
  - gpufabric.core contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.core.attributes
  - gpufabric.core.bandwidth
options:
  server:
    description: Address of the host running the server side.
    type: str
    required: true
  name:
    description: This host's name in the results (the inventory name, so that reports join up); its hostname when unset.
    type: str
  peer_name:
    description: The server host's name in the results; O(server) when unset.
    type: str
  peer_device:
    description:
      - iperf3 only - the server's interface, named in the results and the report. perftest results name
        the peer's NIC from O(peer_topology).
    type: str
  timeout_margin:
    description: Seconds a client may run beyond O(duration) (connection setup, perftest warm-up) before it is killed.
    type: int
    default: 30
  fail_on_error:
    description:
      - Fail when a test errs (no server, connection refused, tool error).
      - A sweep sets it to false and lets the gate turn the error into a failure of both hosts,
        so one broken pair does not stop the rounds after it.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    details:
      - A test changes nothing on the host, so it runs in check mode too.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Never reports a change, as it only measures.
seealso:
  - module: gpufabric.core.bandwidth_server
"""

EXAMPLES = r"""
- name: Measure the TCP path to node2 in both directions for 10 s
  gpufabric.core.bandwidth_client:
    tool: iperf3
    server: 10.0.0.2
    name: "{{ inventory_hostname }}"
    peer_name: node2
    duration: 10
  register: tcp_test

- name: Measure every rail towards gpu-a02 with ib_write_bw, GPUDirect, NUMA-local
  gpufabric.core.bandwidth_client:
    tool: ib_write_bw
    server: "{{ hostvars['gpu-a02'].ansible_host }}"
    peer_name: gpu-a02
    use_cuda: true
    topology: "{{ gpufabric_topology }}"
    peer_topology: "{{ hostvars['gpu-a02'].gpufabric_topology }}"
  register: rdma_test
"""

RETURN = r"""
available:
  description: False when a perftest tool was asked for on a host without RDMA rails.
  returned: always
  type: bool
  sample: true
reason:
  description: Why nothing was measured, when RV(available) is false.
  returned: always
  type: str
  sample: ""
started_at:
  description: Unix time at which the clients started.
  returned: always
  type: float
  sample: 1796034399.12
ended_at:
  description: Unix time at which the last client ended.
  returned: always
  type: float
  sample: 1796034409.87
results:
  description: One result per tested path (iperf3) or rail (perftest).
  returned: always
  type: list
  elements: dict
  sample:
    - tool: iperf3
      client: node1
      server: node2
      rail: tcp
      client_device: eth0
      server_device: null
      rate_gbps: 10.0
      client_to_server_gbps: 9.41
      server_to_client_gbps: 9.38
      aggregate_gbps: null
      bidirectional: true
      error: null
      clock_unmeasured: false
      rc: 0
      started_at: 1796034399.12
      ended_at: 1796034409.87
      binding: "no NUMA node for this path: not bound"
      command: iperf3 -c 10.0.0.2 -p 5201 -t 10 -P 1 -J --bidir
      details: {}
"""

import re
import shlex
import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.fabric import sysfs
from ansible_collections.gpufabric.core.plugins.module_utils.verify import bandwidth
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.perftest import parse_perftest

_ROUTE_DEV = re.compile(r"\bdev\s+(\S+)")


def _route_interface(module, server):
    """The local interface and its link speed (Gbit/s) on the route to server."""
    ip = module.get_bin_path("ip")
    if not ip:
        return None, None
    rc, out, _err = module.run_command([ip, "-o", "route", "get", server])
    match = _ROUTE_DEV.search(out) if rc == 0 else None
    if not match:
        return None, None
    device = match.group(1)
    return device, sysfs.net_speed_gbps(device)


def _last_line(text):
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no output"


def _result_of(params, test, rc, output):
    """(bandwidth fields, error, details) of one client's output."""
    tool = params["tool"]
    fields = {"client_to_server_gbps": None, "server_to_client_gbps": None, "aggregate_gbps": None}
    if tool == bandwidth.IPERF3:
        try:
            parsed = bandwidth.parse_iperf3_json(output)
        except ParseError as exc:
            return fields, "%s (exit code %s): %s" % (exc, rc, _last_line(output)), {}
        fields["client_to_server_gbps"] = parsed["client_to_server_gbps"]
        fields["server_to_client_gbps"] = parsed["server_to_client_gbps"]
        return fields, parsed["error"], parsed
    try:
        parsed = parse_perftest(output)
    except ParseError as exc:
        return fields, "%s (exit code %s): %s" % (exc, rc, _last_line(output)), {}
    if parsed["error"] or rc != 0:
        return fields, parsed["error"] or "%s exited with code %s: %s" % (tool, rc, _last_line(output)), parsed
    if parsed["clock_unmeasured"]:
        return fields, "%s could not measure this host's CPU clock (%s), so the zeros it printed are no measurement" % (
            tool, parsed["warnings"][0]), parsed
    value = parsed.get("bw_avg_gbps_max")
    if parsed.get("bidirectional") or params["bidirectional"]:
        fields["aggregate_gbps"] = value
    elif tool == "ib_read_bw":
        # The client reads from the server: data flows server to client.
        fields["server_to_client_gbps"] = value
    else:
        fields["client_to_server_gbps"] = value
    return fields, None, parsed


def main():
    argument_spec = bandwidth.test_argument_spec()
    argument_spec.update(
        server=dict(type="str", required=True),
        name=dict(type="str"),
        peer_name=dict(type="str"),
        peer_device=dict(type="str"),
        timeout_margin=dict(type="int", default=30),
        fail_on_error=dict(type="bool", default=True),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    problem = bandwidth.check_test_options(params)
    if problem:
        module.fail_json(msg=problem)
    if params["timeout_margin"] < 1:
        module.fail_json(msg="timeout_margin must be at least 1 second")
    now = time.time()
    try:
        tests, reason = bandwidth.plan_tests(params, "client")
    except bandwidth.BandwidthError as exc:
        module.fail_json(msg=str(exc))
    if reason:
        if params["rdma_required"]:
            module.fail_json(msg="cannot run %s: %s" % (params["tool"], reason), available=False, reason=reason)
        module.exit_json(changed=False, available=False, reason=reason, results=[], started_at=now, ended_at=now)
    if not module.get_bin_path(params["tool"]):
        module.fail_json(msg="%s is not installed on this host; install it first (the gpufabric.core.verify role's install phase does)" % params["tool"])

    numactl = module.get_bin_path("numactl")
    if params["tool"] == bandwidth.IPERF3:
        tests[0]["device"], tests[0]["rate_gbps"] = _route_interface(module, params["server"])
        tests[0]["peer_device"] = params["peer_device"]
    limit = params["duration"] + params["timeout_margin"]
    commands, bindings = [], []
    try:
        for test in tests:
            argv, binding = bandwidth.command_for(params, test, numactl, server=params["server"])
            commands.append(bandwidth.timeout_argv(limit, argv))
            bindings.append(binding)
    except bandwidth.BandwidthError as exc:
        module.fail_json(msg=str(exc))

    runs = bandwidth.run_concurrently(commands, limit + 10)
    results = []
    for test, argv, binding, (rc, output, started_at, ended_at) in zip(tests, commands, bindings, runs):
        fields, error, details = _result_of(params, test, rc, output)
        result = {
            "tool": params["tool"],
            "client": params["name"] or socket.gethostname(),
            "server": params["peer_name"] or params["server"],
            "rail": test["rail"],
            "client_device": test.get("device"),
            "server_device": test.get("peer_device"),
            "rate_gbps": test.get("rate_gbps"),
            "link_layer": test.get("link_layer"),
            "bidirectional": params["bidirectional"],
            "error": error,
            # The verify role measures such a pair again (verify_clock_retries).
            "clock_unmeasured": bool(details.get("clock_unmeasured")),
            "rc": rc,
            "started_at": round(started_at, 3),
            "ended_at": round(ended_at, 3),
            "binding": binding,
            "command": " ".join(shlex.quote(part) for part in argv),
            "details": details if params["tool"] != bandwidth.IPERF3 else dict(
                (key, details.get(key)) for key in ("version", "protocol", "streams", "duration_s", "retransmits", "reverse_retransmits",
                                                    "cpu_local_percent", "cpu_remote_percent")
            ),
        }
        result.update(fields)
        results.append(result)
    started = min(result["started_at"] for result in results)
    ended = max(result["ended_at"] for result in results)
    errors = ["rail %s: %s" % (result["rail"], result["error"]) for result in results if result["error"]]
    if errors and params["fail_on_error"]:
        module.fail_json(msg="%s to %s failed: %s" % (params["tool"], params["server"], "; ".join(errors)),
                         available=True, reason="", results=results, started_at=started, ended_at=ended)
    module.exit_json(changed=False, available=True, reason="", results=results, started_at=started, ended_at=ended)


if __name__ == "__main__":
    main()
