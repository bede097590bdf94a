# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gates.py: who fails, with which sentence; perftest results parsed from the real captured outputs."""

from __future__ import annotations

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.verify import gates
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.perftest import parse_perftest
from ansible_collections.gpufabric.core.plugins.module_utils.verify.pairing import pairing_rounds
from fixture_data import read_fixture


def _iperf3(client, server, forward, backward, rail="tcp", rate=None, error=None, round_number=1):
    return {
        "tool": "iperf3", "client": client, "server": server, "rail": rail, "client_device": "eth0", "server_device": None,
        "rate_gbps": rate, "client_to_server_gbps": forward, "server_to_client_gbps": backward, "aggregate_gbps": None,
        "error": error, "round": round_number,
    }


def _sweep(hosts, speed):
    """An all-mode sweep where speed(host) is what a host can send; a pair gets each sender's speed."""
    results = []
    for number, pairs in enumerate(pairing_rounds(hosts, "all"), start=1):
        for client, server in pairs:
            results.append(_iperf3(client, server, speed(client), speed(server), round_number=number))
    return results


HOSTS = ["node1", "node2", "node3", "node4"]
GROUPS = dict((host, ["lab"]) for host in HOSTS)


def test_throttled_host_fails_alone_with_a_sentence_naming_everything():
    # node3 sends at 0.48 Gbit/s (tbf on its egress); every other direction runs at ~15 Gbit/s.
    results = _sweep(HOSTS, lambda host: 0.48 if host == "node3" else 15.2)
    verdicts = gates.evaluate_bandwidth(results, GROUPS, 90, {"lab": 2.0})
    assert [host for host in HOSTS if verdicts[host]["status"] == "fail"] == ["node3"]
    rail = verdicts["node3"]["rails"]["tcp"]
    assert (rail["measured_gbps"], rail["expected_gbps"], rail["tests"], rail["tests_passed"]) == (0.48, 2.0, 3, 0)
    assert verdicts["node3"]["messages"] == [
        "node3 rail tcp (eth0): measured 0.48 Gbit/s, expected at least 2.00 Gbit/s (absolute threshold of group 'lab'); "
        "3 of 3 tests below: with node1 0.48 Gbit/s; with node2 0.48 Gbit/s; with node4 0.48 Gbit/s"
    ]
    # Each good host met the slow node once and still passes on its two other tests.
    good = verdicts["node1"]["rails"]["tcp"]
    assert (good["passed"], good["tests"], good["tests_passed"], good["measured_gbps"]) == (True, 3, 2, 15.2)


def test_percent_of_port_rate_is_the_default_gate():
    results = [_iperf3("a", "b", 9.3, 8.95, rate=10.0)]
    verdicts = gates.evaluate_bandwidth(results, {"a": [], "b": []}, 90)
    assert verdicts["a"]["status"] == "fail"
    assert verdicts["a"]["rails"]["tcp"]["expected_gbps"] == 9.0
    assert "(90 % of the 10 Gbit/s port rate)" in verdicts["a"]["messages"][0]
    assert "(a single peer: either end may be at fault)" in verdicts["a"]["messages"][0]
    assert gates.evaluate_bandwidth([_iperf3("a", "b", 9.3, 9.1, rate=10.0)], {"a": [], "b": []}, 90)["a"]["status"] == "pass"


def test_highest_group_threshold_wins_over_percent():
    expected, basis = gates.expected_value(400.0, 90, ["rack1", "h100", "all"], {"h100": 380, "rack1": 350})
    assert (expected, basis) == (380.0, "absolute threshold of group 'h100'")
    assert gates.expected_value(None, 90, ["x"], {}) == (None, "no port rate detected and no threshold set for its groups (x)")


def test_ungated_host_fails_rather_than_passing_silently():
    verdicts = gates.evaluate_bandwidth([_iperf3("a", "b", 16.0, 16.0)], {"a": ["lab"], "b": ["lab"]}, 90)
    assert verdicts["a"]["status"] == "fail"
    assert "no port rate detected and no threshold set for its groups (lab)" in verdicts["a"]["messages"][0]


def test_failed_test_fails_both_ends_with_the_tools_error():
    results = [_iperf3("a", "b", None, None, error="unable to connect to server: Connection refused")]
    verdicts = gates.evaluate_bandwidth(results, {"a": ["lab"], "b": ["lab"]}, 90, {"lab": 1})
    assert verdicts["a"]["status"] == verdicts["b"]["status"] == "fail"
    assert "with b: error: unable to connect to server: Connection refused" in verdicts["a"]["messages"][0]


def test_untested_and_skipped_hosts_are_reported():
    verdicts = gates.evaluate_bandwidth([], {"a": [], "b": []}, 90, skipped={"b": "no RDMA device on this host"})
    assert verdicts["a"]["status"] == "fail" and "no bandwidth test ran" in verdicts["a"]["messages"][0]
    assert verdicts["b"] == {"status": "skipped", "rails": {}, "messages": [], "reason": "no RDMA device on this host"}


@pytest.mark.parametrize("percent", [0, -5, 250, True, "90"])
def test_bad_gate_percent_is_refused(percent):
    with pytest.raises(gates.GateError, match="gate percent"):
        gates.evaluate_bandwidth([], {}, percent)


def test_bad_threshold_is_refused():
    with pytest.raises(gates.GateError, match="threshold of group 'lab' must be a positive number"):
        gates.evaluate_bandwidth([], {}, 90, {"lab": "fast"})


