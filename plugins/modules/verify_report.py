#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: verify_report
short_description: Gate bandwidth and NCCL results and write the verification report
version_added: 0.1.0
description:
  - Applies the pass/fail gates to the results of a bandwidth sweep
    (M(gpufabric.core.bandwidth_client)) and of nccl-tests runs (M(gpufabric.core.nccl_test)),
    and writes the report in O(dest) as JSON (C(verify.json)), Prometheus text exposition
    (C(verify.prom), for node_exporter's textfile collector) and a self-contained HTML page
    (C(verify.html)) with a host-by-host bandwidth heatmap per rail and the failures first.
  - "Gate: a host's rail passes when at least half of its pair tests reach the expected
    bandwidth: the highest absolute threshold of the host's groups in O(thresholds_gbps), else
    O(gate_percent) of the detected port rate of the pair's slower end."
  - "Usually runs once on the controller (C(delegate_to: localhost), C(run_once: true))."
  - The module never fails on a gate. It returns RV(verdicts), and the caller fails the hosts
    that failed, so the report is always written first.
requirements:
  - Jinja2 on the host that writes the report, for the HTML page (the controller has it; O(formats) without C(html)
    does not need it)
author:
  - gpufabric.core contributors (@gpufabric)
extends_documentation_fragment:
  - gpufabric.core.attributes
options:
  results:
    description: Pair test results, the C(results) lists of M(gpufabric.core.bandwidth_client), each with a C(round) number when known.
    type: list
    elements: dict
    default: []
  hosts:
    description: Every host of the sweep with its inventory groups; hosts without results are reported as failed.
    type: dict
    required: true
  skipped:
    description: Hosts left out of the sweep on purpose, with the reason (no RDMA device, ...).
    type: dict
    default: {}
  nccl_runs:
    description: Results of M(gpufabric.core.nccl_test).
    type: list
    elements: dict
    default: []
  path_mtu:
    description:
      - Results of M(gpufabric.core.path_mtu). A pair whose path MTU is not its configured MTU (or whose ends are
        configured with different MTUs) fails both hosts with the module's sentence; all are in the JSON report
        under C(path_mtu).
    type: list
    elements: dict
    default: []
  gate_percent:
    description: Share of the detected port rate a rail must reach, in percent (1-100).
    type: float
    default: 90
  thresholds_gbps:
    description: Absolute bandwidth threshold in Gbit/s per inventory group; overrides O(gate_percent) for hosts of that group.
    type: dict
    default: {}
  nccl_thresholds_gbytes:
    description: nccl-tests bus bandwidth threshold in GB/s per inventory group.
    type: dict
    default: {}
  dest:
    description: Directory the report files are written to; created when missing.
    type: path
    required: true
  formats:
    description: Files to write.
    type: list
    elements: str
    choices: [json, prometheus, html]
    default: [json, prometheus, html]
  title:
    description: Title of the HTML page.
    type: str
    default: gpufabric bandwidth verification
  meta:
    description: Facts about the run shown in the report (tool, mode, rounds ...).
    type: dict
    default: {}
  mode:
    description:
      - Permissions of the report files, a quoted octal string (V(0644)). A number is refused,
        since YAML reads an unquoted V(0640) as 416 and V(644) as 644, so a number cannot say which mode was meant.
    type: raw
    default: "0644"
attributes:
  check_mode:
    support: full
    details:
      - Computes the verdicts and reports whether the files would change, without writing.
  diff_mode:
    support: none
  platform:
    platforms: posix
notes:
  - "The report holds fresh measurements, so files change on every run; callers that treat
    the report as an output of the run rather than as managed state mark the task
    C(changed_when: false), as the C(gpufabric.core.verify) role does."
seealso:
  - module: gpufabric.core.bandwidth_client
  - module: gpufabric.core.nccl_test
"""

EXAMPLES = r"""
- name: Gate the sweep and write the report on the controller
  gpufabric.core.verify_report:
    results: "{{ sweep_results }}"
    hosts: "{{ dict(ansible_play_hosts_all | zip(ansible_play_hosts_all | map('extract', hostvars, 'group_names'))) }}"
    thresholds_gbps:
      mgmt: 20
    dest: /var/lib/gpufabric/reports/verify
  delegate_to: localhost
  run_once: true
  register: report
"""

RETURN = r"""
passed:
  description: True when RV(verdict) is V(pass).
  returned: always
  type: bool
  sample: false
verdict:
  description:
    - V(fail) when a host or an nccl-tests run failed, V(untested) when nothing was measured (every host
      skipped, for example without RDMA devices or GPUs), else V(pass).
  returned: always
  type: str
  sample: fail
failures:
  description: One sentence per failing rail or run, naming host, rail, device, measured and expected values.
  returned: always
  type: list
  elements: str
  sample:
    - "node3 rail tcp (eth0): measured 0.48 Gbit/s, expected at least 2.00 Gbit/s (absolute threshold of group 'lab'); 3 of 3 tests below"
verdicts:
  description: Per host, C(status) (pass, fail, skipped), C(messages) and per rail the measured and expected values and samples.
  returned: always
  type: dict
  sample: {node1: {status: pass, messages: [], rails: {}}}
nccl:
  description: Verdict per nccl-tests run.
  returned: always
  type: dict
  sample: {}
summary:
  description: Counts of hosts passed, failed and skipped and of tests.
  returned: always
  type: dict
  sample: {hosts: 4, passed: 3, failed: 1, skipped: 0, tests: 6, nccl_runs: 0}
files:
  description: Paths of the report files, by format.
  returned: always
  type: dict
  sample: {json: /var/lib/gpufabric/reports/verify/verify.json}
metrics_by_host:
  description: Each host's own Prometheus metrics, for a textfile on that host.
  returned: always
  type: dict
  sample: {node1: "gpufabric_verify_host_pass{host=\"node1\"} 1\n"}
"""

import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import html_pages
from ansible_collections.gpufabric.core.plugins.module_utils.verify import gates, path_mtu, report as verify_report
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import file_mode_problem

_FILES = {"json": "verify.json", "prometheus": "verify.prom", "html": "verify.html"}


def _octal_mode(value):
    """The file mode given as an octal string ("0644"); None when it is not one (a number is refused before)."""
    try:
        mode = int(str(value), 8)
    except ValueError:
        return None
    return mode if 0 <= mode <= 0o7777 else None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            results=dict(type="list", elements="dict", default=[]),
            hosts=dict(type="dict", required=True),
            skipped=dict(type="dict", default={}),
            nccl_runs=dict(type="list", elements="dict", default=[]),
            path_mtu=dict(type="list", elements="dict", default=[]),
            gate_percent=dict(type="float", default=90),
            thresholds_gbps=dict(type="dict", default={}),
            nccl_thresholds_gbytes=dict(type="dict", default={}),
            dest=dict(type="path", required=True),
            formats=dict(type="list", elements="str", choices=list(_FILES), default=list(_FILES)),
            title=dict(type="str", default="gpufabric bandwidth verification"),
            meta=dict(type="dict", default={}),
            mode=dict(type="raw", default="0644"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if isinstance(params["mode"], (int, float)):
        module.fail_json(msg="Nothing was written: %s" % file_mode_problem("mode", params["mode"]))
    if "html" in params["formats"] and not html_pages.HAS_JINJA2:
        module.fail_json(msg=missing_required_lib("Jinja2", reason="for the HTML report (formats: html)"),
                         exception=str(html_pages.JINJA2_IMPORT_ERROR))
    host_groups = {}
    for host, groups in params["hosts"].items():
        if not isinstance(groups, list):
            module.fail_json(msg="hosts must map each host to the list of its groups; %s maps to %r" % (host, groups))
        host_groups[host] = [str(group) for group in groups]
    for index, result in enumerate(params["results"]):
        missing = [key for key in ("client", "server", "rail") if key not in result]
        if missing:
            module.fail_json(msg="result %d lacks %s: pass the results lists of gpufabric.core.bandwidth_client" % (index, ", ".join(missing)))
    try:
        verdicts = gates.evaluate_bandwidth(params["results"], host_groups, params["gate_percent"], params["thresholds_gbps"], params["skipped"])
        nccl = gates.evaluate_nccl(params["nccl_runs"], host_groups, params["nccl_thresholds_gbytes"])
    except gates.GateError as exc:
        module.fail_json(msg=str(exc))
    path_mtu.apply_to_verdicts(verdicts, params["path_mtu"])
    report = verify_report.build_report(params["results"], verdicts, nccl, params["meta"])
    report["path_mtu"] = params["path_mtu"]
    renderers = {
        "json": verify_report.render_json,
        "prometheus": verify_report.render_prometheus,
        "html": lambda data: verify_report.render_html(data, params["title"]),
    }
    files = dict((fmt, os.path.join(params["dest"], _FILES[fmt])) for fmt in params["formats"])
    mode = _octal_mode(params["mode"])
    if mode is None:
        module.fail_json(msg="mode: an octal file mode such as \"0644\" is expected, got %r" % (params["mode"],))
    # The report files as one transaction: a reader never sees a JSON of this run beside the HTML of the last.
    desired = [{"path": path, "content": renderers[fmt](report), "mode": mode} for fmt, path in files.items()]
    try:
        changes = ft.plan(desired, ft.read_all(desired))
        if changes and not module.check_mode:
            ft.apply(changes, make_directories=[(params["dest"], 0o755)])
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Could not write the report in %s: %s" % (params["dest"], exc))
    changed = bool(changes)
    module.exit_json(
        changed=changed,
        passed=report["passed"],
        verdict=report["verdict"],
        failures=report["failures"],
        verdicts=verdicts,
        nccl=nccl,
        summary=report["summary"],
        files=files,
        metrics_by_host=dict((host, verify_report.render_prometheus(report, host)) for host in verdicts),
    )


if __name__ == "__main__":
    main()
