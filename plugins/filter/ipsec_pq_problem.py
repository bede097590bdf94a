# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import pq_kex_problem

DOCUMENTATION = r"""
name: ipsec_pq_problem
short_description: Say why a host's strongSwan cannot do the ML-KEM that ipsec_pq_kex requires
version_added: "0.1.0"
description:
  - "Returns one sentence naming C(ipsec_pq_kex), the host and its strongSwan when the value requires an ML-KEM
    (C(mlkem512), C(mlkem768), C(mlkem1024)) that the host cannot do, and an empty string otherwise (also for
    C(auto) and C(none), which require nothing)."
  - "A running charon is judged by the ML-KEM key exchanges its own C(swanctl --list-algs) lists, whatever its
    version: Debian 13's 6.0.1 parses C(ke1_mlkem768) but lists no ML-KEM. Where charon cannot be asked yet (not
    installed), the version the host has or apt would install must be 6.1 or later, the first whose Debian
    packages offer ML-KEM."
  - The ipsec role's preflight runs it on each host's read of its strongSwan, before anything changes.
options:
  _input:
    description: The value of C(ipsec_pq_kex).
    type: str
    required: true
  host:
    description: The inventory name, for the message.
    type: str
    required: true
  version:
    description: The strongSwan version installed, else the one apt would install; empty when neither is known
      (nothing is refused then).
    type: str
    required: true
  listed_kems:
    description: The C(ML_KEM_*) names that the running charon lists in C(swanctl --list-algs); C(none) when charon
      could not be asked (not installed or not running).
    type: list
    elements: str
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse a required ML-KEM on a host whose strongSwan lists none
  ansible.builtin.assert:
    that: __problem | length == 0
    fail_msg: "{{ __problem }}"
    quiet: true
  vars:
    __problem: >-
      {{ ipsec_pq_kex | gpufabric.core.ipsec_pq_problem(host=inventory_hostname, version='6.0.1', listed_kems=[]) }}
"""

RETURN = r"""
_value:
  description: The reason, naming the variable; empty when the host can do what is required.
  type: str
  sample: "ipsec_pq_kex is mlkem768 (ML-KEM post-quantum key exchange, required) but the strongSwan 6.0.1 running on
    node2 lists no ML_KEM_768 in swanctl --list-algs (it lists no ML-KEM; ...)"
"""


def ipsec_pq_problem(pq_kex, host, version, listed_kems=None):
    return pq_kex_problem(pq_kex, str(host), str(version or ""),
                          listed_kems=None if listed_kems is None else [str(kem) for kem in listed_kems])


class FilterModule:
    """The ipsec_pq_problem filter."""

    def filters(self):
        return {"ipsec_pq_problem": ipsec_pq_problem}
