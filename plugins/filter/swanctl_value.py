# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import InputError, quote_value
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error

DOCUMENTATION = r"""
name: swanctl_value
short_description: Write a value into swanctl.conf as a quoted string, refusing what cannot be written safely
version_added: 0.1.0
description:
  - Returns the value in double quotes (whole numbers as they are), as swanctl.conf reads any setting.
  - Fails on a value holding a newline, carriage return or other control character, a double quote or a
    backslash, so that no value can end its line and add settings (such as C(mode = pass)) to a connection.
  - The last line of defence of the C(gpufabric.core.ipsec) templates; the C(gpufabric.core.ipsec_problems)
    filter refuses such values earlier, naming the variable.
options:
  _input:
    description: The value (a string, or a list whose items are joined with commas, or a whole number).
    type: raw
    required: true
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Write a setting
  ansible.builtin.debug:
    msg: "rekey_time = {{ '1h' | gpufabric.core.swanctl_value }}"
"""

RETURN = r"""
_value:
  description: The quoted value.
  type: str
  sample: '"1h"'
"""


def swanctl_value(value):
    if isinstance(value, (list, tuple)):
        for item in value:
            quote_value(item)
        return quote_value(",".join(str(item) for item in value))
    return quote_value(value)


class FilterModule:
    """The swanctl_value filter."""

    def filters(self):
        return {"swanctl_value": raising_filter_error("swanctl_value", swanctl_value, (InputError,))}
