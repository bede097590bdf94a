# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_nccl_tests on every captured nccl-tests output in tests/fixtures (nccl_tests/ and nccl_debug/)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nccl_tests import parse_nccl_tests
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

# Average bus bandwidth (GB/s) and row count of every run that printed a results table.
RUNS_WITH_RESULTS = {
    "nccl_tests/deepops-4x-dgx-a100-slurm-allreduce-old-format.txt": (113.289, 13),
    "nccl_tests/deepops-dgx-a100-2node-8x200g-k8s-allreduce-old-format.txt": (53.7098, 30),
    "nccl_tests/deepops-dgx-roce-cx5-k8s-allreduce-old-format.txt": (7.76739, 29),
    "nccl_tests/moc-h100-roce-2node-allreduce.txt": (15.0418, 13),
    "nccl_debug/moc-h100-roce-4gpu-sendrecv-debug.txt": (5.80752, 13),
    # One H200: nothing crosses a bus, so nccl-tests prints busbw 0 in every row and as the average.
    "nccl_debug/device-h200-vm-1gpu-allreduce-nccl-debug-info.txt": (0.0, 13),
    "nccl_tests/device-h200-vm-1gpu-allreduce-no-check.txt": (0.0, 25),
}
# nccl_debug excerpts that were cut before the results table.
RUNS_CUT_BEFORE_RESULTS = [
    "nccl_debug/nccl-tests-311-a100-4node-sharp-plugin-ibext.txt",
    "nccl_debug/nccl-tests-321-h20-vm-tencent-plugin-roce-bond.txt",
    "nccl_debug/nccl-tests-350-a100pcie-mixed-roce-ib-topo-dump.txt",
]


def _parse(relpath):
    return parse_nccl_tests(read_fixture(relpath))


def test_fixture_lists_are_complete():
    listed = set(RUNS_WITH_RESULTS) | set(RUNS_CUT_BEFORE_RESULTS) | {
        "nccl_tests/nccl-tests-338-ERROR-h20-vm-cuda-system-not-initialized.txt",
        "nccl_debug/device-h200-vm-1gpu-allgather-nccl-debug-info.txt",  # all_gather: no redop, its own test below
    }
    on_disk = set("nccl_tests/" + name for name in fixture_names("nccl_tests"))
    on_disk |= set("nccl_debug/" + name for name in fixture_names("nccl_debug"))
    assert listed == on_disk


@pytest.mark.parametrize("relpath", sorted(RUNS_WITH_RESULTS))
def test_avg_bus_bandwidth_and_rows_of_each_run(relpath):
    result = _parse(relpath)
    average, row_count = RUNS_WITH_RESULTS[relpath]
    assert result["avg_bus_bandwidth"] == average
    assert len(result["rows"]) == row_count
    assert result["error"] is None
    # -c 0 checks nothing: its "Out of bounds values : 0 OK" counts no result, so wrong is unknown, not 0.
    assert result["wrong"] == (None if "no-check" in relpath else 0)
    sizes = [row["size_bytes"] for row in result["rows"]]
    assert sizes == sorted(sizes)
    for row in result["rows"]:
        assert row["type"] == "float" and row["redop"] == "sum"
        # count is elements of 4-byte floats.
        assert row["size_bytes"] == 4 * row["count"]
        for side in (row["out_of_place"], row["in_place"]):
            # busbw is algbw times 2(n-1)/n for all_reduce (1 for sendrecv): at least algbw across ranks, 0 on one.
            factor_is_zero = len(result["ranks"]) == 1
            assert side["time_us"] > 0 and (side["busbw"] == 0 if factor_is_zero else side["busbw"] >= side["algbw"] >= 0)
    assert result["busbw_max"] == max(
        side["busbw"] for row in result["rows"] for side in (row["out_of_place"], row["in_place"])
    )