def _perftest_result(fixture, client, server, rate, bidirectional=False, device=None):
    """A result as bandwidth_client builds it; the device comes from the rail plan, as there."""
    parsed = parse_perftest(read_fixture("perftest/" + fixture))
    value = parsed["bw_avg_gbps_max"]
    return {
        "tool": "ib_write_bw", "client": client, "server": server, "rail": 0, "client_device": device or parsed["device"],
        "server_device": "mlx5_0", "rate_gbps": rate, "client_to_server_gbps": None if bidirectional else value,
        "server_to_client_gbps": None, "aggregate_gbps": value if bidirectional else None, "error": parsed["error"],
    }


def test_bidirectional_perftest_counts_half_its_sum_against_the_port_rate():
    # AMD Pollara 400G RoCE, ib_write_bw -b: 779.21 Gb/s both directions together.
    result = _perftest_result("amd-mi355x-pollara-ib_write_bw-bidir-a-q4-client.txt", "aliyun3", "aliyun4", 400.0, bidirectional=True)
    assert result["aggregate_gbps"] == 779.21
    verdicts = gates.evaluate_bandwidth([result], {"aliyun3": [], "aliyun4": []}, 90)
    rail = verdicts["aliyun3"]["rails"]["0"]
    assert (rail["measured_gbps"], rail["expected_gbps"], rail["passed"], rail["device"]) == (389.605, 360.0, True, "ionic_1")


def test_perftest_error_run_fails_the_rail_with_the_tools_message():
    # The run printed its error before any header, so the device is only known from the plan.
    result = _perftest_result("perftest-228-error-couldnt-connect-no-server.txt", "gpu-a", "gpu-b", 100.0, device="rocep133s0f0")
    verdicts = gates.evaluate_bandwidth([result], {"gpu-a": [], "gpu-b": []}, 90)
    message = verdicts["gpu-a"]["messages"][0]
    assert message.startswith("gpu-a rail 0 (rocep133s0f0): measured 0.00 Gbit/s, expected at least 90.00 Gbit/s")
    assert "Couldn't connect to 192.168.125.211:18515" in message


def test_cx5_roce_run_passes_at_90_percent_and_fails_a_stricter_group_threshold():
    # DeepOps ConnectX-5 100GbE ib_write_bw: 92.40 Gb/sec average, a CPU-frequency warning inside the table.
    result = _perftest_result("deepops-ib_write_bw-R-roce-cx5-100g-client-cpufreq-warning.txt", "gpu02", "gpu01", 100.0)
    assert result["client_to_server_gbps"] == 92.40
    verdicts = gates.evaluate_bandwidth([result], {"gpu02": ["roce"], "gpu01": ["roce"]}, 90)
    assert verdicts["gpu02"]["rails"]["0"]["measured_gbps"] == 92.4
    assert verdicts["gpu02"]["status"] == verdicts["gpu01"]["status"] == "pass"
    strict = gates.evaluate_bandwidth([result], {"gpu02": ["roce"], "gpu01": ["roce"]}, 90, {"roce": 95})
    assert strict["gpu01"]["messages"][0].startswith(
        "gpu01 rail 0 (mlx5_0): measured 92.40 Gbit/s, expected at least 95.00 Gbit/s (absolute threshold of group 'roce')"
    )


def _nccl_run(fixture, name, hosts, scope="multi_node"):
    parsed = parse_nccl_tests(read_fixture("nccl_tests/" + fixture))
    busbw, basis = gates.nccl_busbw(parsed)
    return {"name": name, "scope": scope, "hosts": hosts, "busbw_gbytes": busbw, "basis": basis,
            "error": parsed["error"], "wrong": parsed["wrong"]}


def test_nccl_gate_reads_the_largest_message_busbw_of_real_runs():
    groups = {"dgx1": ["dgx"], "dgx2": ["dgx"], "moc1": ["h100"], "moc2": ["h100"]}
    runs = [
        _nccl_run("deepops-dgx-a100-2node-8x200g-k8s-allreduce-old-format.txt", "dgx-pair", ["dgx1", "dgx2"]),
        _nccl_run("moc-h100-roce-2node-allreduce.txt", "moc-pair", ["moc1", "moc2"]),
    ]
    assert (runs[0]["busbw_gbytes"], runs[0]["basis"]) == (188.53, "out-of-place busbw at 4294967296 bytes")
    assert (runs[1]["busbw_gbytes"], runs[1]["basis"]) == (14.97, "out-of-place busbw at 26843545600 bytes")
    verdicts = gates.evaluate_nccl(runs, groups, {"dgx": 180, "h100": 20})
    assert verdicts["dgx-pair"]["status"] == "pass"
    assert verdicts["moc-pair"]["status"] == "fail"
    assert verdicts["moc-pair"]["message"] == (
        "nccl-tests multi_node on moc1, moc2: measured 14.97 GB/s bus bandwidth (out-of-place busbw at 26843545600 bytes), "
        "expected at least 20.00 GB/s (absolute threshold of group 'h100')"
    )


def test_nccl_error_run_and_missing_binary():
    groups = {"h20": ["h20"]}
    run = _nccl_run("nccl-tests-338-ERROR-h20-vm-cuda-system-not-initialized.txt", "h20", ["h20"], "single_node")
    skipped = {"name": "bare", "scope": "single_node", "hosts": ["h20"], "available": False,
               "reason": "all_reduce_perf not found in PATH or /usr/local/bin"}
    verdicts = gates.evaluate_nccl([run, skipped], groups, {"h20": 100})
    assert verdicts["h20"]["status"] == "fail"
    assert "system not yet initialized" in verdicts["h20"]["message"]
    assert verdicts["bare"]["status"] == "skipped"
    assert verdicts["bare"]["message"] == "nccl-tests single_node on h20 skipped: all_reduce_perf not found in PATH or /usr/local/bin"
