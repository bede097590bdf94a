#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: bandwidth_server
short_description: Start or stop the server side of an iperf3 or perftest bandwidth test
version_added: 0.1.0
description:
  - A bandwidth test runs between two hosts, and an Ansible module runs on one. This module
    starts the server side detached, waits until it listens, and returns at once; the client
    side runs on the other host with M(gpufabric.core.bandwidth_client); O(state=stopped) then
    stops whatever is left, also when the client failed or timed out. Use both in a
    C(block)/C(always), as the C(gpufabric.core.verify) role does.
  - A server serves one test and exits by itself (iperf3 C(-1); perftest servers always do).
    It also runs under C(timeout), so it ends after O(timeout) seconds even if Ansible loses
    the host before O(state=stopped) runs.
  - For perftest tools one server starts per rail, on the rail's NIC, bound to the NIC's
    NUMA node; rails and ports are planned from both hosts' topology facts exactly as the
    client plans them.
  - If one of several servers fails to start, those already started are stopped before the
    module fails.
author:
  - gpufabric.core contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.core.attributes
  - gpufabric.core.bandwidth
options:
  state:
    description:
      - V(started) starts the servers and returns their pids in RV(servers).
      - V(stopped) stops the servers listed in O(servers) that still run and removes their logs.
    type: str
    default: started
    choices: [started, stopped]
  timeout:
    description:
      - Seconds a server may live at most. Keep it above the client's whole run
        (O(duration) plus connection setup).
    type: int
    default: 120
  servers:
    description:
      - With O(state=stopped), the RV(servers) list that O(state=started) returned.
      - A pid is only signalled while its command line still names the test tool, so a pid
        reused by an unrelated process is never touched.
    type: list
    elements: dict
    default: []
attributes:
  check_mode:
    support: full
    details:
      - A test changes nothing persistent on the host, so the server starts in check mode too
        and the sweep measures in check mode as in a normal run.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - O(state=started) reports no change, because the server is transient and leaves nothing behind.
    O(state=stopped) reports a change only when it had to stop a server that still ran,
    which happens when the client never connected.
  - The server's TCP port must be free; the module fails naming the port otherwise.
seealso:
  - module: gpufabric.core.bandwidth_client
  - module: gpufabric.core.topology_facts
"""

EXAMPLES = r"""
- name: Run one iperf3 test from node1 to node2, always cleaning up the server
  block:
    - name: Start the iperf3 server on node2
      gpufabric.core.bandwidth_server:
        tool: iperf3
        duration: 10
      delegate_to: node2
      register: server

    - name: Run the client on node1
      gpufabric.core.bandwidth_client:
        tool: iperf3
        server: 10.0.0.2
        duration: 10
      register: client
  always:
    - name: Stop what is left of the server
      gpufabric.core.bandwidth_server:
        state: stopped
        tool: iperf3
        servers: "{{ server.servers | default([]) }}"
      delegate_to: node2

- name: Start one ib_write_bw server per rail, NUMA-local, GPUDirect
  gpufabric.core.bandwidth_server:
    tool: ib_write_bw
    use_cuda: true
    topology: "{{ gpufabric_topology }}"
    peer_topology: "{{ hostvars['gpu-a01'].gpufabric_topology }}"
  register: rdma_servers
"""

RETURN = r"""
available:
  description: False when a perftest tool was asked for on a host without RDMA rails.
  returned: always
  type: bool
  sample: true
reason:
  description: Why no server started, when RV(available) is false.
  returned: always
  type: str
  sample: "no RDMA device on this host (ibv_devinfo: Failed to get IB devices list)"
servers:
  description: One entry per server started (O(state=started)) or per server asked to stop (O(state=stopped)).
  returned: always
  type: list
  elements: dict
  sample:
    - pid: 4242
      port: 18515
      rail: 0
      device: mlx5_0
      command: "timeout --kill-after=5 120 numactl --cpunodebind=0 --membind=0 ib_write_bw -d mlx5_0 -i 1 -p 18515 -F -D 10 --report_gbits -q 1 -b"
      binding: bound to NUMA node 0 with numactl
      log: /tmp/gpufabric-bw-x1y2/rail-0.log
      tmpdir: /tmp/gpufabric-bw-x1y2
      stopped: false
      output: ""
