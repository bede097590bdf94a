# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HTML report renders in headless Chromium: no script errors, heatmap drawn, failing host marked."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.verify import gates, report as verify_report
from ansible_collections.gpufabric.core.plugins.module_utils.verify.pairing import pairing_rounds
import report_check

pytestmark = pytest.mark.skipif(report_check.find_chromium() is None, reason="chromium is not installed (apt-get install chromium)")

HOSTS = ["gpu-a01", "gpu-a02", "gpu-b01", "gpu-b02", "gpu-c01"]


def _report(slow_host, rails=(0, 1)):
    """A perftest all-mode sweep over two rails; slow_host's rail 1 reaches 120 of 400 Gbit/s."""
    results = []
    for number, pairs in enumerate(pairing_rounds(HOSTS, "all"), start=1):
        for client, server in pairs:
            for rail in rails:
                slow = rail == 1 and slow_host in (client, server)
                results.append({
                    "tool": "ib_write_bw", "client": client, "server": server, "rail": rail,
                    "client_device": "mlx5_%d" % rail, "server_device": "mlx5_%d" % rail, "rate_gbps": 400.0,
                    "client_to_server_gbps": 120.0 if slow else 391.2, "server_to_client_gbps": None, "aggregate_gbps": None,
                    "error": None, "round": number, "started_at": 100.0 * number, "ended_at": 100.0 * number + 10,
                })
    verdicts = gates.evaluate_bandwidth(results, dict((host, ["h100"]) for host in HOSTS), 90)
    return verify_report.build_report(results, verdicts, meta={"tool": "ib_write_bw", "mode": "all"})


def test_failing_host_is_marked_and_the_page_has_no_script_error(tmp_path):
    page = tmp_path / "verify.html"
    page.write_text(verify_report.render_html(_report("gpu-b01")))
    dom, errors = report_check.dump_dom(page)
    assert errors == []
    passing = [host for host in HOSTS if host != "gpu-b01"]
    assert report_check.check_rendered(dom, errors, ["gpu-b01"], passing) == []
    # Rail 0 passed everywhere: only rail 1's table marks the host.
    assert dom.count('class="host-fail"') == 1
    assert dom.count('class="cell cell-fail"') == 8  # gpu-b01 against 4 peers, and each peer against gpu-b01


def test_check_catches_a_page_whose_script_breaks(tmp_path):
    page = tmp_path / "broken.html"
    # Data the script cannot read: it throws before drawing anything.
    page.write_text(verify_report.render_html(_report("gpu-b01")).replace('"rails": [', '"rails": 7, "x": [', 1))
    dom, errors = report_check.dump_dom(page)
    problems = report_check.check_rendered(dom, errors, ["gpu-b01"])
    assert any("did not run to its end" in problem for problem in problems)
    assert any(problem.startswith("script error:") and "Uncaught" in problem for problem in problems)
