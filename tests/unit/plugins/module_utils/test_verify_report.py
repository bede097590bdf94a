# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify_report.py: the report dict, its JSON, Prometheus exposition and HTML renderings."""

from __future__ import annotations

import json
import re

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.verify import gates, report as verify_report
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.gpufabric.core.plugins.module_utils.verify.pairing import pairing_rounds
from fixture_data import read_fixture

prometheus_parser = pytest.importorskip("prometheus_client.parser", reason="prometheus-client (requirements.txt) parses the exposition format")

HOSTS = ["node1", "node2", "node3", "node4"]


def _sweep():
    """All-mode sweep of 4 hosts, node3 throttled to 0.48 Gbit/s on its sending side, 2 s per round."""
    speed = dict((host, 0.48 if host == "node3" else 15.2) for host in HOSTS)
    results = []
    for number, pairs in enumerate(pairing_rounds(HOSTS, "all"), start=1):
        for client, server in pairs:
            start = 1000.0 + 10 * number
            results.append({
                "tool": "iperf3", "client": client, "server": server, "rail": "tcp", "client_device": "eth0",
                "server_device": None, "rate_gbps": None, "client_to_server_gbps": speed[client],
                "server_to_client_gbps": speed[server], "aggregate_gbps": None, "error": None, "round": number,
                "started_at": start, "ended_at": start + 2.0,
            })
    return results


@pytest.fixture
def report():
    results = _sweep()
    groups = dict((host, ["lab"]) for host in HOSTS)
    verdicts = gates.evaluate_bandwidth(results, groups, 90, {"lab": 2.0})
    parsed = parse_nccl_tests(read_fixture("nccl_tests/moc-h100-roce-2node-allreduce.txt"))
    busbw, basis = gates.nccl_busbw(parsed)
    nccl = gates.evaluate_nccl(
        [{"name": "node1-node2", "scope": "multi_node", "hosts": ["node1", "node2"], "busbw_gbytes": busbw, "basis": basis,
          "error": parsed["error"], "wrong": parsed["wrong"]}],
        groups, {"lab": 10},
    )
    return verify_report.build_report(results, verdicts, nccl, {"tool": "iperf3", "mode": "all"}, generated_at=1796034399.5)


def test_report_lists_failures_first_and_counts_hosts(report):
    assert (report["verdict"], report["passed"]) == ("fail", False)
    assert report["summary"] == {"hosts": 4, "passed": 3, "failed": 1, "skipped": 0, "tests": 6, "nccl_runs": 1}
    assert len(report["failures"]) == 1
    assert report["failures"][0].startswith("node3 rail tcp (eth0): measured 0.48 Gbit/s, expected at least 2.00 Gbit/s")
    assert report["generated_at_iso"] == "2026-11-30T10:26:39Z"
    assert report["nccl"]["node1-node2"]["measured_gbytes"] == 14.97


def test_heatmap_holds_each_hosts_view_of_each_peer(report):
    tcp = report["heatmap"]["tcp"]
    assert tcp["node3"]["node1"] == {"value_gbps": 0.48, "expected_gbps": 2.0, "passed": False, "error": None}
    assert tcp["node1"]["node2"]["value_gbps"] == 15.2 and tcp["node1"]["node2"]["passed"] is True
    assert tcp["node1"]["node3"]["passed"] is False  # the slow direction drags the pair down for both ends
    assert sorted(tcp["node2"]) == ["node1", "node3", "node4"]


def test_rounds_span_the_tests_of_each_round(report):
    assert [span["round"] for span in report["rounds"]] == [1, 2, 3]
    assert all(len(span["pairs"]) == 2 for span in report["rounds"])
    assert report["rounds"][0]["started_at"] == 1010.0 and report["rounds"][0]["ended_at"] == 1012.0


def test_json_round_trips(report):
    assert json.loads(verify_report.render_json(report)) == json.loads(json.dumps(report))


def _families(text):
    return dict((family.name, family) for family in prometheus_parser.text_string_to_metric_families(text))


def test_prometheus_text_parses_and_carries_the_verdicts(report):
    text = verify_report.render_prometheus(report)
    families = _families(text)
    host_pass = dict((sample.labels["host"], sample.value) for sample in families["gpufabric_verify_host_pass"].samples)
    assert host_pass == {"node1": 1.0, "node2": 1.0, "node3": 0.0, "node4": 1.0}
    rail = [sample for sample in families["gpufabric_verify_rail_bandwidth_gbps"].samples if sample.labels["host"] == "node3"]
    assert [(sample.labels["rail"], sample.labels["device"], sample.value) for sample in rail] == [("tcp", "eth0", 0.48)]
    assert families["gpufabric_verify_rail_expected_gbps"].type == "gauge"
    pairs = families["gpufabric_verify_pair_bandwidth_gbps"].samples
    assert len(pairs) == 12  # 6 tests, both directions each
    assert families["gpufabric_verify_nccl_busbw_gbytes"].samples[0].value == 14.97
    assert families["gpufabric_verify_last_run_timestamp_seconds"].samples[0].value == 1796034399.5
    # Every family has HELP and TYPE before its samples, as node_exporter's textfile collector requires.
    for match in re.finditer(r"^# TYPE (\S+) gauge$", text, re.MULTILINE):
        assert "# HELP %s " % match.group(1) in text


def test_prometheus_per_host_textfile_holds_only_that_host(report):
    families = _families(verify_report.render_prometheus(report, "node3"))
    assert [sample.labels["host"] for sample in families["gpufabric_verify_host_pass"].samples] == ["node3"]
    for sample in families["gpufabric_verify_pair_bandwidth_gbps"].samples:
        assert "node3" in (sample.labels["client"], sample.labels["server"])
    assert "gpufabric_verify_nccl_busbw_gbytes" not in families  # node3 took no part in the NCCL run


def test_prometheus_label_values_are_escaped():
    verdicts = gates.evaluate_bandwidth([], {'odd"host\\name': []}, 90)
    text = verify_report.render_prometheus(verify_report.build_report([], verdicts, generated_at=1.0))
    [sample] = _families(text)["gpufabric_verify_host_pass"].samples
    assert sample.labels["host"] == 'odd"host\\name'


def test_html_embeds_the_report_without_breaking_out_of_its_script():
    verdicts = gates.evaluate_bandwidth([], {"</script><script>alert(1)</script>": []}, 90)
    page = verify_report.render_html(verify_report.build_report([], verdicts, generated_at=1.0), title="<fleet> & co")
    assert page.count("</script>") == 2  # the data block's and the code block's own
    assert "<title>&lt;fleet&gt; &amp; co</title>" in page
    data = re.search(r'<script id="report-data" type="application/json">(.*?)</script>', page, re.DOTALL).group(1)
    assert list(json.loads(data)["hosts"]) == ["</script><script>alert(1)</script>"]


def test_html_is_self_contained(report):
    page = verify_report.render_html(report)
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert '<div id="heatmaps">' in page and 'id="report-data"' in page


def test_a_run_that_measured_nothing_is_untested_not_passed():
    verdicts = gates.evaluate_bandwidth([], {"a": [], "b": []}, 90, skipped={"a": "no RDMA device", "b": "no RDMA device"})
    nccl = gates.evaluate_nccl([{"name": "a", "scope": "single_node", "hosts": ["a"], "available": False, "reason": "no GPU"}], {"a": []})
    report = verify_report.build_report([], verdicts, nccl, generated_at=1.0)
    assert (report["verdict"], report["passed"], report["failures"]) == ("untested", False, [])
    assert report["summary"]["skipped"] == 2
