#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: reboot_marker
short_description: Record why a host needs a reboot, in the one marker file every gpufabric.core role uses
version_added: "0.1.0"
description:
  - Adds reasons to C(/run/gpufabric/ROLE-reboot-required) (one per line) and returns every reason recorded since
    the last boot. C(/run) is cleared at boot, so the marker clears itself when the host reboots.
  - With O(state=absent) removes the marker (after the role rebooted the host itself).
  - Used by the internal role C(gpufabric.core.common) (C(tasks_from=reboot)). Supports check mode and diff.
author:
  - gpufabric.core contributors (@gpufabric)
options:
  role:
    description: Role whose marker this is (lower case, digits, underscores).
    type: str
    required: true
  reasons:
    description: Reasons found by this run.
    type: list
    elements: str
    default: []
  state:
    description: V(present) records the reasons, V(absent) removes the marker.
    type: str
    choices: [present, absent]
    default: present
  reboot_ok:
    description: Whether the role may reboot the host (its C(ROLE_reboot_ok)); with reasons pending and no reboot
      allowed, the module says why in a warning.
    type: bool
    default: false
  reboot_possible:
    description: Whether the host can be rebooted at all (false in a container, whose host must reboot instead).
    type: bool
    default: true
  host:
    description: The host's name in that warning (warnings do not name the host they come from).
    type: str
    default: ""
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports whether the marker would change and which reasons it would hold; writes nothing.
  diff_mode:
    support: full
    details: Returns the marker file's before and after text.
notes:
  - Sets the facts C(ROLE_reboot_reasons) and C(ROLE_reboot_required) (after the change; in check mode, what the
    run would leave), so that the reboot policy needs no task of its own to export them.
"""

EXAMPLES = r"""
- name: Record and read the reboot reasons of the rdma role
  gpufabric.core.reboot_marker:
    role: rdma
    reasons: ["kernel module options changed in /etc/modprobe.d/gpufabric-rdma.conf"]
  register: marker
"""

RETURN = r"""
reasons:
  description: Every reason recorded since the host last booted, this run's included.
  returned: always
  type: list
  elements: str
path:
  description: The marker file.
  returned: always
  type: str
ansible_facts:
  description: C(ROLE_reboot_reasons) (the reasons) and C(ROLE_reboot_required) (whether there is any).
  returned: always
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import reboot_marker as rm


def main():
    module = AnsibleModule(
        argument_spec=dict(
            role=dict(type="str", required=True),
            reasons=dict(type="list", elements="str", default=[]),
            state=dict(type="str", choices=["present", "absent"], default="present"),
            reboot_ok=dict(type="bool", default=False),
            reboot_possible=dict(type="bool", default=True),
            host=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    try:
        path = rm.marker_path(module.params["role"])
    except ValueError as error:
        module.fail_json(msg="role: %s" % error)
    role = module.params["role"]
    absent = module.params["state"] == "absent"
    before = rm.read_marker(role)
    reasons = [] if absent else rm.merge_reasons(before, module.params["reasons"])
    # Present without any reason: nothing to record (an empty marker is never written).
    desired = [{"path": path, "content": None if absent else rm.marker_text(reasons), "mode": 0o644}] \
        if absent or reasons else []
    changes = ft.plan(desired, ft.read_all(desired))
    if changes and not module.check_mode:
        try:
            ft.apply(changes, make_directories=[(os.path.dirname(path), 0o755)])
        except OSError as error:
            module.fail_json(msg="Could not write %s: %s" % (path, error))
    after = desired[0]["content"] if desired else before
    diff = {"before": before or "", "after": after or "", "before_header": path, "after_header": path}
    if absent:
        left = rm.merge_reasons(before, []) if module.check_mode else []
        module.exit_json(changed=bool(changes), reasons=[], path=path, ansible_facts=rm.exported_facts(role, left),
                         diff=diff)
    why_not = rm.why_no_reboot(reasons, role, module.params["reboot_ok"], module.params["reboot_possible"])
    if why_not:
        module.warn("%s%s" % (module.params["host"] + ": " if module.params["host"] else "", why_not))
    module.exit_json(changed=bool(changes), reasons=reasons, path=path, ansible_facts=rm.exported_facts(role, reasons),
                     diff=diff)


if __name__ == "__main__":
    main()
