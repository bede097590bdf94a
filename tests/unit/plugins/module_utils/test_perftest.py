# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_perftest on every captured perftest output in tests/fixtures/perftest."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.perftest import BANDWIDTH_UNITS, parse_perftest

# Gbit/s in one MB/sec or MiB/sec as perftest prints them: both are 2^20 bytes per second.
MIB_GBPS = 1048576 * 8 / 1e9

# Real outputs quoted from a public GitHub markdown page (a perftest walk-through, ConnectX RoCE, rdma_cm,
# found in the code search index as document 47862417700; the index does not record the repository). Kept
# byte for byte, tabs included. No fixture in tests/fixtures covers the latency tools or the MB/sec label of
# a current perftest; they may move into tests/fixtures/perftest when a capture is published.
WRITE_LAT_REAL = (
    "root@cpu1:~# ib_write_lat -d mlx5_0 10.0.32.34 -zR\n"
    "---------------------------------------------------------------------------------------\n"
    "                    RDMA_Write Latency Test\n"
    " Dual-port       : OFF\t\tDevice         : mlx5_0\n"
    " Number of qps   : 1\t\tTransport type : IB\n"
    " Connection type : RC\t\tUsing SRQ      : OFF\n"
    " TX depth        : 1\n"
    " Mtu             : 1024[B]\n"
    " Link type       : Ethernet\n"
    " GID index       : 3\n"
    " Max inline data : 220[B]\n"
    " rdma_cm QPs\t : ON\n"
    " Data ex. method : rdma_cm\n"
    "---------------------------------------------------------------------------------------\n"
    " local address: LID 0000 QPN 0x00eb PSN 0x5d9378\n"
    " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:32:34\n"
    " remote address: LID 0000 QPN 0x00ec PSN 0x6674dd\n"
    " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:00:32:34\n"
    "---------------------------------------------------------------------------------------\n"
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]"
    "   99% percentile[usec]   99.9% percentile[usec] \n"
    "Conflicting CPU frequency values detected: 1023.201000 != 1000.854000. CPU Frequency is not max.\n"
    "Conflicting CPU frequency values detected: 999.999000 != 1021.153000. CPU Frequency is not max.\n"
    " 2       1000          0.76           0.95         0.78     \t       0.78        \t0.01   \t\t0.83    \t\t0.95   \n"
    "---------------------------------------------------------------------------------------\n"
)
WRITE_LAT_DURATION_REAL = (
    "root@gpu1:~# ib_write_lat -d mlx5_0 10.0.13.2 -zR -D 300\n"
    "---------------------------------------------------------------------------------------\n"
    "                    RDMA_Write Latency Test\n"
    " Dual-port       : OFF\t\tDevice         : mlx5_0\n"
    " Number of qps   : 1\t\tTransport type : IB\n"
    " Connection type : RC\t\tUsing SRQ      : OFF\n"
    " TX depth        : 1\n"
    " Mtu             : 1024[B]\n"
    " Link type       : Ethernet\n"
    " GID index       : 3\n"
    " Max inline data : 220[B]\n"
    " rdma_cm QPs\t : ON\n"
    " Data ex. method : rdma_cm\n"
    "---------------------------------------------------------------------------------------\n"
    " #bytes        #iterations       t_avg[usec]    tps average\n"
    "Conflicting CPU frequency values detected: 902.996000 != 866.521000. CPU Frequency is not max.\n"
    " 2             58732912            1.28           391518.70\n"
    "---------------------------------------------------------------------------------------\n"
)
WRITE_BW_MB_REAL = (
    "root@cpu1:~# ib_write_bw -d mlx5_0 10.0.32.34 -zR\n"
    "---------------------------------------------------------------------------------------\n"
    "                    RDMA_Write BW Test\n"
    " Dual-port       : OFF\t\tDevice         : mlx5_0\n"
    " Link type       : Ethernet\n"
    "---------------------------------------------------------------------------------------\n"
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
    "Conflicting CPU frequency values detected: 1000.061000 != 3300.001000. CPU Frequency is not max.\n"
    " 65536      5000             11660.36            11660.12\t\t   0.186562\n"
    "---------------------------------------------------------------------------------------\n"
)
# The table of a newer perftest that labels the same unit MiB/sec (public markdown page, index document
# 20239065587), ConnectX RoCE, 64 KiB messages.
WRITE_BW_MIB_REAL = (
    " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
    " 65536      5000             11030.78            11030.45\t\t     0.176487\n"
    "---------------------------------------------------------------------------------------\n"
)