def test_old_format_4node_values():
    result = _parse("nccl_tests/deepops-4x-dgx-a100-slurm-allreduce-old-format.txt")
    first, last = result["rows"][0], result["rows"][-1]
    assert first == {
        "size_bytes": 1048576, "count": 262144, "type": "float", "redop": "sum", "root": None,
        "out_of_place": {"time_us": 135.3, "algbw": 7.75, "busbw": 15.02, "wrong": None, "max_error": 7e-07},
        "in_place": {"time_us": 132.7, "algbw": 7.90, "busbw": 15.31, "wrong": None, "max_error": 7e-07},
    }
    assert last["size_bytes"] == 4294967296
    assert last["out_of_place"]["time_us"] == 43557.0 and last["out_of_place"]["busbw"] == 191.05
    assert last["in_place"]["busbw"] == 191.56
    assert result["busbw_max"] == 191.56
    # The old layout has no "# nThread" header; this excerpt of the DeepOps docs has no "# Using devices" block.
    assert result["ranks"] == [] and result["parameters"]["n_gpus"] is None
    assert result["errors"] == ["the results table has no rank line ('#  Rank  0 Group  0 Pid ... device ...') "
                                "before it: the GPUs of the run are unknown"]


def test_rank_lines_without_group_field_of_older_nccl_tests():
    # Derived from the MOC H100 capture: "Group  0 " is deleted from both rank lines, which is how nccl-tests
    # printed them before the Group field existed ("#   Rank  0 Pid <pid> on <host> device  0 [<bus>] <model>").
    # Before, the rank regex required Group and every rank was dropped without a word.
    text = read_fixture("nccl_tests/moc-h100-roce-2node-allreduce.txt")
    assert text.count("Group  0 Pid") == 2
    result = parse_nccl_tests(text.replace("Group  0 Pid", "Pid"))
    original = _parse("nccl_tests/moc-h100-roce-2node-allreduce.txt")
    assert result["ranks"] == [dict(rank, group=None) for rank in original["ranks"]]
    assert [rank["host"] for rank in result["ranks"]] == ["MOC-R4PCC04U37", "MOC-R4PCC04U35"]
    assert result["rows"] == original["rows"] and result["errors"] == []


def test_results_without_any_rank_line_say_so():
    # Derived from the MOC H100 capture: its two rank lines are deleted.
    text = "\n".join(line for line in read_fixture("nccl_tests/moc-h100-roce-2node-allreduce.txt").split("\n")
                     if not line.startswith("#  Rank"))
    result = parse_nccl_tests(text)
    assert result["ranks"] == [] and len(result["rows"]) == 13
    assert "no rank line" in result["errors"][0]
    assert result["error"] is None  # the run itself passed: its figures stay usable


def test_header_without_rows_says_so():
    # Derived from the MOC H100 capture: cut right after the two header lines of the results table.
    text = read_fixture("nccl_tests/moc-h100-roce-2node-allreduce.txt")
    text = text[:text.index("#        (B)")] + text[text.index("#        (B)"):].split("\n", 1)[0]
    result = parse_nccl_tests(text)
    assert result["rows"] == []
    assert result["errors"] == ["the results table has no row"]


def test_row_with_a_lost_cell_is_reported_not_dropped_silently():
    # Derived from the 4-node DeepOps capture: the out-of-place "time" cell of the 1 MiB row is deleted, so the
    # row has one value fewer than the header; reading it would shift algbw into time.
    text = read_fixture("nccl_tests/deepops-4x-dgx-a100-slurm-allreduce-old-format.txt")
    text = text.replace("sum    135.3    7.75", "sum    7.75")
    result = parse_nccl_tests(text)
    assert len(result["rows"]) == 12 and result["rows"][0]["size_bytes"] == 2097152
    assert any(error.startswith("line 5 (1048576") and "does not fit" in error for error in result["errors"])


