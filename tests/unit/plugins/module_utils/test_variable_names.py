# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Misspelt variables that Ansible would ignore without a word, on the roles' real argument specs; the example
inventory and every Molecule scenario's variables raise nothing. check_inventory.yml runs it on each host
(tests/integration/test_example_inventory.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.variable_names import misspelt_variable_problems

ROOT = Path(__file__).resolve().parents[4]
SPECS = {path.parents[1].name: yaml.safe_load(path.read_text()) for path in ROOT.glob("roles/*/meta/argument_specs.yml")}


def keys_of(data):
    """Every mapping key of a YAML document, however deep: a variable's name wherever a file can set one."""
    if isinstance(data, dict):
        return {key for key in data if isinstance(key, str)} | {k for value in data.values() for k in keys_of(value)}
    if isinstance(data, list):
        return {k for value in data for k in keys_of(value)}
    return set()


@pytest.mark.parametrize("name, meant", [
    ("rmda_expected_rate_gbps", "rdma_expected_rate_gbps"),
    ("gpufabric_rail_interface", "gpufabric_rail_interfaces"),
    ("gpufabirc_peer_group", "gpufabric_peer_group"),
    ("ncl_ib_hca_prefix", None),
])
def test_a_misspelling_names_what_it_was_meant_to_be(name, meant):
    problems = misspelt_variable_problems([name, "rdma_driver_source"], SPECS)
    if meant is None:
        assert problems == []
    else:
        assert problems == ["%s: no role or playbook of gpufabric.core reads this variable; did you mean %s? (a "
                            "misspelt variable is ignored, and %s keeps its default)" % (name, meant, meant)]


def test_a_roles_own_prefix_is_left_to_its_argument_spec():
    assert misspelt_variable_problems(["rdma_driver_sourc", "ansible_hostt", "__rdma_x"], SPECS) == []


def test_the_example_inventory_and_the_scenarios_raise_nothing():
    files = list(ROOT.glob("inventories/example/**/*.yml")) + list(ROOT.glob("molecule/*/*.yml"))
    names = {name for path in files for name in keys_of(yaml.safe_load(path.read_text()))}
    assert len(names) > 200
    assert misspelt_variable_problems(names, SPECS) == []
