# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: multipath_hash_kernel_problems
short_description: Say what a host's kernel lacks for the ECMP multipath hash policy asked for
version_added: "0.1.0"
description:
  - Takes the keys C(sysctl -a -N -r '^net\.ipv[46]\.fib_multipath_hash') printed on the host and returns one
    sentence per problem, naming the variable; empty when the kernel has every key the policy needs (both
    families' C(fib_multipath_hash_policy), and with V(custom) both C(fib_multipath_hash_fields), Linux 5.12).
options:
  _input:
    description: The output of the sysctl command, one key per line.
    type: str
    required: true
  policy:
    description: The policy asked for (l3, l4, l3_inner, custom).
    type: str
    required: true
  kernel:
    description: The kernel release, for the message.
    type: str
    default: ""
  prefix:
    description: Prepended to the variable's name in messages.
    type: str
    default: routing_
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Check that the kernel has the policy
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
  vars:
    problems: "{{ keys.stdout | gpufabric.core.multipath_hash_kernel_problems('custom', ansible_facts.kernel) }}"
"""

RETURN = r"""
_value:
  description: One sentence per problem; empty when the kernel has what the policy needs.
  type: list
  elements: str
  sample:
    - "routing_multipath_hash_policy: custom needs net.ipv4.fib_multipath_hash_fields, which this kernel (5.10.0)
       does not have (Linux 5.12 or later (fib_multipath_hash_fields)); choose a policy it has, such as l4"
"""

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.module_utils.routing.multipath_hash import kernel_problems, parse_sysctl_names


def multipath_hash_kernel_problems(text, policy, kernel="", prefix="routing_"):
    if not isinstance(text, str):
        raise AnsibleFilterError("gpufabric.core.multipath_hash_kernel_problems: input must be the sysctl output, "
                                 "got %r" % (text,))
    return kernel_problems(policy, parse_sysctl_names(text), kernel=kernel, prefix=prefix)


class FilterModule:
    """The multipath_hash_kernel_problems filter."""

    def filters(self):
        return {"multipath_hash_kernel_problems": multipath_hash_kernel_problems}
