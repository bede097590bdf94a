# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_ibstat on every real `ibstat` capture in tests/fixtures/ibstat_ibv_devinfo, and the state spellings."""

from __future__ import annotations

import pytest
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibstat import (
    normalize_physical_state,
    normalize_port_state,
    parse_ibstat,
    parse_rate_gbps,
)
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

FOLDER = "ibstat_ibv_devinfo"

# Values read from the captures: CA count, CAs whose port is not Active, number of InfiniBand ports,
# and a few named ports as (CA, port, state, physical state, rate, link layer, CA type, firmware).
EXPECTED = {
    "gpud-a100-ibstat-9x-mt4126-ib-200g.txt": {
        "count": 9, "down": [], "infiniband": 8,
        "ports": [("mlx5_0", 1, "ACTIVE", "LinkUp", 200.0, "Ethernet", "MT4126", "22.35.2302"),
                  ("mlx5_8", 1, "ACTIVE", "LinkUp", 200.0, "InfiniBand", "MT4126", "28.37.1014")],
    },
    "gpud-h100-ibstat-8x-cx7-ib-400g-some-down.txt": {
        "count": 12, "down": ["mlx5_2", "mlx5_7", "mlx5_8"], "infiniband": 8,
        "ports": [("mlx5_0", 1, "ACTIVE", "LinkUp", 400.0, "InfiniBand", "MT4129", "28.39.1002"),
                  ("mlx5_2", 1, "DOWN", "Disabled", 40.0, "Ethernet", "MT4125", "22.38.1002"),
                  ("mlx5_1", 1, "ACTIVE", "LinkUp", 100.0, "Ethernet", "MT4125", "22.38.1002")],
    },
    "gpud-h100-ibstat-8x-cx7-roce-400g-4x-cx6dx.txt": {
        "count": 12, "down": [], "infiniband": 0,
        "ports": [("mlx5_0", 1, "ACTIVE", "LinkUp", 400.0, "Ethernet", "MT4129", "28.39.1002"),
                  ("mlx5_1", 1, "ACTIVE", "LinkUp", 100.0, "Ethernet", "MT4125", "22.39.1002")],
    },
    "gpud-h100-ibstat-8x-cx7-roce-some-down.txt": {
        "count": 12, "down": ["mlx5_11", "mlx5_5"], "infiniband": 0,
        "ports": [("mlx5_5", 1, "DOWN", "Disabled", 40.0, "Ethernet", "MT4129", "28.39.1002"),
                  ("mlx5_9", 1, "ACTIVE", "LinkUp", 400.0, "Ethernet", "MT4129", "28.39.1002")],
    },
    "l2fwd-nv-6-ibstat-cx6dx-2port-roce-100g.txt": {
        "count": 2, "down": [], "infiniband": 0,
        "ports": [("mlx5_0", 1, "ACTIVE", "LinkUp", 100.0, "Ethernet", "MT4125", "22.32.2004"),
                  ("mlx5_1", 1, "ACTIVE", "LinkUp", 100.0, "Ethernet", "MT4125", "22.32.2004")],
    },
    "mooncake-2039-ibstat-8x-cx7-ib400-4x-cx6dx-eth.txt": {
        "count": 12, "down": ["mlx5_1", "mlx5_2"], "infiniband": 8,
        "ports": [("mlx5_0", 1, "ACTIVE", "LinkUp", 400.0, "InfiniBand", "MT4129", "28.41.1000"),
                  ("mlx5_1", 1, "DOWN", "Disabled", 40.0, "Ethernet", "MT4125", "22.38.1002")],
    },
}

# What ibstat prints when a CA it lists cannot be read (infiniband-diags IBPANIC, as published in the
# singularity HPC notes quoted in the code index: "ibpanic: [2137592] main: stat of IB device 'mthca0' failed").
IBPANIC_LINE = "ibpanic: [2137592] main: stat of IB device 'mthca0' failed: No such file or directory"


def _ibstat_fixtures():
    return [name for name in fixture_names(FOLDER) if "ibstat" in name]


def test_every_ibstat_fixture_has_expectations():
    assert sorted(EXPECTED) == _ibstat_fixtures()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parse_ibstat_fixture(name):
    expected = EXPECTED[name]
    parsed = parse_ibstat(read_fixture("%s/%s" % (FOLDER, name)))
    cas = {ca["name"]: ca for ca in parsed["cas"]}
    assert len(parsed["cas"]) == expected["count"]
    assert parsed["errors"] == []
    assert sorted(n for n, ca in cas.items() if ca["ports"][0]["state"] != "ACTIVE") == sorted(expected["down"])
    assert sum(ca["ports"][0]["link_layer"] == "InfiniBand" for ca in parsed["cas"]) == expected["infiniband"]
    for ca_name, number, state, physical, rate, layer, ca_type, firmware in expected["ports"]:
        ca = cas[ca_name]
        port = next(p for p in ca["ports"] if p["port"] == number)
        assert (port["state"], port["physical_state"], port["rate_gbps"], port["link_layer"]) == (state, physical, rate, layer)
        assert (ca["ca_type"], ca["firmware_version"], ca["number_of_ports"]) == (ca_type, firmware, 1)


def test_ibstat_keeps_lexical_ca_order_and_guids():
    parsed = parse_ibstat(read_fixture(FOLDER + "/mooncake-2039-ibstat-8x-cx7-ib400-4x-cx6dx-eth.txt"))
    assert [ca["name"] for ca in parsed["cas"]][:5] == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", "mlx5_2"]
    mlx5_0 = parsed["cas"][0]
    assert mlx5_0["node_guid"] == "0x58a2e103001b2576"
    assert mlx5_0["ports"][0]["sm_lid"] == 1024
    assert mlx5_0["ports"][0]["base_lid"] == 287
    assert parsed["cas"][1]["ports"][0]["port_guid"] == "0x0000000000000000"