def _parse(name):
    return parse_perftest(read_fixture("perftest/" + name))


@pytest.mark.parametrize("name", fixture_names("perftest"))
def test_every_fixture_parses_to_rows_an_error_or_a_waiting_server(name):
    result = _parse(name)
    assert result["rows"] or result["error"] or result["side"] == "server"
    for row in result["rows"]:
        assert set(row) == {"bytes", "iterations", "bw_peak_gbps", "bw_avg_gbps", "msg_rate_mpps"}
        assert row["bytes"] > 0 and row["iterations"] > 0
        assert 0 <= row["bw_avg_gbps"] < 2000
    if result["rows"]:
        assert result["bw_avg_gbps_max"] == max(row["bw_avg_gbps"] for row in result["rows"])


@pytest.mark.parametrize("name", fixture_names("perftest"))
def test_bandwidth_agrees_with_message_rate(name):
    # An independent check of the unit conversion: bytes x messages per second must give the same Gbit/s.
    for row in _parse(name)["rows"]:
        if row["msg_rate_mpps"] and row["bw_avg_gbps"] >= 1:
            assert row["msg_rate_mpps"] * row["bytes"] * 8 / 1e3 == pytest.approx(row["bw_avg_gbps"], rel=0.01)


def test_amd_pollara_bidirectional_4qp_all_sizes_gbits():
    result = _parse("amd-mi355x-pollara-ib_write_bw-bidir-a-q4-client.txt")
    assert result["test"] == "RDMA_Write Bidirectional BW"
    assert result["bidirectional"] is True
    assert result["kind"] == "bw"
    assert result["side"] == "client"
    assert (result["device"], result["link_layer"], result["num_qps"], result["mtu"], result["gid_index"]) == (
        "ionic_1", "Ethernet", 4, 4096, 1,
    )
    assert result["parameters"]["Using Enhanced Reorder"] == "OFF"
    assert result["bandwidth_unit"] == "Gb/sec"
    rows = result["rows"]
    assert [row["bytes"] for row in rows] == [2 ** exponent for exponent in range(1, 24)]
    # The first row keeps its 6-decimal values.
    assert rows[0] == {"bytes": 2, "iterations": 20000, "bw_peak_gbps": 0.147331, "bw_avg_gbps": 0.146472, "msg_rate_mpps": 9.154486}
    assert rows[13] == {"bytes": 16384, "iterations": 20000, "bw_peak_gbps": 773.59, "bw_avg_gbps": 773.21, "msg_rate_mpps": 5.899086}
    assert rows[-1]["bw_peak_gbps"] == 779.21 and rows[-1]["bw_avg_gbps"] == 779.21
    assert result["bw_avg_gbps_max"] == 779.21
    assert result["error"] is None and result["warnings"] == []


def test_deepops_cx5_warning_inside_table_is_skipped():
    result = _parse("deepops-ib_write_bw-R-roce-cx5-100g-client-cpufreq-warning.txt")
    assert result["test"] == "RDMA_Write BW"
    assert (result["device"], result["link_layer"], result["gid_index"]) == ("mlx5_0", "Ethernet", 3)
    assert result["parameters"]["rdma_cm QPs"] == "ON"
    assert result["rows"] == [
        {"bytes": 65536, "iterations": 5000, "bw_peak_gbps": 92.42, "bw_avg_gbps": 92.40, "msg_rate_mpps": 0.176230}
    ]
    assert result["warnings"] == [
        "Conflicting CPU frequency values detected: 1200.535000 != 1251.336000. CPU Frequency is not max."
    ]
    assert result["error"] is None


