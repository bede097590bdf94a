#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_test
short_description: Run an nccl-tests benchmark on one node or across nodes and return its bus bandwidth
version_added: 0.1.0
description:
  - Runs an nccl-tests binary (C(all_reduce_perf) by default) on all GPUs of this host, or,
    when O(hosts) names several hosts, across them through C(mpirun) (one rank per GPU).
  - The output is read by the same parser as the C(gpufabric.core.parse_nccl_tests) filter.
    RV(busbw_gbytes) is the out-of-place bus bandwidth at the largest message size, the
    plateau figure a gate compares with its threshold.
  - When the binary, C(mpirun) or the GPUs are missing the module says so in RV(reason) and
    changes nothing; it fails only with O(required=true).
author:
  - gpufabric.core contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.core.attributes
options:
  binary:
    description: The nccl-tests program, a name looked up in PATH and O(search_paths), or an absolute path.
    type: str
    default: all_reduce_perf
  search_paths:
    description: Directories searched for O(binary) besides PATH (where nccl-tests builds usually land).
    type: list
    elements: path
    default: [/usr/local/bin, /opt/nccl-tests/build, /usr/local/nccl-tests/build]
  gpus:
    description:
      - GPUs per host. Unset, the count of GPUs in O(topology).
    type: int
  topology:
    description: This host's C(gpufabric_topology) facts, used to count its GPUs when O(gpus) is unset.
    type: dict
  hosts:
    description:
      - Hosts of a multi-node run, as C(mpirun) reaches them; the first should be this host.
        Empty or a single host runs on this host alone, without mpirun.
    type: list
    elements: str
    default: []
  mpirun:
    description: The MPI launcher for multi-node runs.
    type: str
    default: mpirun
  mpirun_args:
    description: Further launcher arguments (transport selection, C(--allow-run-as-root), ...).
    type: list
    elements: str
    default: []
  min_bytes:
    description: Smallest message size (C(-b)), with nccl-tests' K/M/G suffixes.
    type: str
    default: "8"
  max_bytes:
    description: Largest message size (C(-e)).
    type: str
    default: 8G
  step_factor:
    description: Multiplication factor between sizes (C(-f)).
    type: int
    default: 2
  iterations:
    description: Timed iterations per size (C(-n)).
    type: int
    default: 20
  warmup_iterations:
    description: Warm-up iterations per size (C(-w)).
    type: int
    default: 5
  environment:
    description: Variables for the run (C(NCCL_IB_HCA), C(NCCL_DEBUG), ...); passed to every rank with C(-x) in multi-node runs.
    type: dict
    default: {}
  timeout:
    description: Seconds the run may take before it is killed.
    type: int
    default: 900
  required:
    description: Fail, instead of reporting RV(available=false), when the binary, mpirun or the GPUs are missing.
    type: bool
    default: false
  name:
    description: Name of this run in reports.
    type: str
attributes:
  check_mode:
    support: full
    details:
      - A benchmark changes nothing on the host, so it runs in check mode too.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - Never reports a change, as it only measures.
  - Multi-node runs need passwordless SSH between the hosts for mpirun, as any MPI launch does.
seealso:
  - module: gpufabric.core.bandwidth_client
"""

EXAMPLES = r"""
- name: all_reduce_perf on the 8 GPUs of this host
  gpufabric.core.nccl_test:
    topology: "{{ gpufabric_topology }}"
    name: "{{ inventory_hostname }}"
  register: nccl_single

- name: all_reduce_perf across two nodes through mpirun
  gpufabric.core.nccl_test:
    hosts: [gpu-a01, gpu-a02]
    gpus: 8
    mpirun_args: [--allow-run-as-root, --mca, btl_tcp_if_include, eth0]
    environment:
      NCCL_IB_HCA: "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"
  run_once: true
  register: nccl_multi
"""

RETURN = r"""
available:
  description: False when the binary, mpirun or the GPUs are missing.
  returned: always
  type: bool
  sample: true
reason:
  description: Why nothing ran, when RV(available) is false.
  returned: always
  type: str
  sample: "all_reduce_perf not found in PATH or /usr/local/bin, /opt/nccl-tests/build"
name:
  description: The run's name.
  returned: always
  type: str
  sample: gpu-a01
scope:
  description: V(single_node) or V(multi_node).
  returned: always
  type: str
  sample: single_node
hosts:
  description: Hosts of the run.
  returned: always
  type: list
  elements: str
  sample: [gpu-a01]
command:
  description: The command line run.
  returned: when available
  type: str
  sample: "all_reduce_perf -b 8 -e 8G -f 2 -n 20 -w 5 -g 8"
rc:
  description: Exit code.
  returned: when available
  type: int
  sample: 0
busbw_gbytes:
  description: Bus bandwidth in GB/s a gate reads (see RV(basis)); null when the run failed.
  returned: always
  type: float
  sample: 229.87
basis:
  description: Which figure RV(busbw_gbytes) is.
  returned: always
  type: str
  sample: out-of-place busbw at 8589934592 bytes
avg_bus_bandwidth:
  description: The "Avg bus bandwidth" nccl-tests printed, GB/s.
  returned: always
  type: float
  sample: 112.5
