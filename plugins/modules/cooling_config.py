#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: cooling_config
short_description: Write every file of the gpufabric-cooling controller as one transaction and run its service
version_added: "0.1.0"
description:
  - Installs the controller package, the C(gpufabric-cooling) command, the JSON configuration, the BMC password
    files and the systemd unit, all of them or none. The configuration is checked first with the same
    C(policy_problems) code the controller's C(check-config) runs; each file is then staged next to its target and
    renamed into place, and when a step fails the files already replaced are restored.
  - Then brings O(service) to match; it reloads systemd when the unit file changed, enables the unit, and starts it, or
    restarts it when any of its files changed. A restart runs the unit's C(ExecStopPost) stop path (the fans'
    stop duty) before the new controller takes over. A unit already enabled and running with unchanged files is
    left alone.
  - Passwords are written to 0600 files and never appear in the result or the diff (their size is shown instead).
  - With O(enabled=false) only the password files are managed, and removed, and the service is stopped and disabled
    when its unit file is present (a missing unit is not an error).
  - The controller's stop path (C(ExecStopPost) ... C(stop-action)) does not use this module; it runs from the
    installed package alone.
  - Used by the P(gpufabric.core.cooling#role) role.
author:
  - gpufabric.core contributors (@gpufabric)
options:
  enabled:
    description: Install the controller's files; V(false) removes the password files only.
    type: bool
    default: true
  config:
    description: The controller's configuration (the role's C(__cooling_config)), passwords replaced by their files.
    type: dict
    default: {}
  package:
    description: The controller package, file name to content (the role's C(files/gpufabric_cooling)).
    type: dict
    default: {}
  module_utils:
    description:
      - The collection's module_utils the controller imports, path relative to C(plugins/module_utils) to content,
        installed under O(lib_dir)C(/ansible_collections/gpufabric/core/plugins/module_utils) (the layout of every
        host program of the collection).
    type: dict
    default: {}
  ipmi_password:
    description: The IPMI password; empty removes O(ipmi_password_file).
    type: str
    default: ""
  redfish_password:
    description: The Redfish password; empty removes O(redfish_password_file).
    type: str
    default: ""
  ipmi_password_file:
    description: Where the IPMI password is kept (mode 0600).
    type: path
    default: /etc/gpufabric-cooling/ipmi.pass
  redfish_password_file:
    description: Where the Redfish password is kept (mode 0600).
    type: path
    default: /etc/gpufabric-cooling/redfish.pass
  lib_dir:
    description: Directory holding the C(gpufabric_cooling) package and the module_utils it imports.
    type: path
    default: /usr/local/lib/gpufabric-cooling
  config_dir:
    description: Directory of the configuration and password files (mode 0750).
    type: path
    default: /etc/gpufabric-cooling
  config_file:
    description: The controller's configuration file (mode 0640).
    type: path
    default: /etc/gpufabric-cooling/config.json
  state_dir:
    description: The controller's state directory (mode 0750), holding the fail-safe record and the reboot marker.
    type: path
    default: /var/lib/gpufabric-cooling
  bin_path:
    description: The C(gpufabric-cooling) command.
    type: path
    default: /usr/local/sbin/gpufabric-cooling
  unit_file:
    description: The systemd unit file of O(service).
    type: path
    default: /etc/systemd/system/gpufabric-cooling.service
  service:
    description: The controller's systemd unit (the role's C(gpufabric-cooling.service)), started, or stopped when
      O(enabled=false), after the files are in place. Empty leaves the service alone and only writes the files.
    type: str
    default: ""
  failsafe_record:
    description: The fail-safe record the controller writes at start and C(stop-action) reads first.
    type: path
    default: /var/lib/gpufabric-cooling/failsafe.record
  watchdog_sec:
    description: C(WatchdogSec) and C(TimeoutStartSec) of the unit.
    type: int
    default: 120
  gpu_policy:
    description: Whether the role has a GPU power policy to apply (C(cooling_gpu_models) set); on a host without
      C(nvidia-smi) the module then warns that it is not applied, and the role skips that phase.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Validates the configuration and reports the files that would change, with a diff, and what would
      be done to the service (systemd is only asked); writes nothing, starts and stops nothing.
  diff_mode:
    support: full
    details: Returns the before and after text of every changed file, the password files' sizes only.
