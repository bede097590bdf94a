#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: frr_config
short_description: Install an FRRouting configuration, validated by FRR and applied without restarting daemons
version_added: "0.1.0"
description:
  - Writes O(content) to a temporary file beside O(path) and has FRR check it (C(vtysh --dryrun -f FILE)); a file
    FRR refuses changes nothing and fails with FRR's own message.
  - Compares it with the running configuration (C(frr-reload.py --test)). C(changed) is true when the running
    configuration differs or the file on disk does, so a change made by hand with vtysh is seen and undone.
  - Applies it with C(frr-reload.py --reload), which sends only the lines that differ; BGP sessions whose
    configuration did not change are not reset, and a changed BFD interval is applied to live sessions.
  - After applying, runs C(frr-reload.py --test) again (and a second reload pass if needed, since frr-reload.py
    does not always converge in one) and fails if FRR did not take every line.
author:
  - gpufabric.core contributors (@gpufabric)
options:
  content:
    description: The whole integrated configuration (C(frr.conf)).
    type: str
    required: true
  path:
    description: Where the integrated configuration lives; FRR reads it when it starts.
    type: path
    default: /etc/frr/frr.conf
  reload_command:
    description: FRR's reload script.
    type: path
    default: /usr/lib/frr/frr-reload.py
  vtysh:
    description: The vtysh binary.
    type: path
    default: /usr/bin/vtysh
  daemons:
    description:
      - FRR daemons that must be running (C(vtysh -c 'show daemons')) before the configuration is compared and
        applied; waited for up to O(daemons_timeout) seconds, since watchfrr starts them one by one.
    type: list
    elements: str
    default: []
  daemons_timeout:
    description: Seconds to wait for O(daemons).
    type: int
    default: 60
attributes:
  check_mode:
    support: full
    description: Validates the file and reports what would change (and the lines, in diff mode); touches nothing.
  diff_mode:
    support: full
    description: The file's before and after, and the running-configuration lines frr-reload.py would delete and add.
notes:
  - The daemons named in the configuration must be enabled in C(/etc/frr/daemons) and running; the
    C(gpufabric.core.routing) role does that first.
"""

EXAMPLES = r"""
- name: Install and apply the FRR configuration
  gpufabric.core.frr_config:
    content: "{{ lookup('ansible.builtin.template', 'frr.conf.j2') }}"
"""

RETURN = r"""
lines_deleted:
  description: Running-configuration lines frr-reload.py removed (or would remove), under their context lines.
  returned: always
  type: list
  elements: str
  sample: ["bfd", " profile gpufabric", "  no transmit-interval 150"]
lines_added:
  description: Lines frr-reload.py added (or would add), under their context lines.
  returned: always
  type: list
  elements: str
  sample: ["bfd", " profile gpufabric", "  transmit-interval 100"]
file_changed:
  description: Whether the file at O(path) changed (or would change).
  returned: always
  type: bool
topology_changed:
  description:
    - Whether FRR's running configuration changed (never in check mode), which changes what topology discovery sees
      of the host's routed uplinks (BGP sessions) and of the interfaces FRR configures (loopback addresses, router
      advertisements).
    - When true, C(ansible_facts.gpufabric_topology_stale) is set too, so that the roles after this one run
      M(gpufabric.core.topology_facts) again.
  returned: always
  type: bool
  sample: true