def test_ibstat_error_tail_is_kept_beside_the_cas():
    text = read_fixture(FOLDER + "/l2fwd-nv-6-ibstat-cx6dx-2port-roce-100g.txt").rstrip("\n") + "\n" + IBPANIC_LINE + "\n"
    parsed = parse_ibstat(text)
    assert [ca["name"] for ca in parsed["cas"]] == ["mlx5_0", "mlx5_1"]
    assert parsed["errors"] == [IBPANIC_LINE]


def test_ibstat_with_only_an_error_gives_no_ca_and_the_error():
    assert parse_ibstat(IBPANIC_LINE + "\n") == {"cas": [], "errors": [IBPANIC_LINE]}


def test_ibstat_reads_unseen_rate_units_and_extra_fields():
    text = read_fixture(FOLDER + "/l2fwd-nv-6-ibstat-cx6dx-2port-roce-100g.txt")
    text = text.replace("Rate: 100", "Rate: 200 Gb/sec (4X HDR)", 1).replace(
        "Link layer: Ethernet", "Link layer: Ethernet\n                Future field: 7", 1)
    ports = [ca["ports"][0] for ca in parse_ibstat(text)["cas"]]
    assert [port["rate_gbps"] for port in ports] == [200.0, 100.0]
    assert ports[0]["link_layer"] == "Ethernet"


@pytest.mark.parametrize("garbage", ["hello world\nthis is not ibstat", "Port 1:\n\tState: Active"])
def test_ibstat_garbage_raises_a_clear_parse_error(garbage):
    with pytest.raises(ParseError, match=r"cannot parse `ibstat` output: no \"CA '<name>'\" block"):
        parse_ibstat(garbage)


@pytest.mark.parametrize("value", ["", "   \n", None, 42])
def test_ibstat_empty_or_wrong_type_raises(value):
    with pytest.raises(ParseError, match="ibstat"):
        parse_ibstat(value)


@pytest.mark.parametrize("raw, expected", [
    ("Active", "ACTIVE"), ("Down", "DOWN"), ("Initializing", "INIT"), ("Armed", "ARMED"),
    ("PORT_ACTIVE (4)", "ACTIVE"), ("PORT_DOWN (1)", "DOWN"), ("4: ACTIVE", "ACTIVE"), ("1: DOWN", "DOWN"),
    ("2: INIT", "INIT"), ("", None),
])
def test_port_state_spellings_of_every_source_agree(raw, expected):
    assert normalize_port_state(raw) == expected


@pytest.mark.parametrize("raw, expected", [
    ("LinkUp", "LinkUp"), ("5: LinkUp", "LinkUp"), ("LINK_UP (5)", "LinkUp"), ("POLLING (2)", "Polling"),
    ("3: Disabled", "Disabled"), ("Disabled", "Disabled"), ("SLEEP (1)", "Sleep"),
])
def test_physical_state_spellings_of_every_source_agree(raw, expected):
    assert normalize_physical_state(raw) == expected


@pytest.mark.parametrize("raw, expected", [
    ("400", 400.0), ("400 Gb/sec (4X NDR)", 400.0), ("2.5 Gbps", 2.5), ("100 Gb/s", 100.0),
    ("56 Gb/sec (4X FDR)", 56.0), ("25000 Mb/s", 25.0), ("unknown", None), ("", None),
])
def test_rate_units(raw, expected):
    assert parse_rate_gbps(raw) == expected


def test_ca_without_port_block_says_so_in_errors():
    # Derived from the l2fwd capture: the output is cut after mlx5_1's "Node GUID" line, before its "Port 1:"
    # block, as an ibstat killed by a timeout leaves it.
    text = read_fixture(FOLDER + "/l2fwd-nv-6-ibstat-cx6dx-2port-roce-100g.txt")
    second = text.index("CA 'mlx5_1'")
    text = text[:second] + text[second:text.index("Port 1:", second)]
    parsed = parse_ibstat(text)
    assert [ca["name"] for ca in parsed["cas"]] == ["mlx5_0", "mlx5_1"]
    assert parsed["cas"][0]["ports"][0]["state"] == "ACTIVE"
    assert parsed["errors"] == ["CA 'mlx5_1' lists no port (no 'Port <n>:' block): the output is cut or the "
                                "device is gone"]


def test_lost_ca_header_is_refused_instead_of_mixing_two_cas():
    # Derived from the l2fwd capture: the "CA 'mlx5_1'" line is deleted, so mlx5_1's fields and port would land
    # in mlx5_0.
    text = read_fixture(FOLDER + "/l2fwd-nv-6-ibstat-cx6dx-2port-roce-100g.txt").replace("CA 'mlx5_1'\n", "", 1)
    with pytest.raises(ParseError, match=r"line 18 \(CA type: MT4125\): a second 'ca_type' in the same block"):
        parse_ibstat(text)


def test_lost_port_header_is_refused():
    # Derived from the l2fwd capture: mlx5_0's "Port 1:" line is deleted; its State would have no port.
    text = read_fixture(FOLDER + "/l2fwd-nv-6-ibstat-cx6dx-2port-roce-100g.txt").replace("        Port 1:\n", "", 1)
    with pytest.raises(ParseError, match=r"line 8 \(State: Active\): 'State' outside any port block of CA 'mlx5_0'"):
        parse_ibstat(text)
