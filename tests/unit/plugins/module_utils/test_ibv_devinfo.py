# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_ibv_devinfo on every real `ibv_devinfo` capture in tests/fixtures/ibstat_ibv_devinfo."""

from __future__ import annotations

import pytest
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo, roce_v2_gid_index
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

FOLDER = "ibstat_ibv_devinfo"

# Devices in order, with (device, port, state, link layer, active MTU, firmware, vendor part id) for named ports.
EXPECTED = {
    "asus-esc8000a-e12-ibv_devinfo-cx7-eth-portdown.txt": {
        "devices": ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"],
        "ports": [("mlx5_0", 1, "DOWN", "Ethernet", 1024, "28.41.1000", 4129),
                  ("mlx5_2", 1, "DOWN", "Ethernet", 4096, "28.43.2566", 4129)],
    },
    "heioy-ibv_devinfo-2x-cx3-ib-old-tab-format.txt": {
        "devices": ["mlx4_1", "mlx4_0"],
        "ports": [("mlx4_1", 1, "ACTIVE", "InfiniBand", 4096, "2.42.5000", 4099),
                  ("mlx4_1", 2, "DOWN", "InfiniBand", 4096, "2.42.5000", 4099),
                  ("mlx4_0", 1, "ACTIVE", "InfiniBand", 4096, "2.42.5000", 4099)],
    },
    "heioy-ibv_devinfo-v-cx3-port2-polling-old-tab-format.txt": {
        "devices": ["mlx4_1"],
        "ports": [("mlx4_1", 2, "DOWN", "InfiniBand", 4096, "2.42.5000", 4099)],
    },
    "puget-wrx90-ibv_devinfo-cx7-eth.txt": {
        "devices": ["mlx5_0", "mlx5_1"],
        "ports": [("mlx5_1", 1, "DOWN", "Ethernet", 1024, "28.44.1036", 4129)],
    },
}


def test_every_ibv_devinfo_fixture_has_expectations():
    assert sorted(EXPECTED) == [name for name in fixture_names(FOLDER) if "ibv_devinfo" in name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parse_ibv_devinfo_fixture(name):
    expected = EXPECTED[name]
    parsed = parse_ibv_devinfo(read_fixture("%s/%s" % (FOLDER, name)))
    assert parsed["errors"] == []
    assert [device["name"] for device in parsed["devices"]] == expected["devices"]
    devices = {device["name"]: device for device in parsed["devices"]}
    for device_name, number, state, layer, mtu, firmware, part in expected["ports"]:
        device = devices[device_name]
        port = next(p for p in device["ports"] if p["port"] == number)
        assert (port["state"], port["link_layer"], port["active_mtu"], port["max_mtu"]) == (state, layer, mtu, 4096)
        assert (device["fw_ver"], device["vendor_part_id"], device["transport"]) == (firmware, part, "InfiniBand")


def test_two_port_cx3_lists_both_ports_and_lids():
    parsed = parse_ibv_devinfo(read_fixture(FOLDER + "/heioy-ibv_devinfo-2x-cx3-ib-old-tab-format.txt"))
    mlx4_1 = parsed["devices"][0]
    assert mlx4_1["phys_port_cnt"] == 2
    assert [port["port"] for port in mlx4_1["ports"]] == [1, 2]
    assert (mlx4_1["ports"][0]["sm_lid"], mlx4_1["ports"][0]["port_lid"]) == (1, 22)
    assert mlx4_1["board_id"] == "MT_1090120019"
    # Without -v there is no width, speed or physical state.
    assert (mlx4_1["ports"][0]["active_width"], mlx4_1["ports"][0]["rate_gbps"]) == (None, None)


def test_verbose_output_gives_rate_physical_state_and_gids():
    parsed = parse_ibv_devinfo(read_fixture(FOLDER + "/heioy-ibv_devinfo-v-cx3-port2-polling-old-tab-format.txt"))
    port = parsed["devices"][0]["ports"][0]
    assert port["physical_state"] == "Polling"
    assert (port["active_width"], port["active_speed"], port["rate_gbps"]) == ("4X", "2.5 Gbps", 10.0)
    assert port["gids"] == [{"index": 0, "gid": "fe80:0000:0000:0000:7cfe:9003:00a5:95c2", "type": None}]
    # Device-level capability lists of -v do not leak into the device's fields.
    assert parsed["devices"][0]["phys_port_cnt"] == 2


def test_newer_gid_lines_with_types_give_the_roce_v2_index():
    # rdma-core 28+ prints the GID type after the address; the layout of the capture is otherwise kept.
    text = read_fixture(FOLDER + "/heioy-ibv_devinfo-v-cx3-port2-polling-old-tab-format.txt").replace(
        "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:7cfe:9003:00a5:95c2",
        "\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:7cfe:9003:00a5:95c2, RoCE v1\n"
        "\t\t\tGID[  1]:\t\tfe80:0000:0000:0000:7cfe:9003:00a5:95c2, RoCE v2\n"
        "\t\t\tGID[  3]:\t\t::ffff:10.20.1.50, RoCE v2")
    gids = parse_ibv_devinfo(text)["devices"][0]["ports"][0]["gids"]
    assert [(gid["index"], gid["type"]) for gid in gids] == [(0, "RoCE v1"), (1, "RoCE v2"), (3, "RoCE v2")]
    assert roce_v2_gid_index(gids) == 3


def test_no_device_message_is_an_error_line_not_a_failure():
    # What ibv_devinfo prints on this lab machine (no RDMA driver), see shared LAB.md.
    parsed = parse_ibv_devinfo("Failed to get IB devices list: Function not implemented\n")
    assert parsed == {"devices": [], "errors": ["Failed to get IB devices list: Function not implemented"]}


@pytest.mark.parametrize("garbage", ["just some words", "state: PORT_ACTIVE (4)"])
def test_garbage_raises_a_clear_parse_error(garbage):
    with pytest.raises(ParseError, match=r"cannot parse `ibv_devinfo` output: no 'hca_id:' block"):
        parse_ibv_devinfo(garbage)


def test_device_without_port_block_says_so_in_errors():
    # Derived from the Puget capture: cut before its "port:   1" line.
    text = read_fixture(FOLDER + "/puget-wrx90-ibv_devinfo-cx7-eth.txt")
    parsed = parse_ibv_devinfo(text[:text.index("port:")])
    assert parsed["devices"][0]["name"] == "mlx5_0" and parsed["devices"][0]["ports"] == []
    assert parsed["errors"] == ["hca_id mlx5_0 lists no port (no 'port: <n>' block): the output is cut or the "
                                "device is gone"]


def test_lost_port_header_is_refused_instead_of_mixing_two_ports():
    # Derived from the heioy capture (two ports, TAB layout): the "port:\t2" line is deleted, so port 2's fields
    # would overwrite port 1's.
    text = read_fixture(FOLDER + "/heioy-ibv_devinfo-2x-cx3-ib-old-tab-format.txt").replace("\t\tport:\t2\n", "", 1)
    with pytest.raises(ParseError, match=r"line 21 \(state:\s+PORT_DOWN \(1\)\): a second 'state' in the same block"):
        parse_ibv_devinfo(text)