notes:
  - Runs as root; the files are owned by the user the module runs as.
  - Needs systemd (C(systemctl)) when O(service) is set.
  - When the service fails to start the task fails with the new files in place and names the unit's journal; the
    unit's C(ExecStopPost) stop path has set the fans' stop duty by then.
seealso:
  - module: gpufabric.core.cooling_gpu_policy
"""

EXAMPLES = r"""
- name: Write the controller's files, then enable and start it (restarted when its files changed)
  gpufabric.core.cooling_config:
    config: "{{ cooling_policy }}"
    package: "{{ cooling_package_files }}"
    module_utils: "{{ cooling_module_utils_files }}"
    ipmi_password: "{{ vault_ipmi_password }}"
    service: gpufabric-cooling.service
  register: cooling_files

- name: Turn the controller off - stop and disable it, remove its BMC password files
  gpufabric.core.cooling_config:
    enabled: false
    service: gpufabric-cooling.service
"""

RETURN = r"""
changes:
  description: Files and directories created, replaced, re-moded or removed (or that would be, in check mode).
  returned: always
  type: list
  elements: dict
  sample: [{action: replace, path: /etc/gpufabric-cooling/config.json}]
restart_required:
  description: Whether a file the running controller reads changed (package, command, configuration, passwords, unit),
    so the service was restarted (or would be, in check mode).
  returned: always
  type: bool
  sample: true
daemon_reload:
  description: Whether the systemd unit file changed, so systemd was reloaded (or would be, in check mode).
  returned: always
  type: bool
  sample: false
service_actions:
  description: What was done to O(service) (or would be, in check mode); empty when it was already as wanted.
  returned: always
  type: list
  elements: str
  sample: [daemon-reload, restarted gpufabric-cooling.service]
unit_present:
  description: Whether the systemd unit file exists (after the change); a turned-off controller is stopped only then.
  returned: always
  type: bool
  sample: true
reboot_marker_present:
  description: Whether an earlier run left a reboot reason in the marker every role uses (C(/run/gpufabric/cooling-reboot-required)).
  returned: always
  type: bool
  sample: false
nvidia_smi_present:
  description: Whether C(nvidia-smi) is on the host's PATH, so that the GPU power policy phase is included only where
    it can do something.
  returned: always
  type: bool
  sample: false
ansible_facts:
  description: C(cooling_reboot_reasons) (the reasons in the marker) and C(cooling_reboot_required).
  returned: always
  type: dict