"""

import os
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils.frr_reload import (
    FrrReloadError,
    changes_pending,
    diff_text,
    parse_reload_test,
)


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _pending(module, reload_command, path):
    rc, out, err = module.run_command([reload_command, "--test", path])
    if rc != 0:
        module.fail_json(msg="frr-reload.py --test %s failed (rc %d): %s" % (path, rc, (err or out).strip()[-2000:]))
    try:
        return parse_reload_test(out)
    except FrrReloadError as exc:
        module.fail_json(msg=str(exc))


def _wait_for_daemons(module, vtysh, wanted, timeout):
    deadline = time.monotonic() + timeout
    while True:
        rc, out, err = module.run_command([vtysh, "-c", "show daemons"])
        missing = [name for name in wanted if name not in out.split()] if rc == 0 else list(wanted)
        if not missing:
            return
        if time.monotonic() >= deadline:
            module.fail_json(msg="FRR daemons not running after %d s: %s (running: %s). See journalctl -u frr; in a "
                             "container zebra needs CAP_NET_ADMIN, CAP_NET_RAW and CAP_SYS_ADMIN." % (
                                 timeout, ", ".join(missing), (out or err).strip() or "none"))
        time.sleep(2)


def main():
    module = AnsibleModule(
        argument_spec={
            "content": {"type": "str", "required": True},
            "path": {"type": "path", "default": "/etc/frr/frr.conf"},
            "reload_command": {"type": "path", "default": "/usr/lib/frr/frr-reload.py"},
            "vtysh": {"type": "path", "default": "/usr/bin/vtysh"},
            "daemons": {"type": "list", "elements": "str", "default": []},
            "daemons_timeout": {"type": "int", "default": 60},
        },
        supports_check_mode=True,
    )
    params = module.params
    if params["daemons"]:
        _wait_for_daemons(module, params["vtysh"], params["daemons"], params["daemons_timeout"])
    path, content = params["path"], params["content"]
    if not content.endswith("\n"):
        content += "\n"
    current = _read(path)
    directory = os.path.dirname(path) or "."
    fd, temp = tempfile.mkstemp(prefix=".gpufabric-frr-", suffix=".conf", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        rc, out, err = module.run_command([params["vtysh"], "--dryrun", "-f", temp])
        if rc != 0:
            module.fail_json(msg="FRR refuses the configuration (vtysh --dryrun, rc %d), nothing changed: %s" % (
                rc, (out + err).strip()[-3000:]))
        pending = _pending(module, params["reload_command"], temp)
        file_changed = current != content
        result = {
            "changed": file_changed or changes_pending(pending),
            "file_changed": file_changed,
            "lines_deleted": pending["delete"],
            "lines_added": pending["add"],
            "topology_changed": False,
        }
        if module._diff:
            before, after = diff_text(pending)
            result["diff"] = [
                {"before_header": path, "after_header": path, "before": current or "", "after": content},
                {"before_header": "running configuration (lines removed)", "after_header": "running configuration "
                 "(lines added)", "before": before, "after": after},
            ]
        if module.check_mode or not result["changed"]:
            module.exit_json(**result)
        if file_changed:
            # FRR runs as frr: its daemons and vtysh read the integrated file as that user.
            if current is not None:
                stat = os.stat(path)
                os.chown(temp, stat.st_uid, stat.st_gid)
                os.chmod(temp, stat.st_mode & 0o7777)
            else:
                os.chmod(temp, 0o640)
            module.atomic_move(temp, path)
        if changes_pending(pending):
            rc, out, err = module.run_command([params["reload_command"], "--reload", path])
            if rc != 0:
                module.fail_json(msg="frr-reload.py --reload %s failed (rc %d): %s" % (
                    path, rc, (err or out).strip()[-3000:]), **result)
            left = _pending(module, params["reload_command"], path)
            if changes_pending(left):
                # frr-reload.py does not always converge in one pass (FRR 8.4 keeps `neighbor X bfd` when it
                # removes `neighbor X bfd profile P` and the bfd block in the same pass): a second pass does.
                rc, out, err = module.run_command([params["reload_command"], "--reload", path])
                left = _pending(module, params["reload_command"], path) if rc == 0 else left
            result["topology_changed"] = True
            result["ansible_facts"] = {"gpufabric_topology_stale": True}
            if changes_pending(left):
                module.fail_json(msg="FRR did not take every line of %s; still different: %s" % (
                    path, "; ".join(left["delete"] + left["add"])), **result)
        module.exit_json(**result)
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


if __name__ == "__main__":
    main()
