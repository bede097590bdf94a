# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""bandwidth.py: real iperf3 runs on loopback, command lines, rail plans, server lifecycle."""

from __future__ import annotations

import json
import os
import shutil
import socket
import time

import pytest
from grace_sysfs import write_grace_nodes

from ansible_collections.gpufabric.core.plugins.module_utils.verify import bandwidth
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

needs_iperf3 = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 is not installed (scripts/setup.sh installs it)")


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def iperf3_server(tmp_path):
    """A real one-off iperf3 server on loopback, started the way bandwidth_server starts it."""
    port = _free_port()
    log = str(tmp_path / "server.log")
    process = bandwidth.start_detached(bandwidth.timeout_argv(60, bandwidth.iperf3_server_argv(port, "127.0.0.1")), log)
    bandwidth.wait_listening(process, port, 10, log)
    yield port, process, log
    bandwidth.stop_server(process.pid, "iperf3")
    process.wait(timeout=10)


def _run_client(argv, timeout=30):
    [(rc, output, started, ended)] = bandwidth.run_concurrently([argv], timeout)
    return rc, output, started, ended


@needs_iperf3
def test_bidirectional_iperf3_run_is_measured_both_ways(iperf3_server):
    port, process, _log = iperf3_server
    rc, output, started, ended = _run_client(bandwidth.iperf3_client_argv("127.0.0.1", port, 1, bidirectional=True))
    assert rc == 0
    result = bandwidth.parse_iperf3_json(output)
    raw = json.loads(output)
    assert result["error"] is None
    assert result["bidirectional"] is True
    assert result["protocol"] == "TCP"
    assert result["duration_s"] == 1
    # Values are the receiver's view, converted to Gbit/s.
    assert result["client_to_server_gbps"] == round(raw["end"]["sum_received"]["bits_per_second"] / 1e9, 3)
    assert result["server_to_client_gbps"] == round(raw["end"]["sum_received_bidir_reverse"]["bits_per_second"] / 1e9, 3)
    assert result["client_to_server_gbps"] > 0.1 and result["server_to_client_gbps"] > 0.1
    assert ended - started >= 1.0
    # A one-off server exits by itself after its test: stopping it finds nothing to stop.
    deadline = time.monotonic() + 5
    while bandwidth.process_alive(process.pid) and time.monotonic() < deadline:
        process.poll()
        time.sleep(0.05)
    assert bandwidth.stop_server(process.pid, "iperf3") is False


@needs_iperf3
def test_reverse_iperf3_run_reports_only_server_to_client(iperf3_server):
    port, _process, _log = iperf3_server
    argv = bandwidth.iperf3_client_argv("127.0.0.1", port, 1, bidirectional=False, extra_args=["-R"])
    rc, output, _started, _ended = _run_client(argv)
    assert rc == 0
    result = bandwidth.parse_iperf3_json(output)
    assert result["reverse"] is True and result["bidirectional"] is False
    assert result["client_to_server_gbps"] is None
    assert result["server_to_client_gbps"] > 0.1


@needs_iperf3
def test_iperf3_error_run_returns_the_tools_message():
    port = _free_port()  # nothing listens there
    # iperf3 3.12 exits 0 here under -J: only the JSON "error" key tells the run failed.
    _rc, output, _started, _ended = _run_client(bandwidth.iperf3_client_argv("127.0.0.1", port, 1))
    result = bandwidth.parse_iperf3_json(output)
    assert "unable to connect to server" in result["error"]
    assert result["client_to_server_gbps"] is None


@pytest.mark.parametrize("text, problem", [
    ("", "empty"),
    ("Connecting to host 10.0.0.2, port 5201", "not JSON"),
    ('{"hello": 1}', "start/end"),
    ('{"start": {}, "intervals": [], "end": {}}', "did not finish"),
])
def test_unusable_iperf3_output_raises_parse_error(text, problem):
    with pytest.raises(ParseError, match=problem):
        bandwidth.parse_iperf3_json(text)


