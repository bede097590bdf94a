# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: bond_verify
short_description: Say what is wrong with a running bond compared with its definition
version_added: "0.1.0"
description:
  - Parses the text of C(/proc/net/bonding/<bond>) with the same code as P(gpufabric.core.parse_bonding#filter)
    and returns the problems it finds (members down, members in different aggregators, no LACP partner, churn,
    ports not collecting/distributing) plus every configured setting the kernel does not show (mode, members,
    LACP rate, transmit hash policy, MII interval, min links).
  - An empty input (the file does not exist) is reported as a bond the kernel did not create.
positional: _input
options:
  _input:
    description: Text of C(/proc/net/bonding/<bond>); empty when the file does not exist.
    type: str
    required: true
  expected:
    description: The bond as normalised by P(gpufabric.core.bond_validate#filter) (one item of its C(bonds)).
    type: dict
    required: true
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Fail when bond0 is not what was configured
  ansible.builtin.assert:
    that: bond_problems | length == 0
    fail_msg: "{{ bond_problems }}"
  vars:
    bond_problems: "{{ lookup('ansible.builtin.file', '/proc/net/bonding/bond0') | gpufabric.core.bond_verify(normalised.bonds[0]) }}"
"""

RETURN = r"""
_value:
  description: Sentences, each starting with the bond's name; empty when the bond is healthy and as configured.
  type: list
  elements: str
  sample: ["bond0: slaves are in different aggregators (enp197s0f2 in aggregator 1; enp197s0f0 in aggregator 2) ..."]
"""

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.proc_bonding import parse_bonding
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.runtime import runtime_problems
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error


def bond_verify(text, expected):
    if not isinstance(expected, dict) or "name" not in expected or "members" not in expected:
        raise TypeError("'expected' must be one normalised bond from bond_validate")
    if text is None or not str(text).strip():
        return ["%s: /proc/net/bonding/%s does not exist: the kernel did not create the bond (is the bonding "
                "driver available?)" % (expected["name"], expected["name"])]
    return runtime_problems(parse_bonding(str(text)), expected)


class FilterModule:
    def filters(self):
        return {"bond_verify": raising_filter_error("bond_verify", bond_verify, (ParseError, TypeError))}
