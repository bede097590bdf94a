# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_mlnx_qos on the real `mlnx_qos -i IF` captures in tests/fixtures/mlnx_qos, and on damaged copies of them."""

from __future__ import annotations

import pytest
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.mlnx_qos import parse_mlnx_qos
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

FOLDER = "mlnx_qos"

# The default dscp2prio table: DSCP d to priority d // 8.
DEFAULT_DSCP2PRIO = {dscp: dscp // 8 for dscp in range(64)}
# DSCP 30 and 48 moved to priority 6 by hand (the capture prints priority 6 on two lines).
REMAPPED_DSCP2PRIO = {**DEFAULT_DSCP2PRIO, 30: 6, 48: 6}

EXPECTED = {
    "firmware-dscp-pfc3-ets.txt": {"trust": "dscp", "dcbx_mode": "Firmware controlled", "pfc": [3],
                                   "dscp2prio": DEFAULT_DSCP2PRIO},
    "os-dscp-remapped-pfc3.txt": {"trust": "dscp", "dcbx_mode": "OS controlled", "pfc": [3],
                                  "dscp2prio": REMAPPED_DSCP2PRIO},
    "os-pcp-pfc3.txt": {"trust": "pcp", "dcbx_mode": "OS controlled", "pfc": [3], "dscp2prio": None},
    "os-pcp-pfc-off.txt": {"trust": "pcp", "dcbx_mode": "OS controlled", "pfc": [], "dscp2prio": None},
}


def _fixture(name):
    return read_fixture("%s/%s" % (FOLDER, name))


def test_every_mlnx_qos_fixture_has_expectations():
    assert sorted(EXPECTED) == fixture_names(FOLDER)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_parse_mlnx_qos_fixture(name):
    found = parse_mlnx_qos(_fixture(name))
    want = EXPECTED[name]
    assert found["trust"] == want["trust"]
    assert found["dcbx_mode"] == want["dcbx_mode"]
    assert sorted(found["pfc_enabled"]) == list(range(8))
    assert [priority for priority, on in sorted(found["pfc_enabled"].items()) if on] == want["pfc"]
    assert found["dscp2prio"] == want["dscp2prio"]


def test_tabs_instead_of_spaces_read_the_same():
    """Several posts of this output show tab-indented tables; the parser splits on any whitespace."""
    text = _fixture("os-dscp-remapped-pfc3.txt").replace("        ", "\t")
    assert parse_mlnx_qos(text) == parse_mlnx_qos(_fixture("os-dscp-remapped-pfc3.txt"))


def test_crlf_line_endings_read_the_same():
    text = _fixture("os-pcp-pfc3.txt")
    assert parse_mlnx_qos(text.replace("\n", "\r\n")) == parse_mlnx_qos(text)


def test_without_dcbx_line_the_mode_is_unknown():
    """Older mlnx_qos releases print no DCBX line."""
    text = "\n".join(line for line in _fixture("os-pcp-pfc3.txt").splitlines() if not line.startswith("DCBX"))
    assert parse_mlnx_qos(text)["dcbx_mode"] is None


@pytest.mark.parametrize("damage, message", [
    (lambda text: "", "empty"),
    (lambda text: "Netlink error: Operation not supported\n", "no 'Priority trust state:'"),
    (lambda text: text.replace("Priority trust state: pcp", "Priority trust state: vlan"), "'vlan' is not one of dscp, pcp"),
    (lambda text: text.split("PFC configuration:")[0], "no 'PFC configuration:' table"),
    (lambda text: text.split("PFC configuration:")[0] + "PFC configuration:\n", "truncated"),
    (lambda text: text.replace("enabled     0   0   0   1", "enabled     0   0   0   2"), "not 0 or 1"),
    (lambda text: text.replace("enabled     0   0   0   1   0   0   0   0", "enabled     0   0   0   1   0   0   0"),
     "expected 8 numbers"),
    (lambda text: text.replace("        enabled ", "        enable  "), "expected the PFC 'enabled' row"),
    (lambda text: text.replace("priority    0   1", "priority    1   0"), "priorities are not 0 to 7"),
])
def test_damaged_output_is_refused_with_the_reason(damage, message):
    with pytest.raises(ParseError) as caught:
        parse_mlnx_qos(damage(_fixture("os-pcp-pfc3.txt")))
    assert message in str(caught.value)
    assert "mlnx_qos -i" in str(caught.value)


def test_a_dscp_in_two_priorities_is_refused():
    text = _fixture("firmware-dscp-pfc3-ets.txt").replace("prio:4 dscp:39,", "prio:4 dscp:26,39,")
    with pytest.raises(ParseError, match="DSCP 26 already maps to priority 3"):
        parse_mlnx_qos(text)


def test_a_dscp_out_of_range_is_refused():
    text = _fixture("firmware-dscp-pfc3-ets.txt").replace("prio:7 dscp:63,", "prio:7 dscp:64,")
    with pytest.raises(ParseError, match="DSCP values 0-63"):
        parse_mlnx_qos(text)


def test_not_text_is_refused():
    with pytest.raises(ParseError, match="expected text"):
        parse_mlnx_qos(None)