@needs_iperf3
def test_server_that_never_saw_a_client_is_stopped_and_its_port_freed(iperf3_server):
    port, process, _log = iperf3_server
    assert port in bandwidth.current_listening_ports()
    assert bandwidth.stop_server(process.pid, "iperf3") is True
    process.wait(timeout=10)
    assert not bandwidth.process_alive(process.pid)
    assert port not in bandwidth.current_listening_ports()


def test_stop_server_never_signals_a_process_running_another_command():
    # This test's own pid runs python, not iperf3: it must be left alone.
    assert bandwidth.stop_server(os.getpid(), "iperf3") is False


def test_server_exiting_before_listening_fails_with_its_output(tmp_path):
    log = str(tmp_path / "bad.log")
    process = bandwidth.start_detached(["sh", "-c", "echo 'Did not detect devices'; exit 1"], log)
    with pytest.raises(bandwidth.BandwidthError, match="exited with code 1 before listening.*Did not detect devices"):
        bandwidth.wait_listening(process, _free_port(), 5, log)


def test_run_concurrently_runs_commands_at_the_same_time_and_kills_overruns():
    started = time.monotonic()
    runs = bandwidth.run_concurrently([["sleep", "1"], ["sleep", "1"], ["sleep", "30"]], timeout_s=2)
    elapsed = time.monotonic() - started
    assert elapsed < 5  # three sequential sleeps would take 32 s
    assert [run[0] for run in runs[:2]] == [0, 0]
    assert runs[2][0] != 0 and "killed: the test ran past its timeout" in runs[2][1]


def test_listening_ports_from_proc_net_text():
    tcp = (
        "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
        "   0: 00000000:1451 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n"
        "   1: 0100007F:0016 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 2 1\n"
    )
    tcp6 = (
        "  sl  local_address                         remote_address                        st\n"
        "   0: 00000000000000000000000000000000:4843 00000000000000000000000000000000:0000 0A 0:0 0 0\n"
    )
    # 0x1451 = 5201 (iperf3), 0x4843 = 18499; the established ssh connection is not listening.
    assert bandwidth.listening_tcp_ports([tcp, tcp6]) == {5201, 18499}


ROCE_TOPOLOGY = {
    "rdma": {"available": True, "reason": None, "devices": [
        {"name": "mlx5_0", "numa_node": 0, "ports": [{"port": 1, "roce_v2_gid_index": 3, "rate_gbps": 400.0}]},
        {"name": "mlx5_1", "numa_node": 1, "ports": [{"port": 1, "roce_v2_gid_index": 5, "rate_gbps": 200.0}]},
    ]},
    "rails": [
        {"rail": 0, "gpu": "GPU0", "device": "mlx5_0", "port": 1, "netdev": "ens1np0", "rate_gbps": 400.0,
         "link_layer": "Ethernet", "numa_node": 0},
        {"rail": 1, "gpu": "GPU1", "device": "mlx5_1", "port": 1, "netdev": "ens2np0", "rate_gbps": 200.0,
         "link_layer": "Ethernet", "numa_node": 1},
    ],
}
IB_TOPOLOGY = {
    "rdma": {"available": True, "reason": None, "devices": [{"name": "mlx5_4", "ports": [{"port": 1, "roce_v2_gid_index": None}]}]},
    "rails": [{"rail": 0, "gpu": "GPU0", "device": "mlx5_4", "port": 1, "netdev": "ib0", "rate_gbps": 200.0,
               "link_layer": "InfiniBand", "numa_node": 1}],
}
# What topology_facts reports on a lab container: ibv_devinfo finds no device.
NO_RDMA_TOPOLOGY = {"rdma": {"available": False, "reason": "ibv_devinfo: Failed to get IB devices list: Function not implemented",
                             "devices": []}, "rails": []}