"""

import json
import os
import shutil
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.cooling import files as cf
from ansible_collections.gpufabric.core.plugins.module_utils.cooling import policy as cp
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import reboot_marker as rm
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.systemd_units import UnitError


def _directory_changes(wanted):
    changes = []
    for path, mode in wanted:
        if not os.path.isdir(path):
            changes.append({"path": path, "action": "create directory", "mode": mode})
        elif stat.S_IMODE(os.stat(path).st_mode) != mode:
            changes.append({"path": path, "action": "mode", "mode": mode})
    return changes


def main():
    module = AnsibleModule(
        argument_spec={
            "enabled": {"type": "bool", "default": True},
            "config": {"type": "dict", "default": {}},
            "package": {"type": "dict", "default": {}},
            "module_utils": {"type": "dict", "default": {}},
            "ipmi_password": {"type": "str", "default": "", "no_log": True},
            "redfish_password": {"type": "str", "default": "", "no_log": True},
            "ipmi_password_file": {"type": "path", "default": "/etc/gpufabric-cooling/ipmi.pass"},
            "redfish_password_file": {"type": "path", "default": "/etc/gpufabric-cooling/redfish.pass"},
            "lib_dir": {"type": "path", "default": "/usr/local/lib/gpufabric-cooling"},
            "config_dir": {"type": "path", "default": "/etc/gpufabric-cooling"},
            "config_file": {"type": "path", "default": "/etc/gpufabric-cooling/config.json"},
            "state_dir": {"type": "path", "default": "/var/lib/gpufabric-cooling"},
            "bin_path": {"type": "path", "default": "/usr/local/sbin/gpufabric-cooling"},
            "unit_file": {"type": "path", "default": "/etc/systemd/system/gpufabric-cooling.service"},
            "service": {"type": "str", "default": ""},
            "failsafe_record": {"type": "path", "default": "/var/lib/gpufabric-cooling/failsafe.record"},
            "watchdog_sec": {"type": "int", "default": 120},
            "gpu_policy": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    params = module.params
    problems = []
    if params["enabled"]:
        problems += cf.package_name_problems(params["package"], params["module_utils"])
        if "__main__.py" not in params["package"]:
            problems.append("package: the controller package has no __main__.py")
        if params["watchdog_sec"] < 1:
            problems.append("watchdog_sec: must be at least 1")
        # The configuration as the controller will read it back: through JSON, then the controller's own check.
        problems += cp.policy_problems(json.loads(cf.config_text(params["config"])))
    if problems:
        module.fail_json(msg="The cooling configuration is not usable, nothing was changed: %s" % "; ".join(problems))

    desired = cf.desired_files(params)
    directory_changes = _directory_changes(cf.directories(params))
    try:
        current = ft.read_all(desired)
        changes = ft.plan(desired, current)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Nothing was changed: %s" % exc)
    restarting = [change for change in changes if params["enabled"]]
    result = {
        "changed": bool(changes or directory_changes),
        "changes": directory_changes + ft.summary(changes),
        "restart_required": bool(restarting),
        "daemon_reload": any(change["path"] == params["unit_file"] for change in changes),
    }
    if module._diff:
        result["diff"] = ft.diff_entries(changes)
    if not module.check_mode and (changes or directory_changes):
        try:
            for change in directory_changes:
                if change["action"] == "mode":
                    ft.set_attributes(change["path"], change["mode"])
            problems = ft.apply(changes, make_directories=[(c["path"], c["mode"]) for c in directory_changes
                                                           if c["action"] != "mode"])
        except OSError as exc:
            module.fail_json(msg="Writing the cooling files failed, the previous files were restored: %s" % exc, **result)
        if problems:
            module.fail_json(msg="Nothing was changed: %s" % "; ".join(problems), **result)
    result["unit_present"] = os.path.exists(params["unit_file"]) or any(
        change["path"] == params["unit_file"] and change["after"] is not None for change in changes)
    result["service_actions"] = []
    if params["service"]:
        try:
            result["service_actions"] = cf.service_actions(
                module.run_command, params["service"], params["enabled"], files_changed=result["restart_required"],
                unit_changed=result["daemon_reload"], unit_present=result["unit_present"], check_mode=module.check_mode)
        except UnitError as exc:
            module.fail_json(msg="The cooling files are in place, the service is not: %s" % exc, **result)
        result["changed"] = result["changed"] or bool(result["service_actions"])
    recorded = rm.read_marker("cooling")
    result["reboot_marker_present"] = recorded is not None
    # The reboot facts every run exports, with no task of their own; the reboot policy (included when there are
    # reasons) updates them.
    result["ansible_facts"] = rm.exported_facts("cooling", rm.merge_reasons(recorded, []))
    result["nvidia_smi_present"] = shutil.which("nvidia-smi") is not None
    if params["gpu_policy"] and not result["nvidia_smi_present"]:
        module.warn("GPU power policy (cooling_gpu_models) not applied: nvidia-smi is not installed")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