wrong:
  description: Wrong results (out-of-bounds values) counted by nccl-tests; null when the run checked no result
    (C(-c 0), every C(#wrong) cell N/A).
  returned: always
  type: int
  sample: 0
error:
  description: Null, or the failure message.
  returned: always
  type: str
  sample: null
parsed:
  description: Everything the parser read (rows, ranks, parameters).
  returned: when available
  type: dict
  sample: {}
started_at:
  description: Unix time at which the run started.
  returned: always
  type: float
  sample: 1796034399.1
ended_at:
  description: Unix time at which the run ended.
  returned: always
  type: float
  sample: 1796034460.4
"""

import os
import shlex
import socket
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.verify.gates import nccl_busbw
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError


def _gpu_count(params):
    if params["gpus"] is not None:
        return params["gpus"], None
    gpus = (params["topology"] or {}).get("gpus") or {}
    if not params["topology"]:
        return 0, "gpus is unset and no topology was given to count this host's GPUs"
    if gpus.get("available") is False or not gpus.get("devices"):
        return 0, "no GPU on this host (%s)" % (gpus.get("reason") or "the topology lists none")
    return len(gpus["devices"]), None


def _unavailable(module, params, base, reason):
    if params["required"]:
        module.fail_json(msg="cannot run nccl-tests: %s" % reason, available=False, reason=reason)
    base.update(available=False, reason=reason)
    module.exit_json(**base)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            binary=dict(type="str", default="all_reduce_perf"),
            search_paths=dict(type="list", elements="path", default=["/usr/local/bin", "/opt/nccl-tests/build", "/usr/local/nccl-tests/build"]),
            gpus=dict(type="int"),
            topology=dict(type="dict"),
            hosts=dict(type="list", elements="str", default=[]),
            mpirun=dict(type="str", default="mpirun"),
            mpirun_args=dict(type="list", elements="str", default=[]),
            min_bytes=dict(type="str", default="8"),
            max_bytes=dict(type="str", default="8G"),
            step_factor=dict(type="int", default=2),
            iterations=dict(type="int", default=20),
            warmup_iterations=dict(type="int", default=5),
            environment=dict(type="dict", default={}),
            timeout=dict(type="int", default=900),
            required=dict(type="bool", default=False),
            name=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    hosts = params["hosts"] or [socket.gethostname()]
    multi_node = len(hosts) > 1
    now = time.time()
    base = dict(
        changed=False, available=True, reason="", name=params["name"] or ",".join(hosts),
        scope="multi_node" if multi_node else "single_node", hosts=hosts, busbw_gbytes=None, basis="",
        avg_bus_bandwidth=None, wrong=None, error=None, started_at=now, ended_at=now,
    )
    for option in ("step_factor", "iterations", "timeout"):
        if params[option] < 1:
            module.fail_json(msg="%s must be at least 1, got %d" % (option, params[option]))
    if params["warmup_iterations"] < 0:
        module.fail_json(msg="warmup_iterations must not be negative")

    gpus, reason = _gpu_count(params)
    if reason:
        _unavailable(module, params, base, reason)
    if gpus < 1:
        module.fail_json(msg="gpus must be at least 1, got %d" % gpus)
    binary = params["binary"]
    if not os.path.isabs(binary):
        binary = module.get_bin_path(binary, opt_dirs=params["search_paths"])
    if not binary or not os.access(binary, os.X_OK):
        _unavailable(module, params, base, "%s not found in PATH or %s" % (params["binary"], ", ".join(params["search_paths"])))
    sizes = ["-b", params["min_bytes"], "-e", params["max_bytes"], "-f", str(params["step_factor"]),
             "-n", str(params["iterations"]), "-w", str(params["warmup_iterations"])]
    environment = dict((str(key), str(value)) for key, value in params["environment"].items())
    if multi_node:
        mpirun = module.get_bin_path(params["mpirun"])
        if not mpirun:
            _unavailable(module, params, base, "%s not found: multi-node nccl-tests need an MPI launcher" % params["mpirun"])
        argv = [mpirun, "-np", str(gpus * len(hosts)), "-H", ",".join("%s:%d" % (host, gpus) for host in hosts), "--bind-to", "none"]
        for key in sorted(environment):
            argv += ["-x", key]
        argv += list(params["mpirun_args"]) + [binary] + sizes + ["-g", "1"]
    else:
        argv = [binary] + sizes + ["-g", str(gpus)]
    argv = ["timeout", "--kill-after=10", str(params["timeout"])] + argv

    started_at = time.time()
    rc, out, err = module.run_command(argv, environ_update=environment)
    base.update(started_at=round(started_at, 3), ended_at=round(time.time(), 3), command=" ".join(shlex.quote(part) for part in argv), rc=rc)
    output = out + ("\n" + err if err else "")
    try:
        parsed = parse_nccl_tests(output)
    except ParseError as exc:
        base.update(error="%s (exit code %d): %s" % (exc, rc, (output.strip().splitlines() or ["no output"])[-1][:300]), parsed={})
        module.exit_json(**base)
    busbw, basis = nccl_busbw(parsed)
    error = parsed.get("error")
    if not error and rc != 0:
        error = "exited with code %d%s" % (rc, " (killed by the %d s timeout)" % params["timeout"] if rc in (124, 137) else "")
    base.update(busbw_gbytes=busbw, basis=basis, avg_bus_bandwidth=parsed.get("avg_bus_bandwidth"), wrong=parsed.get("wrong"), error=error, parsed=parsed)
    module.exit_json(**base)


if __name__ == "__main__":
    main()
