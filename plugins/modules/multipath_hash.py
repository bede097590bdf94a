#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: multipath_hash
short_description: Set how the kernel hashes flows onto ECMP routes, persisted in sysctl.d and read back
version_added: "0.1.0"
description:
  - Sets C(net.ipv4.fib_multipath_hash_policy) and C(net.ipv6.fib_multipath_hash_policy) (and, with
    O(policy=custom), C(fib_multipath_hash_fields) of both families) in the running kernel and in a sysctl.d file
    that sets them again at boot, then reads the running values back.
  - The file is written through the collection's file transaction; when the running kernel refuses a value or reads
    back another, the values this run wrote are put back and the file is restored.
  - A kernel without a key the policy needs (C(fib_multipath_hash_fields) before Linux 5.12) fails the task before
    anything changes.
  - The values are per network namespace; the module sets those of the namespace it runs in.
options:
  policy:
    description:
      - V(l3) (0, the kernel's default) hashes on addresses only, V(l4) (1) on addresses, protocol and ports,
        V(l3_inner) (2) on the inner addresses of encapsulated packets, V(custom) (3) on O(fields).
    type: str
    choices: [l3, l4, l3_inner, custom]
    required: true
  fields:
    description:
      - The fields hashed with O(policy=custom) (C(src_ip), C(dst_ip), C(ip_proto), C(flow_label), C(src_port),
        C(dst_port) and their C(inner_) forms). Ignored with other policies.
    type: list
    elements: str
    default: []
  sysctl_file:
    description: The sysctl.d file that holds the values.
    type: path
    default: /etc/sysctl.d/90-gpufabric-multipath-hash.conf
  runtime:
    description: Also set the running kernel's values (V(false) writes only the file).
    type: bool
    default: true
  proc_root:
    description: Where the running kernel's sysctl tree is (tests point it at a copy).
    type: path
    default: /proc/sys
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports the file and running values it would change without changing them.
  diff_mode:
    support: full
    details: Shows the file's change and the running values before and after.
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Hash ECMP flows on L4 ports, IPv4 and IPv6
  gpufabric.core.multipath_hash:
    policy: l4

- name: Hash on the 5-tuple fields named
  gpufabric.core.multipath_hash:
    policy: custom
    fields: [src_ip, dst_ip, ip_proto, src_port, dst_port]
"""

RETURN = r"""
running:
  description: The running values after the run (in check mode, as they are).
  type: dict
  returned: always
  sample: {net.ipv4.fib_multipath_hash_policy: 1, net.ipv6.fib_multipath_hash_policy: 1}
runtime_changes:
  description: The running values changed (in check mode, to change).
  type: list
  elements: dict
  returned: always
  sample: [{key: net.ipv4.fib_multipath_hash_policy, before: 0, after: 1}]
file_changed:
  description: Whether the sysctl.d file was (or would be) written.
  type: bool
  returned: always
  sample: true
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction
from ansible_collections.gpufabric.core.plugins.module_utils.routing.multipath_hash import (
    desired_values,
    hash_settings_problems,
    kernel_problems,
    read_runtime,
    render_sysctl_file,
    runtime_changes,
    write_runtime,
)


class ReadBackError(Exception):
    pass


def set_running(desired, changes, proc_root):
    """Write the changed keys and read them back; on any failure put the earlier values back and raise."""
    wanted = {change["key"]: change["after"] for change in changes}
    previous = {change["key"]: change["before"] for change in changes}
    try:
        write_runtime(wanted, proc_root)
        found = read_runtime(list(desired), proc_root)
        wrong = ["%s is %s, not %s" % (key, found[key], value) for key, value in desired.items() if found[key] != value]
        if wrong:
            raise ReadBackError("; ".join(wrong))
    except (OSError, ReadBackError):
        write_runtime({key: value for key, value in previous.items() if value is not None}, proc_root)
        raise


def main():
    module = AnsibleModule(
        argument_spec={
            "policy": {"type": "str", "required": True, "choices": ["l3", "l4", "l3_inner", "custom"]},
            "fields": {"type": "list", "elements": "str", "default": []},
            "sysctl_file": {"type": "path", "default": "/etc/sysctl.d/90-gpufabric-multipath-hash.conf"},
            "runtime": {"type": "bool", "default": True},
            "proc_root": {"type": "path", "default": "/proc/sys"},
        },
        supports_check_mode=True,
    )
    policy, fields, proc_root = module.params["policy"], module.params["fields"], module.params["proc_root"]
    problems = hash_settings_problems({"multipath_hash_policy": policy, "multipath_hash_fields": fields}, prefix="")
    if problems:
        module.fail_json(msg="The multipath hash settings are not usable: " + "; ".join(problems))
    desired = desired_values(policy, fields)
    current = read_runtime(list(desired), proc_root)
    lacking = kernel_problems(policy, {key for key, value in current.items() if value is not None},
                              kernel=os.uname().release, prefix="")
    if lacking:
        module.fail_json(msg="Nothing changed: " + "; ".join(lacking), running=current)
    entry = {"path": module.params["sysctl_file"], "content": render_sysctl_file(policy, desired), "mode": 0o644}
    try:
        file_changes = file_transaction.plan([entry], file_transaction.read_all([entry]))
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Cannot read %s: %s" % (entry["path"], exc))
    running = runtime_changes(current, desired) if module.params["runtime"] else []
    result = {"changed": bool(file_changes or running), "running": current, "runtime_changes": running,
              "file_changed": bool(file_changes)}
    if module._diff:
        result["diff"] = file_transaction.diff_entries(file_changes) + ([{
            "before_header": "running kernel (%s)" % proc_root, "after_header": "running kernel (%s)" % proc_root,
            "before": "".join("%s = %s\n" % (c["key"], c["before"]) for c in running),
            "after": "".join("%s = %s\n" % (c["key"], c["after"]) for c in running),
        }] if running else [])
    if module.check_mode or not result["changed"]:
        module.exit_json(**result)
    try:
        if file_changes:
            file_transaction.apply(file_changes, make_directories=[(os.path.dirname(entry["path"]), 0o755)],
                                   after=(lambda: set_running(desired, running, proc_root)) if running else None)
        else:
            set_running(desired, running, proc_root)
    except ReadBackError as exc:
        module.fail_json(msg="The running kernel reads back other values than were written, so nothing was kept "
                             "(%s)" % exc, **result)
    except OSError as exc:
        module.fail_json(msg="Setting policy %s failed, nothing kept (the running kernel refuses it or %s is not "
                             "writable): %s" % (policy, proc_root, exc), **result)
    result["running"] = read_runtime(list(desired), proc_root)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
