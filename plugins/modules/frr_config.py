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
  - Given O(enable_daemons), first turns them on in O(daemons_file) (C(NAME=yes)); given O(service), makes sure FRR
    is enabled and running, restarted when the daemons file changed (the only restart, before any session exists).
  - Has FRR check O(content) (C(vtysh --dryrun -f FILE) on a staged copy); a file FRR refuses changes nothing and
    fails with FRR's own message.
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
  enable_daemons:
    description:
      - FRR daemons to turn on in O(daemons_file) (C(bgpd), C(bfdd)); zebra always runs. The file keeps its owner
        and mode; a change restarts O(service).
    type: list
    elements: str
    default: []
  daemons_file:
    description: FRR's daemons file.
    type: path
    default: /etc/frr/daemons
  service:
    description:
      - FRR's systemd unit (C(frr.service)), enabled and started when it is not, and restarted when O(daemons_file)
        changed; empty leaves the service alone.
    type: str
    default: ""
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Validates the file and reports what would change (and the lines, in diff mode); touches nothing.
  diff_mode:
    support: full
    details: The file's before and after, and the running-configuration lines frr-reload.py would delete and add.
notes:
  - The daemons named in the configuration must be enabled in C(/etc/frr/daemons) and running (O(enable_daemons)
    and O(service) do that).
  - Files are written through the collection's file_transaction (temporary file, fsync, rename), systemd is asked
    through its systemd_units.
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
daemons_changed:
  description: Whether O(daemons_file) changed (or would change).
  returned: always
  type: bool
service_actions:
  description: What was done to O(service) (or would be, in check mode).
  returned: always
  type: list
  elements: str
  sample: [restarted frr.service]
topology_changed:
  description:
    - Whether FRR was (re)started or its running configuration changed (never in check mode), which changes what
      topology discovery sees of the host's routed uplinks (BGP sessions) and of the interfaces FRR configures
      (loopback addresses, router advertisements).
    - When true, C(ansible_facts.gpufabric_topology_stale) is set too, so that the roles after this one run
      M(gpufabric.core.topology_facts) again.
  returned: always
  type: bool
  sample: true
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su
from ansible_collections.gpufabric.core.plugins.module_utils.routing.frr_reload import (
    FrrReloadError,
    changes_pending,
    diff_text,
    enable_daemons,
    parse_reload_test,
)

# A new frr.conf: readable by the frr group (its daemons and vtysh read it as frr); an existing one keeps its owner
# and mode.
NEW_FILE_MODE = 0o640


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


def _keeping_owner(path, content, new_mode):
    """file_transaction changes that give path content, with the owner and mode it has (new_mode when new)."""
    before, mode, owner = ft.read_current(path, with_owner=True)
    entry = {"path": path, "content": content, "mode": mode if before is not None else new_mode, "owner": owner}
    return ft.plan([entry], {path: (before, mode, owner)})


def _daemons_and_service(module):
    """Turn on enable_daemons in the daemons file and run FRR (restarted after a change). Returns (daemons changes,
    service actions); in check mode only says what it would do."""
    params = module.params
    changes = []
    if params["enable_daemons"]:
        text = ft.read_current(params["daemons_file"])[0]
        if text is None:
            module.fail_json(msg="%s does not exist: is FRR installed?" % params["daemons_file"])
        changes = _keeping_owner(params["daemons_file"], enable_daemons(text, params["enable_daemons"]), 0o640)
        if changes and not module.check_mode:
            ft.apply(changes)
    actions = []
    if params["service"]:
        try:
            actions = su.ensure_running(module.run_command, params["service"], restart=bool(changes),
                                        check_mode=module.check_mode)
        except su.UnitError as error:
            module.fail_json(msg=str(error), changed=bool(changes) and not module.check_mode)
    return changes, actions


def _topology_changed(result):
    """What discovery sees changed: the roles after this one discover again (gpufabric_topology_stale)."""
    result["topology_changed"] = True
    result["ansible_facts"] = {"gpufabric_topology_stale": True}


def main():
    module = AnsibleModule(
        argument_spec={
            "content": {"type": "str", "required": True},
            "path": {"type": "path", "default": "/etc/frr/frr.conf"},
            "reload_command": {"type": "path", "default": "/usr/lib/frr/frr-reload.py"},
            "vtysh": {"type": "path", "default": "/usr/bin/vtysh"},
            "daemons": {"type": "list", "elements": "str", "default": []},
            "daemons_timeout": {"type": "int", "default": 60},
            "enable_daemons": {"type": "list", "elements": "str", "default": []},
            "daemons_file": {"type": "path", "default": "/etc/frr/daemons"},
            "service": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    params = module.params
    daemons_changes, service_actions = _daemons_and_service(module)
    path, content = params["path"], params["content"]
    if not content.endswith("\n"):
        content += "\n"
    changes = _keeping_owner(path, content, NEW_FILE_MODE)
    result = {"changed": bool(daemons_changes or service_actions), "file_changed": bool(changes),
              "daemons_changed": bool(daemons_changes), "service_actions": service_actions,
              "lines_deleted": [], "lines_added": [], "topology_changed": False}
    if module._diff:
        result["diff"] = ft.diff_entries(daemons_changes + changes)

    def validate(staged):
        rc, out, err = module.run_command([params["vtysh"], "--dryrun", "-f", staged])
        if rc != 0:
            module.fail_json(msg="FRR refuses the configuration (vtysh --dryrun, rc %d), nothing changed: %s" % (
                rc, (out + err).strip()[-3000:]), **result)

    if module.check_mode and (daemons_changes or service_actions):
        # FRR is not running as the change would leave it: its running configuration cannot be compared yet.
        ft.check(changes, lambda change, staged: validate(staged))
        result["changed"] = True
        module.exit_json(**result)
    if params["daemons"]:
        _wait_for_daemons(module, params["vtysh"], params["daemons"], params["daemons_timeout"])

    # Validated and compared with the running configuration on a private staged copy; the installed file is only
    # replaced after FRR accepted it.
    pending = {}

    def inspect(change, staged):
        validate(staged)
        pending.update(_pending(module, params["reload_command"], staged))

    if changes:
        ft.check(changes, inspect)
    else:
        inspect(None, path)
    result.update(changed=result["changed"] or bool(changes) or changes_pending(pending),
                  lines_deleted=pending["delete"], lines_added=pending["add"])
    if module._diff:
        before, after = diff_text(pending)
        result["diff"].append({"before_header": "running configuration (lines removed)",
                               "after_header": "running configuration (lines added)", "before": before, "after": after})
    if service_actions and not module.check_mode:
        _topology_changed(result)
    if module.check_mode or not (changes or changes_pending(pending)):
        module.exit_json(**result)
    if changes:
        try:
            ft.apply(changes)
        except OSError as error:
            module.fail_json(msg="Writing %s failed (%s); the previous file is in place" % (path, error), **result)
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
        _topology_changed(result)
        if changes_pending(left):
            module.fail_json(msg="FRR did not take every line of %s; still different: %s" % (
                path, "; ".join(left["delete"] + left["add"])), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