def test_egx_all_sizes_without_closing_line():
    result = _parse("egx-ib_write_bw-a-roce-client-all-sizes-gbits.txt")
    rows = result["rows"]
    assert len(rows) == 23
    assert (result["mtu"], result["gid_index"]) == (1024, 2)
    assert rows[0]["bw_peak_gbps"] == 0.073998 and rows[0]["bw_avg_gbps"] == 0.072574
    by_size = dict((row["bytes"], row) for row in rows)
    assert by_size[65536]["bw_peak_gbps"] == 88.08 and by_size[65536]["bw_avg_gbps"] == 88.08
    assert by_size[8388608]["bw_peak_gbps"] == 83.78 and by_size[8388608]["bw_avg_gbps"] == 83.75
    # The best average is at 64 KiB, not at the largest size.
    assert result["bw_avg_gbps_max"] == 88.08


def test_egx_server_waiting_banner():
    result = _parse("egx-ib_write_bw-a-server-waiting.txt")
    assert result["side"] == "server"
    assert result["rows"] == [] and result["bw_avg_gbps_max"] is None
    assert result["error"] is None and result["test"] is None
    assert result["errors"] == ["the server side printed no results (it was still waiting for a client)"]


@pytest.mark.parametrize("name", fixture_names("perftest"))
def test_fixtures_with_rows_or_a_tool_error_report_no_parse_errors(name):
    result = _parse(name)
    if result["rows"] or result["error"]:
        assert result["errors"] == []


def test_row_with_a_lost_cell_is_reported_not_shifted():
    # Derived from the EGX client capture: the "BW peak" cell of the 4-byte row is deleted; read in order, the
    # average would pass for the peak and the message rate for the average.
    text = read_fixture("perftest/egx-ib_write_bw-a-roce-client-all-sizes-gbits.txt")
    text = text.replace(" 4          5000             0.15 ", " 4          5000 ", 1)
    result = parse_perftest(text)
    assert 4 not in [row["bytes"] for row in result["rows"]] and len(result["rows"]) == 22
    assert len(result["errors"]) == 1
    assert result["errors"][0].startswith("line 22 (4          5000               0.15")
    assert "does not fit the header's 5 columns" in result["errors"][0]


def test_table_without_rows_and_output_cut_before_the_table_say_so():
    # Derived from the EGX client capture: cut right after the results header, then right before it.
    text = read_fixture("perftest/egx-ib_write_bw-a-roce-client-all-sizes-gbits.txt")
    header_end = text.index("MsgRate[Mpps]") + len("MsgRate[Mpps]")
    assert parse_perftest(text[:header_end])["errors"] == ["the results table has no row"]
    cut = parse_perftest(text[:text.index(" #bytes")])
    assert cut["rows"] == [] and cut["error"] is None
    assert cut["errors"] == ["the output ends before the results table (no '#bytes' header)"]


def test_old_perftest_mb_per_sec_is_mebibytes():
    result = _parse("old-perftest-ib_send_bw-UD-mlx4-all-sizes-client.txt")
    assert result["test"] == "Send BW"
    assert result["connection_type"] == "UD"
    assert result["mtu"] == 2048
    assert result["device"] is None  # perftest 1.x prints no device line
    assert result["bandwidth_unit"] == "MB/sec"
    rows = result["rows"]
    assert [row["bytes"] for row in rows] == [2 ** exponent for exponent in range(1, 12)]
    assert all(row["msg_rate_mpps"] is None for row in rows)
    # 7.51 / 7.21 MB/sec and 2923.29 / 2919.91 MB/sec as printed, times 2^20 x 8 bits.
    assert rows[0]["bw_peak_gbps"] == pytest.approx(7.51 * MIB_GBPS, abs=1e-6)
    assert rows[0]["bw_avg_gbps"] == pytest.approx(0.060482, abs=1e-6)
    assert rows[-1]["bw_peak_gbps"] == pytest.approx(24.522334, abs=1e-6)
    assert rows[-1]["bw_avg_gbps"] == pytest.approx(2919.91 * MIB_GBPS, abs=1e-6)
    assert result["bw_avg_gbps_max"] == pytest.approx(24.49398, abs=1e-6)


