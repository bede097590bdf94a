# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.utils.display import Display

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import verify_mode
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: verify_mode
short_description: When a role's verification runs, from its <role>_verify variable
version_added: "0.1.0"
description:
  - "Every role's C(<role>_verify) takes one of C(after_change) (verify after this run changed what the role
    manages, or when only the role's verify phase is selected by tags), C(always) (every run: a scheduled audit) and
    C(never). This filter returns that mode."
  - "The booleans some roles took before 0.1.0 are deprecated and accepted until 0.2.0, with the meaning they had:
    C(false) is C(never), C(true) is O(true_means). The filter issues a deprecation warning naming the variable and
    the value to use instead."
  - Any other value is an error naming the variable (the roles' argument specs refuse it first).
options:
  _input:
    description: The value of C(<role>_verify).
    type: raw
    required: true
  name:
    description: The variable's name, for the messages.
    type: str
    required: true
  true_means:
    description: What the deprecated C(true) meant in this role before 0.1.0.
    type: str
    choices: [after_change, always]
    default: after_change
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Verify after a change, or always when asked
  ansible.builtin.include_tasks: verify.yml
  when: >-
    (rdma_verify | gpufabric.core.verify_mode('rdma_verify')) == 'always'
    or ((rdma_verify | gpufabric.core.verify_mode('rdma_verify')) == 'after_change' and __rdma_config is changed)
"""

RETURN = r"""
_value:
  description: C(after_change), C(always) or C(never).
  type: str
  sample: after_change
"""


def verify_mode_filter(value, name, true_means="after_change"):
    mode = verify_mode(value, name, true_means=true_means)
    if isinstance(value, bool):
        Display().deprecated(
            "%s: %s is deprecated, use %s" % (name, str(value).lower(), mode),
            version="0.2.0", collection_name="gpufabric.core")
    return mode


class FilterModule:
    """The verify_mode filter."""

    def filters(self):
        return {"verify_mode": raising_filter_error("verify_mode", verify_mode_filter, (ValueError,))}