def test_rail_plan_matches_common_rails_with_ports_gid_and_slower_rate():
    tests = bandwidth.plan_rail_tests(ROCE_TOPOLOGY, IB_TOPOLOGY, 18515)
    assert len(tests) == 1
    [test] = tests
    assert test["rail"] == 0 and test["port"] == 18515
    assert test["device"] == "mlx5_0" and test["peer_device"] == "mlx5_4"
    assert test["gid_index"] == 3  # RoCE: the RoCE v2 GID of mlx5_0 port 1
    assert test["rate_gbps"] == 200.0  # the slower end bounds the pair
    assert test["cuda_device"] == 0 and test["numa_node"] == 0
    # Seen from the other end: same rail and port, InfiniBand needs no GID index.
    [mirror] = bandwidth.plan_rail_tests(IB_TOPOLOGY, ROCE_TOPOLOGY, 18515)
    assert (mirror["port"], mirror["device"], mirror["peer_device"], mirror["gid_index"]) == (18515, "mlx5_4", "mlx5_0", None)


def test_rail_plan_uses_one_port_per_rail_and_honours_a_rail_selection():
    tests = bandwidth.plan_rail_tests(ROCE_TOPOLOGY, ROCE_TOPOLOGY, 20000)
    assert [(test["rail"], test["port"], test["gid_index"]) for test in tests] == [(0, 20000, 3), (1, 20001, 5)]
    assert [test["rail"] for test in bandwidth.plan_rail_tests(ROCE_TOPOLOGY, ROCE_TOPOLOGY, 20000, rails=[1])] == [1]
    with pytest.raises(bandwidth.BandwidthError, match="rails 7 are not present on both hosts.*common rails: 0, 1"):
        bandwidth.plan_rail_tests(ROCE_TOPOLOGY, ROCE_TOPOLOGY, 20000, rails=[7])


def test_host_without_rdma_is_named_clearly():
    reason = bandwidth.rdma_unavailable_reason(NO_RDMA_TOPOLOGY)
    assert reason == "no RDMA device on this host (ibv_devinfo: Failed to get IB devices list: Function not implemented)"
    assert "run gpufabric.core.topology_facts" in bandwidth.rdma_unavailable_reason({})
    with pytest.raises(bandwidth.BandwidthError, match="the peer: no RDMA device"):
        bandwidth.plan_rail_tests(ROCE_TOPOLOGY, NO_RDMA_TOPOLOGY, 18515)


def _params(**overrides):
    params = dict((name, spec.get("default")) for name, spec in bandwidth.test_argument_spec().items())
    params.update(overrides)
    return params


def test_plan_tests_reports_no_rdma_instead_of_failing():
    tests, reason = bandwidth.plan_tests(_params(tool="ib_write_bw", topology=NO_RDMA_TOPOLOGY), "client")
    assert tests == [] and reason.startswith("no RDMA device on this host")
    tests, reason = bandwidth.plan_tests(_params(), "client")
    assert reason is None and tests[0]["port"] == 5201 and tests[0]["rail"] == "tcp"


def test_perftest_client_command_is_numa_local_gpudirect_and_in_gbits():
    params = _params(tool="ib_write_bw", topology=ROCE_TOPOLOGY, peer_topology=ROCE_TOPOLOGY, use_cuda=True, duration=5)
    [test, _second] = bandwidth.plan_tests(params, "client")[0]
    argv, note = bandwidth.command_for(params, test, "/usr/bin/numactl", server="10.0.0.2")
    assert argv == [
        "/usr/bin/numactl", "--cpunodebind=0", "--membind=0",
        "ib_write_bw", "-d", "mlx5_0", "-i", "1", "-p", "18515", "-F", "-D", "5", "--report_gbits", "-q", "1", "-b",
        "-x", "3", "--use_cuda=0", "10.0.0.2",
    ]
    assert note == "bound to NUMA node 0 with numactl"
    server_argv, _note = bandwidth.command_for(params, test, "/usr/bin/numactl")
    assert server_argv[-1] == "--use_cuda=0"  # the server side names no peer


def test_binding_falls_back_to_taskset_then_to_none():
    assert bandwidth.numa_binding_argv(1, None, "28-55,84-111") == (["taskset", "-c", "28-55,84-111"], None)
    assert bandwidth.numa_binding_argv(-1, "/usr/bin/numactl") == ([], "the NIC's NUMA node is unknown: not bound")
    assert bandwidth.numa_binding_argv(0, None, None)[0] == []


