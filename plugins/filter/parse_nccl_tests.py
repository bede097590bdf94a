# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: parse_nccl_tests
short_description: Parse the output of nccl-tests (all_reduce_perf, all_gather_perf, sendrecv_perf ...)
version_added: 0.1.0
description:
  - Parses the text printed by an nccl-tests benchmark into plain data. The results table is read through its own
    header line, so the old layout (an C(error) column with the largest numerical error, no C(root)) and the
    current one (C(root) and C(#wrong) columns) parse alike.
  - NCCL_DEBUG lines interleaved with the rows, CRLF line endings and unknown extra columns are skipped.
  - Bandwidths stay in GB/s (10^9 bytes per second) as nccl-tests prints them.
  - RV(_value.error) says why a run failed, from the test's own failure lines (C(Test CUDA failure ...),
    C(Test NCCL failure ...)), out-of-bounds values, or an output that stops before its results.
  - Raises an error naming the problem when the text is not nccl-tests output.
options:
  _input:
    description: The standard output of one nccl-tests run (with NCCL_DEBUG lines or without).
    type: string
    required: true
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Run all_reduce_perf over the GPUs of one node
  ansible.builtin.command:
    argv: [all_reduce_perf, -b, 8, -e, 8G, -f, "2", -g, "8"]
  register: all_reduce
  changed_when: false
  failed_when: false

- name: Gate on the average bus bandwidth
  vars:
    result: "{{ all_reduce.stdout | gpufabric.core.parse_nccl_tests }}"
  ansible.builtin.assert:
    that:
      - result.error is none
      - result.avg_bus_bandwidth >= 100
    fail_msg: "all_reduce_perf: {{ result.error or (result.avg_bus_bandwidth ~ ' GB/s average bus bandwidth, expected 100') }}"
    quiet: true
"""

RETURN = r"""
_value:
  description: The run's parameters, rows and outcome.
  type: dict
  contains:
    test:
      description: The benchmark name when printed (C(# Collective test starting)), else null.
      type: str
      sample: gather_perf
    parameters:
      description: C(n_threads), C(n_gpus), C(min_bytes), C(max_bytes), C(warmup_iters), C(iters) from the
        C(# nThread) line; null where absent.
      type: dict
      sample: {"n_threads": 1, "n_gpus": 1, "min_bytes": 1073741824, "max_bytes": 27950841856, "warmup_iters": 5, "iters": 20}
    ranks:
      description: One entry per C(# Rank) line, with or without the C(Group) field of newer nccl-tests (C(group) null without it).
      type: list
      elements: dict
      sample: [{"rank": 0, "group": 0, "pid": 574691, "host": "node1", "device": 0, "bus_id": "0000:06:00", "model": "NVIDIA H100 80GB HBM3"}]
    rows:
      description:
        - One entry per message size, C({size_bytes, count, type, redop, root, out_of_place, in_place}); each side is
          C({time_us, algbw, busbw, wrong, max_error}) with bandwidths in GB/s.
        - C(wrong) is the C(#wrong) count (null for C(N/A) and in the old layout), C(max_error) the old layout's
          C(error) column (null in the current one); C(redop) and C(root) are null when the layout lacks them.
      type: list
      elements: dict
      sample:
        - size_bytes: 1073741824
          count: 268435456
          type: float
          redop: sum
          root: -1
          out_of_place: {time_us: 71024.0, algbw: 15.12, busbw: 15.12, wrong: 0, max_error: null}
          in_place: {time_us: 70967.0, algbw: 15.13, busbw: 15.13, wrong: 0, max_error: null}
    avg_bus_bandwidth:
      description: The C(# Avg bus bandwidth) line in GB/s, as printed; null when absent.
      type: float
      sample: 15.0418
    busbw_max:
      description: The highest bus bandwidth of any row, GB/s; null without rows.
      type: float
      sample: 15.18
    wrong:
      description: Out-of-bounds values in total (C(# Out of bounds values), else the sum of C(#wrong)); null when
        neither was printed.
      type: int
      sample: 0
    error:
      description: Null, or why the run failed.
      type: str
      sample: "gpu: Test CUDA failure common.cu:1030 'system not yet initialized'"
    errors:
      description:
        - What could not be read, the run's verdict aside - a results table without rows, results without any rank
          line, a line that looks like a results row but does not fit the header (named by its line number).
      type: list
      elements: str
      sample: ["the results table has no rank line ('#  Rank  0 Group  0 Pid ... device ...') before it: the GPUs of the run are unknown"]
"""


class FilterModule:
    """The parse_nccl_tests filter."""

    def filters(self):
        return {"parse_nccl_tests": raising_filter_error("parse_nccl_tests", parse_nccl_tests, ParseError)}
