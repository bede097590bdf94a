# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_nvidia_smi_topo on every real `nvidia-smi topo -m` capture in tests/fixtures/nvidia_smi_topo."""

from __future__ import annotations

import pytest
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.nvidia_smi_topo import (
    parse_nvidia_smi_query_gpu,
    parse_nvidia_smi_topo,
)
from ansible_collections.gpufabric.core.plugins.module_utils.parse_common import ParseError

FOLDER = "nvidia_smi_topo"

# Values read from the captures. nics: (column name, device); nearest: GPU -> devices with its best link;
# link: GPU -> that link; cpu/numa: GPU -> CPU and NUMA affinity; nvlink: GPU -> {peer: links}.
EXPECTED = {
    "asus-esc8000a-e12-4x-rtx6000ada-4nic.txt": {
        "gpus": 4,
        "nics": [("NIC0", "mlx5_0"), ("NIC1", "mlx5_1"), ("NIC2", "mlx5_2"), ("NIC3", "mlx5_3")],
        "nearest": {"GPU0": ["mlx5_0", "mlx5_1"], "GPU3": ["mlx5_2", "mlx5_3"]},
        "link": {"GPU0": "NODE", "GPU3": "NODE"},
        "cpu": {"GPU0": "0-31", "GPU2": "32-63"}, "numa": {"GPU1": 0, "GPU2": 1},
        "nvlink": {"GPU0": {}}, "legend": True,
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


def test_ansi_underlined_header_and_empty_tab_cell():
    # tempura: ESC[4m...ESC[0m around the header and a double TAB before the GPU NUMA ID "N/A".
    parsed = parse_nvidia_smi_topo(read_fixture(FOLDER + "/tempura-8x-quadro-rtx6000-pcie-switch-ansi.txt"))
    assert parsed["attribute_columns"] == ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert parsed["matrix"]["GPU0"]["GPU1"] == "PIX"
    assert parsed["matrix"]["GPU0"]["GPU2"] == "PXB"
    assert parsed["gpus"][0]["gpu_numa_id"] is None


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
