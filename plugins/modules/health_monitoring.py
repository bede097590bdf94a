#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: health_monitoring
short_description: Write the fabric's Prometheus targets, rules and Alertmanager configuration, validated, as one transaction
version_added: "0.1.0"
description:
  - Writes the files the C(gpufabric.core.health_monitoring_config) filter renders - file_sd targets, the recording
    and alerting rules, an Alertmanager configuration and, for a Prometheus this collection runs, its whole
    C(prometheus.yml) - as one transaction (C(file_transaction)). Each new file is checked before any is replaced,
    by C(promtool check rules), C(promtool check config --syntax-only) and C(amtool check-config) where those
    programs are installed on the host; a file they refuse leaves every file as it was.
  - With O(services), brings C(prometheus.service) and C(prometheus-alertmanager.service) (Debian's units) to
    running, restarts Prometheus after its C(prometheus.yml) changed and reloads it after its rules changed
    (targets need nothing, Prometheus watches file_sd files), and reloads Alertmanager after its configuration
    changed.
  - Check mode validates and reports what would change (diff included) and changes nothing.
options:
  files:
    description:
      - Path to text of each file to write, keyed by what it is - C(targets), C(rules), C(alertmanager),
        C(prometheus) - each a dict with C(path) and C(content). Absent keys are not written.
    type: dict
    required: true
  directory_mode:
    description: Mode of the directories created, octal; an existing directory keeps its mode.
    type: str
    default: "0755"
  services:
    description: Bring Debian's Prometheus and Alertmanager units to running and reload or restart them after a change.
    type: bool
    default: false
attributes:
  check_mode:
    support: full
    description: Reports which rule, route and target files would change, with a diff, after validating them; writes nothing.
  diff_mode:
    support: full
    description: Returns the before and after text of every changed file.
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Write the targets, rules and Alertmanager configuration where the user's Prometheus reads them
  gpufabric.core.health_monitoring:
    files:
      targets:
        path: /etc/prometheus/gpufabric/gpufabric_targets.json
        content: "{{ __config.targets | to_nice_json }}"
      rules:
        path: /etc/prometheus/gpufabric/gpufabric.rules.yml
        content: "{{ __config.rules | to_nice_yaml(sort_keys=false) }}"
  vars:
    __config: "{{ groups['gpu_nodes'] | map('extract', hostvars) | list | gpufabric.core.health_monitoring_config }}"
"""

RETURN = r"""
changes:
  description: Each file created or replaced, and each directory created, with the action.
  type: list
  elements: dict
  returned: always
  sample: [{"path": "/etc/prometheus/gpufabric/gpufabric.rules.yml", "action": "replace"}]
service_actions:
  description: What systemctl did (or would do), e.g. C(reloaded prometheus.service).
  type: list
  elements: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils import systemd_units as su

KINDS = ("targets", "rules", "alertmanager", "prometheus")
PROMETHEUS = "prometheus.service"
ALERTMANAGER = "prometheus-alertmanager.service"


def _checkers(module):
    """kind -> argv before the file's path, for the checkers installed on this host."""
    promtool = module.get_bin_path("promtool")
    amtool = module.get_bin_path("amtool")
    checkers = {}
    if promtool:
        checkers["rules"] = [promtool, "check", "rules"]
        checkers["prometheus"] = [promtool, "check", "config", "--syntax-only"]
    if amtool:
        checkers["alertmanager"] = [amtool, "check-config"]
    return checkers


def main():
    module = AnsibleModule(
        argument_spec={
            "files": {"type": "dict", "required": True},
            "directory_mode": {"type": "str", "default": "0755"},
            "services": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    files = module.params["files"]
    problems = ["files.%s: unknown (known: %s)" % (kind, ", ".join(KINDS)) for kind in files if kind not in KINDS]
    problems += ["files.%s: needs an absolute path and a content" % kind for kind, entry in files.items()
                 if not isinstance(entry, dict) or not os.path.isabs(str(entry.get("path") or ""))
                 or not isinstance(entry.get("content"), str)]
    try:
        directory_mode = int(module.params["directory_mode"], 8)
    except ValueError:
        problems.append("directory_mode: %r is not an octal mode" % module.params["directory_mode"])
    if problems:
        module.fail_json(msg="Nothing was changed: %s" % "; ".join(problems))
    kind_of = {entry["path"]: kind for kind, entry in files.items()}
    desired = [{"path": files[kind]["path"], "content": files[kind]["content"], "mode": 0o644}
               for kind in KINDS if kind in files]
    try:
        changes = ft.plan(desired, {entry["path"]: ft.read_current(entry["path"]) for entry in desired})
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Nothing was changed: %s" % exc)
    missing = sorted({os.path.dirname(entry["path"]) for entry in desired
                      if not os.path.isdir(os.path.dirname(entry["path"]))})
    checkers = _checkers(module)

    def validate(change, staged):
        argv = checkers.get(kind_of[change["path"]])
        if not argv:
            return None
        rc, out, err = module.run_command(argv + [staged])
        return None if rc == 0 else "%s refused %s: %s" % (os.path.basename(argv[0]), change["path"],
                                                           (err or out).strip())

    result = {"changed": bool(changes), "service_actions": [],
              "changes": [{"path": path, "action": "mkdir"} for path in missing] + ft.summary(changes)}
    if module._diff:
        result["diff"] = ft.diff_entries(changes)
    if module.check_mode:
        problems = ft.check(changes, validate)
    else:
        try:
            problems = ft.apply(changes, validate=validate, make_directories=[(path, directory_mode) for path in missing])
        except OSError as exc:
            module.fail_json(msg="Writing the monitoring files failed, the previous files were restored: %s" % exc,
                             **result)
    if problems:
        module.fail_json(msg="Nothing was changed: %s" % "; ".join(problems), **result)
    changed = {kind_of[change["path"]] for change in changes}
    if module.params["services"]:
        try:
            result["service_actions"] += su.ensure_running(
                module.run_command, PROMETHEUS, restart="prometheus" in changed, reload="rules" in changed,
                check_mode=module.check_mode)
            if "alertmanager" in files:
                result["service_actions"] += su.ensure_running(
                    module.run_command, ALERTMANAGER, reload="alertmanager" in changed, check_mode=module.check_mode)
        except su.UnitError as exc:
            module.fail_json(msg="The monitoring files are in place, the services are not: %s" % exc, **result)
        result["changed"] = result["changed"] or bool(result["service_actions"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