def test_old_format_crlf_k8s_run():
    result = _parse("nccl_tests/deepops-dgx-a100-2node-8x200g-k8s-allreduce-old-format.txt")
    assert result["rows"][0]["size_bytes"] == 8
    assert result["rows"][0]["out_of_place"]["max_error"] == 2e-07
    assert result["rows"][0]["in_place"]["max_error"] == 1e-07
    assert result["rows"][-1]["out_of_place"]["busbw"] == 188.53
    assert result["rows"][-1]["in_place"]["algbw"] == 100.64


def test_roce_cx5_noisy_small_messages():
    result = _parse("nccl_tests/deepops-dgx-roce-cx5-k8s-allreduce-old-format.txt")
    assert result["rows"][0]["out_of_place"]["time_us"] == 2193.5
    assert result["rows"][0]["in_place"]["time_us"] == 132.2
    assert result["rows"][-1]["size_bytes"] == 2147483648
    assert result["busbw_max"] == 22.92


def test_new_format_with_debug_lines_between_rows():
    result = _parse("nccl_tests/moc-h100-roce-2node-allreduce.txt")
    assert result["parameters"] == {
        "n_threads": 1, "n_gpus": 1, "min_bytes": 1073741824, "max_bytes": 27950841856, "warmup_iters": 5, "iters": 20,
    }
    assert result["ranks"] == [
        {"rank": 0, "pid": 574691, "host": "MOC-R4PCC04U37", "device": 0, "bus_id": "0000:06:00", "model": "NVIDIA H100 80GB HBM3",
         "group": 0},
        {"rank": 1, "pid": 753223, "host": "MOC-R4PCC04U35", "device": 0, "bus_id": "0000:06:00", "model": "NVIDIA H100 80GB HBM3",
         "group": 0},
    ]
    assert result["errors"] == []
    assert result["rows"][0] == {
        "size_bytes": 1073741824, "count": 268435456, "type": "float", "redop": "sum", "root": -1,
        "out_of_place": {"time_us": 71024.0, "algbw": 15.12, "busbw": 15.12, "wrong": 0, "max_error": None},
        "in_place": {"time_us": 70967.0, "algbw": 15.13, "busbw": 15.13, "wrong": 0, "max_error": None},
    }
    assert result["rows"][-1]["size_bytes"] == 26843545600
    assert result["busbw_max"] == 15.18


def test_sendrecv_in_place_wrong_is_not_available():
    result = _parse("nccl_debug/moc-h100-roce-4gpu-sendrecv-debug.txt")
    assert len(result["ranks"]) == 8
    assert [rank["host"] for rank in result["ranks"]].count("MOC-R4PCC04U35") == 4
    assert result["parameters"]["n_gpus"] == 4
    for row in result["rows"]:
        assert row["out_of_place"]["wrong"] == 0
        assert row["in_place"]["wrong"] is None  # printed as N/A
    assert result["rows"][0]["out_of_place"]["busbw"] == 5.59
    assert result["rows"][-1]["in_place"]["busbw"] == 5.86


H200_RANK = {"rank": 0, "pid": None, "host": "vm", "device": 0, "bus_id": "0000:00:06", "model": "NVIDIA H200", "group": 0}


