# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.perftest import parse_perftest
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: parse_perftest
short_description: Parse the output of perftest (ib_write_bw, ib_read_bw, ib_send_bw, ib_*_lat)
version_added: 0.1.0
description:
  - Parses the text printed by a perftest tool, client or server side, into plain data. Reads the perftest 1.x
    layout (no message rate column), the current two-column parameter block, C(-a) all-sizes tables, and warning
    lines printed inside a table (kept in RV(_value.warnings), not fatal).
  - Every bandwidth is returned in Gbit/s (10^9 bit/s), the unit of port rates. C(Gb/sec) (C(--report_gbits)) is
    taken as printed. C(MB/sec) and C(MiB/sec) are both 2^20 bytes per second, as perftest's own source computes
    them (it divides by C(0x100000) under either label), so they are multiplied by 0.008388608.
  - A run that failed returns its rows so far and RV(_value.error), the tool's own error lines.
  - Latency tools return their C(t_min), C(t_max), C(t_typical), C(t_avg), C(t_stdev) and percentile columns as
    printed. No captured latency output is in the project's fixtures yet; that path is tested on outputs written
    from the column definitions in perftest's source.
  - Raises an error naming the problem when the text is not perftest output or a column has an unknown unit.
options:
  _input:
    description: The standard output (and error) of one perftest run.
    type: string
    required: true
author:
  - gpufabric.core contributors
"""

EXAMPLES = r"""
- name: Run the client side of a bandwidth test
  ansible.builtin.command:
    argv: [ib_write_bw, -d, mlx5_0, -F, --report_gbits, -D, "10", "{{ server_address }}"]
  register: write_bw
  changed_when: false
  failed_when: false

- name: Gate on 90 % of a 400 Gbit/s port
  vars:
    result: "{{ (write_bw.stdout ~ '\n' ~ write_bw.stderr) | gpufabric.core.parse_perftest }}"
  ansible.builtin.assert:
    that:
      - result.error is none
      - result.bw_avg_gbps_max is not none
      - result.bw_avg_gbps_max >= 360
    fail_msg: "{{ result.device }}: {{ result.error or (result.bw_avg_gbps_max ~ ' Gbit/s, expected 360') }}"
    quiet: true
"""

RETURN = r"""
_value:
  description: The run's parameters, rows and outcome.
  type: dict
  contains:
    test:
      description: The title without C(Test); null when the output has no title (an error alone, a waiting server).
      type: str
      sample: RDMA_Write BW
    kind:
      description: C(bw) or C(lat); null when no results table was printed.
      type: str
      sample: bw
    side:
      description: C(server) when the server's C(Waiting for client to connect) banner is present, else C(client).
      type: str
      sample: client
    device:
      description: The RDMA device the run used.
      type: str
      sample: mlx5_0
    link_layer:
      description: C(InfiniBand) or C(Ethernet) (RoCE), the vocabulary of C(gpufabric_topology); null when not printed.
      type: str
      sample: Ethernet
    connection_type:
      description: The QP type (C(RC), C(UC), C(UD) ...).
      type: str
      sample: RC
    transport_type:
      description: The transport perftest reports (C(IB) also for RoCE).
      type: str
      sample: IB
    num_qps:
      description: Number of queue pairs.
      type: int
      sample: 1
    mtu:
      description: The MTU in bytes.
      type: int
      sample: 4096
    gid_index:
      description: The GID index (RoCE); null when not printed.
      type: int
      sample: 3
    bidirectional:
      description: True for a bidirectional run; its bandwidth is the sum of both directions.
      type: bool
      sample: false
    parameters:
      description: "Every C(key : value) pair of the parameter block, as printed."
      type: dict
      sample: {"Device": "mlx5_0", "Mtu": "4096[B]", "Link type": "Ethernet"}
    bandwidth_unit:
      description: The unit the tool printed; null without a bandwidth table.
      type: str
      sample: Gb/sec
    rows:
      description:
        - Bandwidth rows C({bytes, iterations, bw_peak_gbps, bw_avg_gbps, msg_rate_mpps}) in Gbit/s
          (C(msg_rate_mpps) null for perftest 1.x).
        - Or latency rows C({bytes, iterations, t_min_us, t_max_us, t_typical_us, t_avg_us, t_stdev_us, t_p99_us,
          t_p99_9_us}) with the columns the tool printed (C(_cycles) instead of C(_us) with C(-C), C(tps_avg) with C(-D)).
      type: list
      elements: dict
      sample: [{"bytes": 65536, "iterations": 5000, "bw_peak_gbps": 92.42, "bw_avg_gbps": 92.4, "msg_rate_mpps": 0.17623}]
    bw_avg_gbps_max:
      description: The highest average bandwidth of the rows in Gbit/s; null without bandwidth rows.
      type: float
      sample: 92.4
    t_typical_us_min:
      description: The lowest typical latency of the rows in usec; null without one.
      type: float
      sample: 1.03
    warnings:
      description:
        - Lines printed inside the results table that are not rows, and perftest's warnings that it could not
          measure the CPU clock.
      type: list
      elements: str
      sample: ["Conflicting CPU frequency values detected: 1200.535000 != 1251.336000. CPU Frequency is not max."]
    clock_unmeasured:
      description:
        - True when perftest said it could not measure the CPU clock and printed only zero bandwidth - it converts
          cycles to time with that clock, so the zeros are no measurement (a busy host or VM).
      type: bool
      sample: false
    error:
      description: Null, or the tool's own error lines joined with C(; ) when the run failed.
      type: str
      sample: "Couldn't connect to 192.168.125.211:18515; Unable to init the socket connection"
    errors:
      description:
        - What the parser could not read, the run's verdict aside - a results table without rows, a client output
          that ends before its table, a server that printed no results, a line of numbers that does not fit the
          header (named by its line number).
      type: list
      elements: str
      sample: ["the results table has no row"]
"""


class FilterModule:
    """The parse_perftest filter."""

    def filters(self):
        return {"parse_perftest": raising_filter_error("parse_perftest", parse_perftest, ParseError)}
