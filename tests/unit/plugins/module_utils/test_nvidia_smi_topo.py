# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_nvidia_smi_topo on every real `nvidia-smi topo -m` capture in tests/fixtures/nvidia_smi_topo."""

from __future__ import annotations

import pytest
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.nvidia_smi_topo import (
    parse_nvidia_smi_query_gpu,
    parse_nvidia_smi_topo,
)
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

FOLDER = "nvidia_smi_topo"

# Values read from the captures. nics: (column name, device); nearest: GPU -> devices with its best link;
# link: GPU -> that link; cpu/numa: GPU -> CPU and NUMA affinity; nvlink: GPU -> {peer: links}.
EXPECTED = {
    "aerial-gh200-1gpu-4nic-gpu-numa-id.txt": {
        "gpus": 1,
        "nics": [("NIC%d" % i, "mlx5_%d" % i) for i in range(4)],
        "nearest": {"GPU0": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"]},
        "link": {"GPU0": "NODE"},
        "cpu": {"GPU0": "0-71"}, "numa": {"GPU0": 0},
        "nvlink": {"GPU0": {}}, "legend": True,
    },
    "asus-esc8000a-e12-4x-rtx6000ada-4nic.txt": {
        "gpus": 4,
        "nics": [("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"), ("NIC2", "mlx5_2"), ("NIC3", "mlx5_3")],
        "nearest": {"GPU0": ["mlx5_0", "mlx5_1"], "GPU3": ["mlx5_2", "mlx5_3"]},
        "link": {"GPU0": "NODE", "GPU3": "NODE"},
        "cpu": {"GPU0": "0-31", "GPU2": "32-63"}, "numa": {"GPU1": 0, "GPU2": 1},
        "nvlink": {"GPU0": {}}, "legend": True,
    },
    # Grace-Blackwell: every NIC is SYS from every GPU (the GPU reaches the CPU over NVLink-C2C); NUMA Affinity
    # lists the CPU node first. Which NIC is near is topology's call, from the NICs' NUMA nodes in sysfs.
    # One H200 in a VM, captured on a GPU machine lent to this project: no NIC, no peer, a 1x1 matrix.
    "device-h200-vm-1gpu-no-nic.txt": {
        "gpus": 1, "nics": [],
        "nearest": {"GPU0": []},
        "link": {"GPU0": None},
        "cpu": {"GPU0": "0-15"}, "numa": {"GPU0": 0},
        "nvlink": {"GPU0": {}}, "legend": True,
    },
    "gb200-4gpu-8nic-numa-lists.txt": {
        "gpus": 4,
        "nics": [("NIC%d" % i, "mlx5_%d" % i) for i in range(8)],
        "nearest": {"GPU%d" % i: ["mlx5_%d" % n for n in range(8)] for i in range(4)},
        "link": {"GPU%d" % i: "SYS" for i in range(4)},
        "cpu": {"GPU0": "0-71", "GPU1": "0-71", "GPU2": "72-143", "GPU3": "72-143"},
        "numa": {"GPU0": 0, "GPU1": 0, "GPU2": 1, "GPU3": 1},
        "nvlink": {"GPU0": {"GPU1": 18, "GPU2": 18, "GPU3": 18}}, "legend": True,
    },
    "nccl-tests-321-h20-vm-8gpu-8nic-no-legend.txt": {
        "gpus": 8,
        "nics": [("NIC%d" % i, None) for i in range(8)],
        "nearest": {"GPU0": ["NIC7"], "GPU3": ["NIC4"], "GPU7": ["NIC0"]},
        "link": {"GPU0": "PIX", "GPU7": "PIX"},
        "cpu": {"GPU0": "0-63", "GPU4": "64-127"}, "numa": {"GPU3": 0, "GPU4": 1},
        "nvlink": {"GPU0": {"GPU%d" % i: 18 for i in range(1, 8)}}, "legend": False,
    },
    "princeton-della-2x-a100-2nic-mlx5-columns.txt": {
        "gpus": 2,
        "nics": [("mlx5_0", "mlx5_0"), ("mlx5_1", "mlx5_1")],
        "nearest": {"GPU0": ["mlx5_0"], "GPU1": ["mlx5_1"]},
        "link": {"GPU0": "NODE", "GPU1": "NODE"},
        "cpu": {"GPU0": "0-63", "GPU1": "64-127"}, "numa": {"GPU0": 0, "GPU1": 1},
        "nvlink": {"GPU0": {}, "GPU1": {}}, "legend": True,
    },
    "puget-wrx90-2gpu-2nic-single-numa.txt": {
        "gpus": 2,
        "nics": [("NIC0", "mlx5_0"), ("NIC1", "mlx5_1")],
        "nearest": {"GPU0": ["mlx5_0", "mlx5_1"], "GPU1": ["mlx5_0", "mlx5_1"]},
        "link": {"GPU0": "NODE"},
        "cpu": {"GPU0": "0-23", "GPU1": "0-23"}, "numa": {"GPU0": 0, "GPU1": 0},
        "nvlink": {"GPU0": {}}, "legend": True,
    },
    "rwth-c16g-2x-p100-sxm2-nv2-ansi.txt": {
        "gpus": 2, "nics": [],
        "nearest": {"GPU0": [], "GPU1": []},
        "link": {"GPU0": None},
        "cpu": {"GPU0": "0-11", "GPU1": "12-23"}, "numa": {"GPU0": 0, "GPU1": 1},
        "nvlink": {"GPU0": {"GPU1": 2}, "GPU1": {"GPU0": 2}}, "legend": True,
    },
    "sirius-gb200-4gpu-hardware-md-no-nic-columns.txt": {
        "gpus": 4, "nics": [],
        "nearest": {"GPU0": [], "GPU3": []},
        "link": {"GPU0": None},
        "cpu": {"GPU1": "0-71", "GPU2": "72-143"}, "numa": {"GPU1": 0, "GPU2": 1},
        "nvlink": {"GPU3": {"GPU0": 18, "GPU1": 18, "GPU2": 18}}, "legend": True,
    },
    "sglang-28424-h800-nv8-9nic-bond.txt": {
        "gpus": 8,
        "nics": [("NIC0", "mlx5_0")] + [("NIC%d" % i, "mlx5_%d" % (i + 2)) for i in range(1, 8)]
        + [("NIC8", "mlx5_bond_0")],
        "nearest": {"GPU0": ["mlx5_0"], "GPU1": ["mlx5_3"], "GPU4": ["mlx5_6"], "GPU7": ["mlx5_9"]},
        "link": {"GPU0": "PIX", "GPU7": "PIX"},
        "cpu": {"GPU0": "0-55,112-167", "GPU5": "56-111,168-223"}, "numa": {"GPU0": 0, "GPU5": 1},
        "nvlink": {"GPU2": {"GPU%d" % i: 8 for i in range(8) if i != 2}}, "legend": True,
    },
    "sglang-30401-hgx-h100-8gpu-8nic.txt": {
        "gpus": 8,
        "nics": [("NIC%d" % i, "mlx5_%d" % i) for i in range(8)],
        "nearest": {"GPU%d" % i: ["mlx5_%d" % i] for i in range(8)},
        "link": {"GPU%d" % i: "PIX" for i in range(8)},
        "cpu": {"GPU3": "0-47,96-143", "GPU4": "48-95,144-191"}, "numa": {"GPU3": 0, "GPU4": 1},
        "nvlink": {"GPU7": {"GPU%d" % i: 18 for i in range(7)}}, "legend": True,
    },
    "tempura-8x-quadro-rtx6000-pcie-switch-ansi.txt": {
        "gpus": 8, "nics": [],
        "nearest": {"GPU0": []},
        "link": {"GPU0": None},
        "cpu": {"GPU0": "0-19", "GPU7": "0-19"}, "numa": {"GPU0": 0, "GPU7": 0},
        "nvlink": {"GPU0": {}}, "legend": True,
    },
}


def test_every_topo_fixture_has_expectations():
    assert sorted(EXPECTED) == fixture_names(FOLDER)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parse_topo_fixture(name):
    expected = EXPECTED[name]
    parsed = parse_nvidia_smi_topo(read_fixture("%s/%s" % (FOLDER, name)))
    assert [gpu["name"] for gpu in parsed["gpus"]] == ["GPU%d" % i for i in range(expected["gpus"])]
    assert [(nic["name"], nic["device"]) for nic in parsed["nics"]] == expected["nics"]
    for gpu, devices in expected["nearest"].items():
        assert parsed["nearest_nics"][gpu] == devices, gpu
    for gpu, link in expected["link"].items():
        assert parsed["nearest_link"][gpu] == link, gpu
    gpus = {gpu["name"]: gpu for gpu in parsed["gpus"]}
    for gpu, cpus in expected["cpu"].items():
        assert gpus[gpu]["cpu_affinity"] == cpus
    for gpu, node in expected["numa"].items():
        assert gpus[gpu]["numa_affinity"] == node
    for gpu, peers in expected["nvlink"].items():
        assert parsed["nvlinks"][gpu] == peers
    assert parsed["legend_found"] is expected["legend"]
    # The matrix is square over its devices with X on the diagonal.
    for row, links in parsed["matrix"].items():
        assert links[row] == "X"
        assert set(links) == set(parsed["matrix"])


def test_old_layout_names_devices_in_the_header_and_has_no_gpu_numa_id():
    parsed = parse_nvidia_smi_topo(read_fixture(FOLDER + "/princeton-della-2x-a100-2nic-mlx5-columns.txt"))
    assert parsed["attribute_columns"] == ["CPU Affinity", "NUMA Affinity"]
    assert parsed["matrix"]["mlx5_0"] == {"GPU0": "NODE", "GPU1": "SYS", "mlx5_0": "X", "mlx5_1": "SYS"}
    assert parsed["matrix"]["GPU0"]["GPU1"] == "SYS"


GB200 = FOLDER + "/gb200-4gpu-8nic-numa-lists.txt"


@pytest.mark.parametrize("name", ["gb200-4gpu-8nic-numa-lists.txt", "sirius-gb200-4gpu-hardware-md-no-nic-columns.txt"])
def test_grace_blackwell_numa_lists_name_the_cpu_node_first_and_the_gpu_memory_node(name):
    # GB200 without CDMM: NUMA nodes 0 and 1 hold the Grace CPUs; each GPU's memory is a node of its own
    # (GPU NUMA ID 2, 10, 18, 26) and the nodes of its MIG memory partitions are listed with the CPU node.
    parsed = parse_nvidia_smi_topo(read_fixture("%s/%s" % (FOLDER, name)))
    gpus = {gpu["name"]: gpu for gpu in parsed["gpus"]}
    assert gpus["GPU0"]["numa_affinity_nodes"] == [0] + list(range(3, 10)) + list(range(11, 18))
    assert gpus["GPU1"]["numa_affinity_nodes"] == gpus["GPU0"]["numa_affinity_nodes"]
    assert gpus["GPU3"]["numa_affinity_nodes"] == [1] + list(range(19, 26)) + list(range(27, 34))
    assert [gpu["numa_affinity"] for gpu in parsed["gpus"]] == [0, 0, 1, 1]
    assert [gpu["gpu_numa_id"] for gpu in parsed["gpus"]] == [2, 10, 18, 26]


def test_grace_hopper_gpu_memory_node_beside_a_single_cpu_node():
    parsed = parse_nvidia_smi_topo(read_fixture(FOLDER + "/aerial-gh200-1gpu-4nic-gpu-numa-id.txt"))
    gpu = parsed["gpus"][0]
    assert (gpu["numa_affinity"], gpu["numa_affinity_nodes"], gpu["gpu_numa_id"]) == (0, [0], 1)


def test_x86_captures_keep_one_numa_node_and_no_gpu_memory_node():
    parsed = parse_nvidia_smi_topo(read_fixture(HGX))
    assert [gpu["numa_affinity_nodes"] for gpu in parsed["gpus"]] == [[0]] * 4 + [[1]] * 4
    assert {gpu["gpu_numa_id"] for gpu in parsed["gpus"]} == {None}


def test_backwards_numa_range_is_refused_naming_the_row():
    # Derived from the GB200 capture: GPU2's "1,19-25,27-33" with its first range written backwards (25-19),
    # which has the shape of a node list but names no node.
    text = _edit_row(read_fixture(GB200), "GPU2", "1,19-25,27-33", "1,25-19,27-33")
    with pytest.raises(ParseError) as error:
        parse_nvidia_smi_topo(text)
    assert "row GPU2: NUMA Affinity '1,25-19,27-33' is no list of NUMA nodes" in str(error.value)


def test_ansi_underlined_header_and_empty_tab_cell():
    # tempura: ESC[4m...ESC[0m around the header and a double TAB before the GPU NUMA ID "N/A".
    parsed = parse_nvidia_smi_topo(read_fixture(FOLDER + "/tempura-8x-quadro-rtx6000-pcie-switch-ansi.txt"))
    assert parsed["attribute_columns"] == ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert parsed["matrix"]["GPU0"]["GPU1"] == "PIX"
    assert parsed["matrix"]["GPU0"]["GPU2"] == "PXB"
    assert parsed["gpus"][0]["gpu_numa_id"] is None


def test_single_gpu_of_a_vm_underlined_header_and_gpu_numa_id_not_available():
    # The device capture: ESC[4m...ESC[0m around the header, " X " on the diagonal, an empty cell (two TABs)
    # before GPU NUMA ID "N/A" of an x86 GPU whose memory is no NUMA node of its own.
    parsed = parse_nvidia_smi_topo(read_fixture(FOLDER + "/device-h200-vm-1gpu-no-nic.txt"))
    assert parsed["gpus"] == [{"name": "GPU0", "index": 0, "cpu_affinity": "0-15", "numa_affinity": 0,
                               "numa_affinity_nodes": [0], "gpu_numa_id": None}]
    assert parsed["attribute_columns"] == ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert parsed["matrix"] == {"GPU0": {"GPU0": "X"}} and parsed["nics"] == [] and parsed["errors"] == []


def test_query_gpu_csv_of_a_real_h200():
    parsed = parse_nvidia_smi_query_gpu(read_fixture("nvidia_smi_query/device-h200-vm-index-name-bus-id.txt"))
    assert parsed == [{"index": 0, "model": "NVIDIA H200", "pci_bus_id": "0000:00:06.0"}]


def test_extra_trailing_column_and_other_order_are_read():
    text = read_fixture(FOLDER + "/puget-wrx90-2gpu-2nic-single-numa.txt")
    text = text.replace("GPU NUMA ID", "GPU NUMA ID     Future Column").replace("N/A\n", "N/A     7\n")
    parsed = parse_nvidia_smi_topo(text)
    assert parsed["attribute_columns"] == ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID", "Future Column"]
    assert parsed["gpus"][1]["cpu_affinity"] == "0-23"
    assert parsed["nearest_nics"]["GPU1"] == ["mlx5_0", "mlx5_1"]


def test_missing_legend_keeps_nic_names():
    text = read_fixture(FOLDER + "/sglang-30401-hgx-h100-8gpu-8nic.txt").split("\nLegend:")[0]
    parsed = parse_nvidia_smi_topo(text)
    assert parsed["legend_found"] is False
    assert parsed["nearest_nics"]["GPU5"] == ["NIC5"]


def test_old_driver_link_names_are_ranked_and_reported_as_today():
    # Drivers before 384 printed SOC for SYS and CPU for PHB.
    text = read_fixture(FOLDER + "/asus-esc8000a-e12-4x-rtx6000ada-4nic.txt").replace("NODE", "CPU ").replace("SYS ", "SOC ")
    parsed = parse_nvidia_smi_topo(text)
    assert parsed["nearest_link"]["GPU0"] == "PHB"
    assert parsed["nearest_nics"]["GPU0"] == ["mlx5_0", "mlx5_1"]


def test_crlf_line_endings():
    text = read_fixture(FOLDER + "/sglang-30401-hgx-h100-8gpu-8nic.txt").replace("\n", "\r\n")
    assert parse_nvidia_smi_topo(text)["nearest_nics"]["GPU2"] == ["mlx5_2"]


HGX = FOLDER + "/sglang-30401-hgx-h100-8gpu-8nic.txt"
H800 = FOLDER + "/sglang-28424-h800-nv8-9nic-bond.txt"
TEMPURA = FOLDER + "/tempura-8x-quadro-rtx6000-pcie-switch-ansi.txt"


def _edit_row(text, label, old, new, count=1):
    """Replace `old` by `new` in the matrix row of `label` only; the test fails if `old` is not there."""
    lines = text.split("\n")
    for position, line in enumerate(lines):
        if line.startswith(label) and line.split()[0] == label:  # the header line starts with blanks
            assert old in line, (label, old)
            lines[position] = line.replace(old, new, count)
            return "\n".join(lines)
    raise AssertionError("no row %s" % label)


def test_empty_cpu_affinity_cell_space_layout_keeps_numa_in_its_column():
    # Derived from the HGX H100 capture: GPU4's CPU Affinity "48-95,144-191" is replaced by as many spaces, the
    # way nvidia-smi pads the cell when a Slurm cgroup grants the job no CPU of the GPU's NUMA node. Before, the
    # NUMA value 1 was read as the CPU affinity and the NUMA affinity became null.
    original = parse_nvidia_smi_topo(read_fixture(HGX))
    text = _edit_row(read_fixture(HGX), "GPU4", "48-95,144-191", " " * len("48-95,144-191"))
    parsed = parse_nvidia_smi_topo(text)
    gpu4 = parsed["gpus"][4]
    assert gpu4["cpu_affinity"] == ""
    assert gpu4["numa_affinity"] == 1
    assert gpu4["gpu_numa_id"] is None
    assert parsed["gpus"][:4] == original["gpus"][:4] and parsed["gpus"][5:] == original["gpus"][5:]
    assert parsed["matrix"] == original["matrix"]


def test_empty_cpu_affinity_cell_tab_layout():
    # Derived from the tempura capture (TAB separated): GPU3's "0-19" is deleted, leaving the two TABs that
    # surrounded it, so the empty cell is only whitespace between its neighbours.
    text = _edit_row(read_fixture(TEMPURA), "GPU3", "\t0-19\t", "\t\t")
    gpu3 = parse_nvidia_smi_topo(text)["gpus"][3]
    assert (gpu3["cpu_affinity"], gpu3["numa_affinity"], gpu3["gpu_numa_id"]) == ("", 0, None)


def test_blank_numa_affinity_is_refused_naming_the_line():
    # Derived from the HGX capture: GPU2's NUMA Affinity "0" blanked. A value other than the CPU Affinity
    # missing cannot be placed (its neighbours do not sit under their headers), so the row is refused.
    text = _edit_row(read_fixture(HGX), "GPU2", "0-47,96-143     0 ", "0-47,96-143       ")
    with pytest.raises(ParseError) as error:
        parse_nvidia_smi_topo(text)
    assert "line 4 (GPU2" in str(error.value)
    assert "cannot tell which value is missing" in str(error.value)


@pytest.mark.parametrize("old, new, column", [
    ("SYS     SYS     SYS     SYS ", "SYSSYS     SYS     SYS ", "NIC4"),   # NIC4/NIC5 run together
    ("NODE    SYS ", "NODESYS ", "NIC3"),                                   # NIC3/NIC4 run together
])
def test_run_together_link_cells_are_split(old, new, column):
    # Derived from the H800 capture (9 NICs, the widest here): in GPU0's row the separator between two link
    # cells is deleted, as nvidia-smi prints some rows on hosts with more than ten NICs (PXBNODE, SYSSYS).
    original = parse_nvidia_smi_topo(read_fixture(H800))
    text = _edit_row(read_fixture(H800), "GPU0", old, new)
    assert new.split()[0] in text
    parsed = parse_nvidia_smi_topo(text)
    assert parsed == original
    assert parsed["matrix"]["GPU0"][column] in ("SYS", "NODE")


def test_two_run_together_cells_in_one_row_are_split():
    # Derived from the H800 capture: GPU4's row with two separators deleted (NODE|SYS and SYS|SYS).
    original = parse_nvidia_smi_topo(read_fixture(H800))
    text = _edit_row(read_fixture(H800), "GPU4", "NV8     SYS     SYS     SYS     SYS ", "NV8     SYSSYS     SYSSYS ")
    assert parse_nvidia_smi_topo(text) == original


def test_run_together_pxb_cells_tab_layout():
    # Derived from the tempura capture (TAB separated, PCIe switches): the TAB between GPU0's GPU2 and GPU3
    # cells is deleted, giving PXBPXB.
    original = parse_nvidia_smi_topo(read_fixture(TEMPURA))
    text = _edit_row(read_fixture(TEMPURA), "GPU0", "PXB\tPXB", "PXBPXB")
    assert parse_nvidia_smi_topo(text) == original


def test_cell_that_does_not_split_is_refused_naming_the_line():
    # Derived from the H800 capture: the separator between GPU0's last link cell and its CPU Affinity is
    # deleted; NODE0-55,112-167 is no run of link codes, so the row cannot be read.
    text = _edit_row(read_fixture(H800), "GPU0", "NODE    0-55", "NODE0-55")
    with pytest.raises(ParseError) as error:
        parse_nvidia_smi_topo(text)
    assert "line 2 (GPU0" in str(error.value)
    assert "holds 'NODE0-55,112-167' where a link code" in str(error.value)


def test_row_short_by_more_cells_than_a_split_gives_is_refused():
    # Derived from the H800 capture: one link cell of NIC0's row is blanked and another pair run together; the
    # row is short by two cells and the split gives back only one.
    text = _edit_row(read_fixture(H800), "NIC0", "PIX     NODE    NODE", "PIX             NODENODE")
    text = _edit_row(text, "NIC0", " X      NODE", " X          ")
    with pytest.raises(ParseError) as error:
        parse_nvidia_smi_topo(text)
    assert "line 10 (NIC0" in str(error.value)
    assert "the header has 17 devices" in str(error.value)


def test_no_devices_found_is_an_empty_result_that_says_so():
    parsed = parse_nvidia_smi_topo("No devices were found\n")
    assert parsed["gpus"] == [] and parsed["matrix"] == {}
    assert parsed["errors"] == ["nvidia-smi listed no GPU: No devices were found"]


def test_real_captures_report_no_errors():
    for name in fixture_names(FOLDER):
        assert parse_nvidia_smi_topo(read_fixture("%s/%s" % (FOLDER, name)))["errors"] == [], name


@pytest.mark.parametrize("garbage, message", [
    ("hello\nworld", "no header row naming GPU0"),
    ("GPU0\t X \tNV2\nGPU1\tNV2\t X ", "no header row naming its columns"),
    ("\tGPU0\tGPU1\n", "not followed by any matrix row"),
    ("\tGPU0\tGPU1\nGPU0\t X \nGPU1\tNV2\t X ", "row GPU0 has 1 link cells, the header has 2 devices"),
    ("\tGPU0\tGPU1\nGPU0\t X \t1.5\nGPU1\tNV2\t X ", "holds '1.5' where a link code"),
])
def test_malformed_matrix_raises_a_clear_parse_error(garbage, message):
    with pytest.raises(ParseError, match="nvidia-smi topo -m") as error:
        parse_nvidia_smi_topo(garbage)
    assert message in str(error.value)


def test_query_gpu_csv_normalizes_the_pci_domain():
    # nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader prints an 8-digit PCI domain.
    parsed = parse_nvidia_smi_query_gpu("0, NVIDIA H100 80GB HBM3, 00000000:18:00.0\n1, NVIDIA H100 80GB HBM3, 00000000:2A:00.0\n")
    assert parsed == [
        {"index": 0, "model": "NVIDIA H100 80GB HBM3", "pci_bus_id": "0000:18:00.0"},
        {"index": 1, "model": "NVIDIA H100 80GB HBM3", "pci_bus_id": "0000:2a:00.0"},
    ]


def test_query_gpu_error_text_raises():
    with pytest.raises(ParseError, match="expected 'index, name, pci.bus_id'"):
        parse_nvidia_smi_query_gpu("No devices were found")