def test_one_h200_allreduce_with_nccl_debug_info():
    # nccl-tests 2.19.6 on NCCL 2.28.3, one H200 in a VM: NCCL's INFO lines (64 channels, a Trees line NCCL cut
    # short, NET/IB finding no device) sit between the rank line and the table and are not rows.
    result = _parse("nccl_debug/device-h200-vm-1gpu-allreduce-nccl-debug-info.txt")
    assert result["test"] == "all_reduce_perf"
    assert result["parameters"] == {
        "n_threads": 1, "n_gpus": 1, "min_bytes": 8, "max_bytes": 268435456, "warmup_iters": 1, "iters": 20}
    assert result["ranks"] == [dict(H200_RANK, pid=1976)]
    # -b 8 -e 256M -f 4: 8 B times 4 up to 128 MiB, the next step (512 MiB) being past the end.
    assert [row["size_bytes"] for row in result["rows"]] == [8 * 4 ** step for step in range(13)]
    assert result["rows"][0] == {
        "size_bytes": 8, "count": 2, "type": "float", "redop": "sum", "root": -1,
        "out_of_place": {"time_us": 6.21, "algbw": 0.0, "busbw": 0.0, "wrong": 0, "max_error": None},
        "in_place": {"time_us": 0.29, "algbw": 0.03, "busbw": 0.0, "wrong": 0, "max_error": None},
    }
    assert result["rows"][-1] == {
        "size_bytes": 134217728, "count": 33554432, "type": "float", "redop": "sum", "root": -1,
        "out_of_place": {"time_us": 66.58, "algbw": 2015.8, "busbw": 0.0, "wrong": 0, "max_error": None},
        "in_place": {"time_us": 0.2, "algbw": 688120.0, "busbw": 0.0, "wrong": 0, "max_error": None},
    }
    # One rank: all_reduce's factor 2(n-1)/n is 0, so every busbw and "# Avg bus bandwidth : 0" are 0, not a fault.
    assert (result["avg_bus_bandwidth"], result["busbw_max"], result["wrong"]) == (0.0, 0.0, 0)
    assert result["error"] is None and result["errors"] == []


def test_one_h200_allreduce_without_checking_has_no_wrong_count():
    # -c 0 (validation: 0): every #wrong cell is N/A and the summary still says "Out of bounds values : 0 OK".
    result = _parse("nccl_tests/device-h200-vm-1gpu-allreduce-no-check.txt")
    assert result["parameters"] == {
        "n_threads": 1, "n_gpus": 1, "min_bytes": 8, "max_bytes": 134217728, "warmup_iters": 1, "iters": 5}
    assert result["ranks"] == [dict(H200_RANK, pid=2025)]
    assert [row["size_bytes"] for row in result["rows"]] == [8 * 2 ** step for step in range(25)]
    assert {side["wrong"] for row in result["rows"] for side in (row["out_of_place"], row["in_place"])} == {None}
    assert result["wrong"] is None  # nothing was checked: unknown, not "0 wrong"
    row_16m = next(row for row in result["rows"] if row["size_bytes"] == 16777216)
    assert row_16m["out_of_place"] == {"time_us": 11.56, "algbw": 1451.8, "busbw": 0.0, "wrong": None, "max_error": None}
    assert row_16m["in_place"] == {"time_us": 1.07, "algbw": 15750.0, "busbw": 0.0, "wrong": None, "max_error": None}
    assert (result["avg_bus_bandwidth"], result["busbw_max"], result["error"], result["errors"]) == (0.0, 0.0, None, [])


def test_one_h200_allgather_prints_a_large_bandwidth_in_exponent_form():
    result = _parse("nccl_debug/device-h200-vm-1gpu-allgather-nccl-debug-info.txt")
    assert result["test"] == "all_gather_perf"
    assert (result["parameters"]["min_bytes"], result["parameters"]["max_bytes"]) == (1048576, 1073741824)
    assert result["ranks"] == [dict(H200_RANK, pid=2014)]
    assert [row["size_bytes"] for row in result["rows"]] == [1048576 * 4 ** step for step in range(6)]
    assert {row["redop"] for row in result["rows"]} == {"none"}  # all_gather reduces nothing
    # The 1 GiB in-place row's algbw is printed "1e+06", exponent form, where the other cells are fixed-point.
    assert result["rows"][-1]["in_place"] == {"time_us": 0.91, "algbw": 1e6, "busbw": 0.0, "wrong": 0, "max_error": None}
    assert result["rows"][-1]["out_of_place"]["algbw"] == 2109.8
    assert (result["avg_bus_bandwidth"], result["wrong"], result["error"], result["errors"]) == (0.0, 0, None, [])