def _grace_test(numa_node):
    return {"rail": 2, "device": "mlx5_4", "ib_port": 1, "port": 18517, "gid_index": None, "cuda_device": 2,
            "numa_node": numa_node}


def test_grace_cpu_node_binds_as_everywhere(tmp_path):
    write_grace_nodes(tmp_path)
    assert bandwidth.numa_binding_node(1, str(tmp_path)) == (1, "72-143", "")
    argv, note = bandwidth.command_for(_params(tool="ib_write_bw"), _grace_test(1), "/usr/bin/numactl", sysfs_root=str(tmp_path))
    assert argv[:3] == ["/usr/bin/numactl", "--cpunodebind=1", "--membind=1"]
    assert note == "bound to NUMA node 1 with numactl"


def test_grace_gpu_memory_node_binds_the_nearest_node_with_cpus(tmp_path):
    # GPU2's memory on the GB200 host is node 18 (GPU NUMA ID), without CPUs: numactl --cpunodebind=18 fails with
    # "Invalid argument", so the test runs on Grace 1, whose CPUs nvidia-smi lists for GPU2.
    write_grace_nodes(tmp_path)
    assert bandwidth.numa_binding_node(18, str(tmp_path)) == (1, "72-143", " (node 18 has no CPUs; 1 is the nearest that has)")
    params = _params(tool="ib_write_bw")
    argv, note = bandwidth.command_for(params, _grace_test(18), "/usr/bin/numactl", sysfs_root=str(tmp_path))
    assert argv[:3] == ["/usr/bin/numactl", "--cpunodebind=1", "--membind=1"]
    assert note == "bound to NUMA node 1 (node 18 has no CPUs; 1 is the nearest that has) with numactl"
    argv, note = bandwidth.command_for(params, _grace_test(18), None, sysfs_root=str(tmp_path))
    assert argv[:3] == ["taskset", "-c", "72-143"]


def test_node_without_cpus_and_no_node_that_has_is_not_bound(tmp_path):
    nodes = write_grace_nodes(tmp_path)
    for node, (cpus, _socket) in nodes.items():
        if cpus:
            (tmp_path / "devices" / "system" / "node" / ("node%d" % node) / "cpulist").write_text("\n")
    assert bandwidth.numa_binding_node(18, str(tmp_path)) == (-1, None, "NUMA node 18 has no CPUs and no node with CPUs is known")
    argv, note = bandwidth.command_for(_params(tool="ib_write_bw"), _grace_test(18), "/usr/bin/numactl", sysfs_root=str(tmp_path))
    assert argv[0] == "ib_write_bw"
    assert note == "NUMA node 18 has no CPUs and no node with CPUs is known: not bound"


def test_without_numa_sysfs_the_node_is_bound_as_asked(tmp_path):
    assert bandwidth.numa_binding_node(3, str(tmp_path)) == (3, None, "")


def test_latency_tools_take_no_bandwidth_flags_and_use_cuda_needs_a_gpu():
    test = {"rail": 0, "device": "mlx5_0", "ib_port": 1, "port": 18515, "gid_index": None, "cuda_device": None}
    argv = bandwidth.perftest_argv("ib_write_lat", test, 5)
    assert "--report_gbits" not in argv and "-D" not in argv
    with pytest.raises(bandwidth.BandwidthError, match="rail 0 has no GPU index"):
        bandwidth.perftest_argv("ib_write_bw", test, 5, use_cuda=True)
    with pytest.raises(bandwidth.BandwidthError, match="not a perftest tool"):
        bandwidth.perftest_argv("iperf3", test, 5)


def test_option_checks_name_the_option():
    assert bandwidth.check_test_options(_params(duration=0)) == "duration must be at least 1, got 0"
    assert "needs topology" in bandwidth.check_test_options(_params(tool="ib_send_bw"))
    assert "perftest tools only" in bandwidth.check_test_options(_params(use_cuda=True))
    assert bandwidth.check_test_options(_params()) is None