"""

import os
import shlex
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.verify import bandwidth

# perftest servers need a moment to open their device before listening.
_LISTEN_WAIT_S = 10


def _read_tail(path, limit=4000):
    try:
        with open(path, errors="replace") as handle:
            return handle.read()[-limit:]
    except OSError:
        return ""


def _stop_all(servers, tool):
    stopped_any = False
    for server in servers:
        stopped = bandwidth.stop_server(int(server["pid"]), tool)
        server["stopped"] = stopped
        server["output"] = _read_tail(server.get("log") or "")
        stopped_any = stopped_any or stopped
    for tmpdir in set(server.get("tmpdir") for server in servers if server.get("tmpdir")):
        # Only the directories this module created: mkdtemp's prefix under the temp dir.
        if os.path.basename(tmpdir).startswith("gpufabric-bw-"):
            shutil.rmtree(tmpdir, ignore_errors=True)
    return stopped_any


def _start(module, params):
    try:
        tests, reason = bandwidth.plan_tests(params, "server")
    except bandwidth.BandwidthError as exc:
        module.fail_json(msg=str(exc))
    if reason:
        if params["rdma_required"]:
            module.fail_json(msg="cannot start %s: %s" % (params["tool"], reason), available=False, reason=reason)
        module.exit_json(changed=False, available=False, reason=reason, servers=[])
    if not module.get_bin_path(params["tool"]):
        module.fail_json(msg="%s is not installed on this host; install it first (the gpufabric.core.verify role's install phase does)" % params["tool"])
    busy = sorted(set(test["port"] for test in tests) & bandwidth.current_listening_ports())
    if busy:
        module.fail_json(msg="TCP port %s already has a listener on this host: a test still running, or another service; "
                             "choose another port" % ", ".join(str(port) for port in busy))
    numactl = module.get_bin_path("numactl")
    tmpdir = tempfile.mkdtemp(prefix="gpufabric-bw-")
    servers = []
    try:
        for test in tests:
            argv, binding = bandwidth.command_for(params, test, numactl)
            argv = bandwidth.timeout_argv(params["timeout"], argv)
            log = os.path.join(tmpdir, "rail-%s.log" % test["rail"])
            process = bandwidth.start_detached(argv, log)
            servers.append({
                "pid": process.pid, "port": test["port"], "rail": test["rail"], "device": test.get("device"),
                "command": " ".join(shlex.quote(part) for part in argv), "binding": binding, "log": log, "tmpdir": tmpdir,
                "stopped": False, "output": "",
            })
            bandwidth.wait_listening(process, test["port"], _LISTEN_WAIT_S, log)
    except (bandwidth.BandwidthError, OSError) as exc:
        # Nothing half-started: stop the servers already running before failing.
        _stop_all(servers, params["tool"])
        module.fail_json(msg="cannot start the %s server: %s" % (params["tool"], exc), servers=servers)
    module.exit_json(changed=False, available=True, reason="", servers=servers)


def main():
    argument_spec = bandwidth.test_argument_spec()
    argument_spec.update(
        state=dict(type="str", default="started", choices=["started", "stopped"]),
        timeout=dict(type="int", default=120),
        servers=dict(type="list", elements="dict", default=[]),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    params = module.params
    if params["state"] == "stopped":
        servers = [dict(server) for server in params["servers"] if server.get("pid")]
        stopped = _stop_all(servers, params["tool"])
        module.exit_json(changed=stopped, available=True, reason="", servers=servers)
    problem = bandwidth.check_test_options(params)
    if problem:
        module.fail_json(msg=problem)
    if params["timeout"] <= params["duration"]:
        module.fail_json(msg="timeout (%d s) must be longer than duration (%d s): the server would end before the test does"
                             % (params["timeout"], params["duration"]))
    _start(module, params)


if __name__ == "__main__":
    main()