def test_cuda_failure_run():
    result = _parse("nccl_tests/nccl-tests-338-ERROR-h20-vm-cuda-system-not-initialized.txt")
    assert result["error"] == (
        "gpu: Test CUDA failure common.cu:1030 'system not yet initialized'; .. gpu pid 3018: Test failure common.cu:937"
    )
    assert result["rows"] == [] and result["avg_bus_bandwidth"] is None and result["wrong"] is None


@pytest.mark.parametrize("relpath", RUNS_CUT_BEFORE_RESULTS)
def test_output_cut_before_results_is_an_error(relpath):
    result = _parse(relpath)
    assert result["rows"] == []
    assert result["error"] == "nccl-tests printed no results (the output ends before the first result row)"
    assert result["parameters"]["n_threads"] == 1
    assert result["ranks"]


def test_gather_perf_name_and_ranks():
    result = _parse("nccl_debug/nccl-tests-350-a100pcie-mixed-roce-ib-topo-dump.txt")
    assert result["test"] == "gather_perf"
    assert [(rank["host"], rank["bus_id"]) for rank in result["ranks"]] == [("n013", "0000:81:00"), ("n014", "0000:81:00")]
    assert result["parameters"]["max_bytes"] == 12884901888


def test_out_of_bounds_values_fail_the_run():
    # The real moc run with its verdict changed to a failure, as nccl-tests prints it when data is corrupt.
    text = read_fixture("nccl_tests/moc-h100-roce-2node-allreduce.txt")
    text = text.replace("15.12   15.12      0    70967", "15.12   15.12      3    70967")
    text = text.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED")
    result = parse_nccl_tests(text)
    assert result["wrong"] == 3
    assert result["rows"][0]["out_of_place"]["wrong"] == 3
    assert result["error"] == "Out of bounds values: 3 FAILED"


def test_run_stopped_mid_table_is_an_error():
    text = read_fixture("nccl_tests/moc-h100-roce-2node-allreduce.txt").split("  5368709120")[0]
    result = parse_nccl_tests(text)
    assert len(result["rows"]) == 2
    assert result["error"] == "nccl-tests stopped before printing '# Avg bus bandwidth' (the run did not finish)"


def test_extra_column_is_skipped():
    text = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong  extra    time   algbw   busbw #wrong\n"
        "     1048576        262144     float     sum      -1    135.3    7.75   15.02      0    9.9    132.7    7.90   15.31      0\n"
        "# Out of bounds values : 0 OK\n"
        "# Avg bus bandwidth    : 15.165\n"
    )
    result = parse_nccl_tests(text)
    assert result["rows"][0]["out_of_place"] == {"time_us": 135.3, "algbw": 7.75, "busbw": 15.02, "wrong": 0, "max_error": None}
    assert result["rows"][0]["in_place"]["busbw"] == 15.31
    assert result["error"] is None


@pytest.mark.parametrize(
    "text,message",
    [
        ("", "the output is empty"),
        ("some unrelated log\nline two\n", "no results table, '# nThread' header, '# Avg bus bandwidth' or test failure found"),
        ("#       size         count      type   redop\n", "lacks the column\\(s\\) time, algbw, busbw"),
        ("# Avg bus bandwidth    : fast\n", "the average bus bandwidth 'fast' is not a number"),
    ],
)
def test_unknown_formats_raise_parse_error(text, message):
    with pytest.raises(ParseError, match="cannot parse `nccl-tests` output: .*" + message):
        parse_nccl_tests(text)


_FIXTURE_LINES = [
    line for relpath in sorted(RUNS_WITH_RESULTS) + RUNS_CUT_BEFORE_RESULTS for line in read_fixture(relpath).split("\n")
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_FIXTURE_LINES) | st.text(max_size=80), max_size=40))
def test_any_mix_of_lines_parses_or_raises_parse_error(lines):
    # Shuffled, cut and garbled outputs must never end in a traceback, and never pass silently.
    try:
        result = parse_nccl_tests("\n".join(lines))
    except ParseError:
        return
    assert result["error"] is not None or (result["rows"] and result["avg_bus_bandwidth"] is not None)
