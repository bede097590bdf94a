# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parse_* topology filters: same data as module_utils, AnsibleFilterError on garbage, loadable by Ansible."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError
from fixture_data import FIXTURES, read_fixture

from ansible_collections.gpufabric.core.plugins.filter import (
    parse_bonding,
    parse_ibstat,
    parse_ibv_devinfo,
    parse_lldp,
    parse_nvidia_smi_topo,
)

ROOT = Path(__file__).resolve().parents[4]
ANSIBLE = Path(sys.executable).parent / "ansible"

# filter name -> (plugin module, a real capture)
FILTERS = {
    "parse_bonding": (parse_bonding, "bonding/magpie-802.3ad-churned-mixed-speed-misconfig.txt"),
    "parse_ibstat": (parse_ibstat, "ibstat_ibv_devinfo/mooncake-2039-ibstat-8x-cx7-ib400-4x-cx6dx-eth.txt"),
    "parse_ibv_devinfo": (parse_ibv_devinfo, "ibstat_ibv_devinfo/heioy-ibv_devinfo-2x-cx3-ib-old-tab-format.txt"),
    "parse_lldp": (parse_lldp, "lldp/unifabric-json0-gpu-rails-sonic-leaves.txt"),
    "parse_nvidia_smi_topo": (parse_nvidia_smi_topo, "nvidia_smi_topo/sglang-28424-h800-nv8-9nic-bond.txt"),
}


def _filter(name):
    return FILTERS[name][0].FilterModule().filters()[name]


def test_each_plugin_file_exposes_exactly_its_filter():
    for name, (plugin, unused_capture) in FILTERS.items():
        assert list(plugin.FilterModule().filters()) == [name]


def test_filters_return_what_the_parsers_read():
    bond = _filter("parse_bonding")(read_fixture(FILTERS["parse_bonding"][1]))
    assert (bond["healthy"], [s["aggregator_id"] for s in bond["slaves"]]) == (False, [1, 2])
    ibstat = _filter("parse_ibstat")(read_fixture(FILTERS["parse_ibstat"][1]))
    assert [ca["ports"][0]["rate_gbps"] for ca in ibstat["cas"][:3]] == [400.0, 40.0, 400.0]
    devinfo = _filter("parse_ibv_devinfo")(read_fixture(FILTERS["parse_ibv_devinfo"][1]))
    assert [p["state"] for p in devinfo["devices"][1]["ports"]] == ["ACTIVE", "DOWN"]
    lldp = _filter("parse_lldp")(read_fixture(FILTERS["parse_lldp"][1]))
    assert [n["chassis_name"] for n in lldp] == ["StorageSW", "LEAF03", "LEAF04", "LEAF02", "LEAF01"]
    topo = _filter("parse_nvidia_smi_topo")(read_fixture(FILTERS["parse_nvidia_smi_topo"][1]))
    assert topo["nearest_nics"]["GPU1"] == ["mlx5_3"]
    assert topo["nics"][-1] == {"name": "NIC8", "device": "mlx5_bond_0"}


@pytest.mark.parametrize("name, command", [
    ("parse_bonding", "/proc/net/bonding/<bond>"),
    ("parse_ibstat", "ibstat"),
    ("parse_ibv_devinfo", "ibv_devinfo"),
    ("parse_lldp", "lldpctl -f json"),
    ("parse_nvidia_smi_topo", "nvidia-smi topo -m"),
])
@pytest.mark.parametrize("garbage", ["<html>502 Bad Gateway</html>", "", None])
def test_garbage_raises_ansible_filter_error_naming_filter_and_command(name, command, garbage):
    with pytest.raises(AnsibleFilterError) as error:
        _filter(name)(garbage)
    message = str(error.value)
    assert message.startswith("gpufabric.core.%s: cannot parse `%s` output: " % (name, command))
    # The ParseError is not chained: Ansible shows one clear sentence, not a Python traceback.
    assert error.value.__cause__ is None


# A neutral configuration (the repository's ansible.cfg names the lab inventory and fleet callbacks) that runs
# modules with this test's Python rather than whatever interpreter discovery finds first.
_CONFIG = Path(tempfile.gettempdir()) / ("gpufabric-unit-ansible-%d.cfg" % os.getuid())


def _env():
    _CONFIG.write_text("[defaults]\ninterpreter_python = %s\n" % sys.executable)
    return dict(os.environ, ANSIBLE_CONFIG=str(_CONFIG), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
                ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0")


def _ansible(*args):
    return subprocess.run([str(ANSIBLE), "localhost", "-i", "localhost,", "-c", "local", *args], env=_env(),
                          cwd=str(ROOT), capture_output=True, text=True, timeout=120, check=False)


def test_filters_load_in_ansible_and_parse_a_fixture_file():
    path = FIXTURES / "ibstat_ibv_devinfo" / "l2fwd-nv-6-ibstat-cx6dx-2port-roce-100g.txt"
    expression = ("{{ (lookup('ansible.builtin.file', '%s').split('\\n', 1)[1] | gpufabric.core.parse_ibstat).cas"
                  " | map(attribute='name') | list }}" % path)
    result = _ansible("-m", "ansible.builtin.debug", "-a", "msg=\"%s\"" % expression)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "\"mlx5_0\"" in result.stdout and "\"mlx5_1\"" in result.stdout


def test_garbage_in_a_playbook_fails_with_a_sentence_not_a_traceback():
    result = _ansible("-m", "ansible.builtin.debug", "-a", "msg=\"{{ 'not ibstat at all' | gpufabric.core.parse_ibstat }}\"")
    # ansible-core 2.16 to 2.18 print the message inside a JSON string, its quotes escaped.
    output = (result.stdout + result.stderr).replace('\\"', '"')
    assert result.returncode != 0
    assert "gpufabric.core.parse_ibstat: cannot parse `ibstat` output: no \"CA '<name>'\" block found" in output
    assert "Traceback" not in output


def test_filter_docs_render_with_ansible_doc():
    result = subprocess.run([str(Path(sys.executable).parent / "ansible-doc"), "-t", "filter", "--json",
                             *("gpufabric.core.%s" % name for name in sorted(FILTERS))],
                            env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    docs = json.loads(result.stdout)
    assert sorted(docs) == ["gpufabric.core.%s" % name for name in sorted(FILTERS)]
    for doc in docs.values():
        assert doc["doc"]["short_description"] and doc["examples"] and doc["return"]["_value"]["description"]