def test_error_completion_syndrome():
    result = _parse("perftest-173-error-completion-syndrom-0x51.txt")
    assert result["error"] == (
        "Completion with error at client; Failed status 4: wr_id 0 syndrom 0x51; "
        "Failed to complete run_iter_bw function successfully"
    )
    assert result["rows"] == [] and result["bw_avg_gbps_max"] is None


def test_error_no_server():
    result = _parse("perftest-228-error-couldnt-connect-no-server.txt")
    assert result["error"] == (
        "Couldn't connect to 192.168.125.211:18515; "
        "Unable to open file descriptor for socket connection Unable to init the socket connection"
    )
    assert result["test"] is None and result["rows"] == []


def test_post_list_duration_run_with_tabs():
    result = _parse("perftest-273-write-postlist-8B-60s-roce-ib0-gbits.txt")
    assert result["test"] == "RDMA_Write Post List BW"
    assert result["device"] == "ib0"
    assert result["parameters"]["Post List"] == "128"
    assert result["parameters"]["PCIe relax order"] == "Unsupported"
    assert result["rows"] == [
        {"bytes": 8, "iterations": 224958464, "bw_peak_gbps": 0.0, "bw_avg_gbps": 0.48, "msg_rate_mpps": 7.498617}
    ]


def test_mb_and_mib_labels_are_the_same_unit():
    assert BANDWIDTH_UNITS["MB/sec"] == BANDWIDTH_UNITS["MiB/sec"] == MIB_GBPS
    assert BANDWIDTH_UNITS["Gb/sec"] == 1.0
    mb = parse_perftest(WRITE_BW_MB_REAL)
    assert mb["rows"][0]["bw_avg_gbps"] == pytest.approx(11660.12 * MIB_GBPS, abs=1e-6)
    assert mb["rows"][0]["bw_avg_gbps"] == pytest.approx(97.812, abs=1e-3)
    mib = parse_perftest(WRITE_BW_MIB_REAL)
    assert mib["bandwidth_unit"] == "MiB/sec"
    assert mib["rows"][0]["bw_peak_gbps"] == pytest.approx(11030.78 * MIB_GBPS, abs=1e-6)
    assert mib["rows"][0]["bw_avg_gbps"] == pytest.approx(92.531, abs=1e-3)
    # Were MB/sec 10^6 bytes, the printed message rate would disagree by 4.9 %; it agrees to 0.01 %.
    for result in (mb, mib):
        row = result["rows"][0]
        assert row["msg_rate_mpps"] * row["bytes"] * 8 / 1e3 == pytest.approx(row["bw_avg_gbps"], rel=1e-3)


def test_latency_real_output():
    result = parse_perftest(WRITE_LAT_REAL)
    assert result["test"] == "RDMA_Write Latency"
    assert result["kind"] == "lat"
    assert (result["device"], result["link_layer"], result["gid_index"], result["mtu"]) == ("mlx5_0", "Ethernet", 3, 1024)
    assert result["rows"] == [{
        "bytes": 2, "iterations": 1000,
        "t_min_us": 0.76, "t_max_us": 0.95, "t_typical_us": 0.78, "t_avg_us": 0.78, "t_stdev_us": 0.01,
        "t_p99_us": 0.83, "t_p99_9_us": 0.95,
    }]
    assert result["t_typical_us_min"] == 0.78
    assert result["bw_avg_gbps_max"] is None and result["bandwidth_unit"] is None
    assert len(result["warnings"]) == 2 and result["error"] is None


def test_latency_duration_mode_real_output():
    result = parse_perftest(WRITE_LAT_DURATION_REAL)
    assert result["kind"] == "lat"
    assert result["rows"] == [{"bytes": 2, "iterations": 58732912, "t_avg_us": 1.28, "tps_avg": 391518.70}]
    assert result["t_typical_us_min"] is None


def test_latency_in_cycles():
    # perftest -C prints cycles instead of usec; header names from RESULT_FMT_LAT with CYCLES substituted.
    text = (
        "                    Send Latency Test\n"
        " #bytes #iterations    t_min[cycles]    t_max[cycles]  t_typical[cycles]\n"
        " 2       1000          2100.00          9120.00        2180.00\n"
    )
    assert parse_perftest(text)["rows"] == [
        {"bytes": 2, "iterations": 1000, "t_min_cycles": 2100.0, "t_max_cycles": 9120.0, "t_typical_cycles": 2180.0}
    ]


def test_extra_columns_are_skipped():
    # The per-port layout (--report-per-port) adds columns after MsgRate.
    text = (
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]   BW Port1[Gb/sec]"
        "   MsgRate Port1[Mpps]   BW Port2[Gb/sec]   MsgRate Port2[Mpps]\n"
        " 65536      5000           190.10             190.05               0.362492        95.03"
        "              0.181246              95.02              0.181246\n"
    )
    assert parse_perftest(text)["rows"] == [
        {"bytes": 65536, "iterations": 5000, "bw_peak_gbps": 190.10, "bw_avg_gbps": 190.05, "msg_rate_mpps": 0.362492}
    ]


def test_rows_before_a_failure_are_kept_with_the_error():
    text = read_fixture("perftest/egx-ib_write_bw-a-roce-client-all-sizes-gbits.txt").split(" 4096 ")[0]
    text += read_fixture("perftest/perftest-173-error-completion-syndrom-0x51.txt")
    result = parse_perftest(text)
    assert [row["bytes"] for row in result["rows"]][-1] == 2048
    assert result["error"].startswith("Completion with error at client")


def test_hex_dump_after_a_failed_completion_is_not_a_row():
    # libmlx5 prints the failed CQE as 4 hex words a line; in the 4-column perftest 1.x table such a line
    # would otherwise read as a row of numbers. The rows are the real mlx4 run cut after 64 bytes.
    text = read_fixture("perftest/old-perftest-ib_send_bw-UD-mlx4-all-sizes-client.txt").split("    128 ")[0]
    text += (
        "mlx5: node1: got completion with error:\n"
        "00000000 00000000 00000000 00000000\n"
        "00000000 00000000 00000000 00000000\n"
        "00000004 00000000 00000000 00000000\n"
        "00000000 00008813 08000046 00100450\n"
    )
    result = parse_perftest(text)
    assert [row["bytes"] for row in result["rows"]] == [2, 4, 8, 16, 32, 64]
    assert result["error"] == "mlx5: node1: got completion with error:"


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "the output is empty"),
        ("hello world\n", "no perftest title, results table, server banner or error message found"),
        (" #bytes     #iterations    BW peak[KB/sec]    BW average[KB/sec]\n 2 1000 1.0 1.0\n", "unknown bandwidth unit 'KB/sec'"),
        (" #bytes     #iterations    foo[x]\n", "has neither bandwidth nor latency columns"),
        (" #bytes    BW peak[Gb/sec]    BW average[Gb/sec]\n", "lacks the #iterations column"),
    ],
)
def test_unknown_formats_raise_parse_error(text, message):
    with pytest.raises(ParseError, match="cannot parse `perftest` output: .*" + message.replace("(", r"\(")):
        parse_perftest(text)


def test_not_text_raises_parse_error():
    with pytest.raises(ParseError, match="expected text, got NoneType"):
        parse_perftest(None)


_FIXTURE_LINES = [
    line for name in fixture_names("perftest") for line in read_fixture("perftest/" + name).split("\n")
] + WRITE_LAT_REAL.split("\n") + WRITE_LAT_DURATION_REAL.split("\n")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FIXTURE_LINES) | st.text(max_size=80), max_size=40))
def test_any_mix_of_lines_parses_or_raises_parse_error(lines):
    # Shuffled, cut and garbled outputs must never end in a traceback.
    try:
        result = parse_perftest("\n".join(lines))
    except ParseError:
        return
    assert result["rows"] or result["error"] is not None or result["test"] is not None or result["side"] == "server" \
        or result["kind"] is not None
