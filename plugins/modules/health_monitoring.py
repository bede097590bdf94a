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
    by C(promtool check rules), C(promtool check config --syntax-only), C(promtool check web-config) and
    C(amtool check-config) where those programs are installed on the host; a file they refuse leaves every file as
    it was.
  - With the kinds C(prometheus_defaults) and C(alertmanager_defaults) (Debian's C(/etc/default) files - the listen
    address and web configuration arguments), and their web configurations (TLS, basic auth) among O(secret_files),
    for a Prometheus and Alertmanager this collection runs.
  - O(secret_files) (the remediation webhook's token, the password Prometheus sends to Alertmanager) and the web
    configurations are written C(0640) owned by root and the group O(service_group) (Debian runs Prometheus and
    Alertmanager as C(prometheus)), or C(0600) root's alone where that group does not exist; their content never
    appears in a diff or the result.
  - With O(services), brings C(prometheus.service) and C(prometheus-alertmanager.service) (Debian's units) to
    running, restarts Prometheus after its C(prometheus.yml) changed and reloads it after its rules changed
    (targets need nothing, Prometheus watches file_sd files), and reloads Alertmanager after its configuration
    changed.
  - Check mode validates and reports what would change (diff included) and changes nothing.
options:
  files:
    description:
      - Path to text of each file to write, keyed by what it is - C(targets), C(rules), C(alertmanager),
        C(prometheus), C(prometheus_defaults), C(alertmanager_defaults) - each a dict with C(path) and C(content).
        Absent keys are not written.
    type: dict
    required: true
  secret_files:
    description: Files holding a secret; their content is never logged or shown.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: str
        required: true
      content:
        description: The secret text.
        type: str
        required: true
      kind:
        description: C(prometheus_web) or C(alertmanager_web) for a web configuration, checked by C(promtool check
          web-config) before it is written.
        type: str
        choices: [prometheus_web, alertmanager_web]
  service_group:
    description: The group that reads the web configurations and O(secret_files) (the services' user's group).
    type: str
    default: prometheus
  directory_mode:
    description: Mode of the directories created, octal; an existing directory keeps its mode.
    type: str
    default: "0755"
  services:
    description: Bring Debian's Prometheus and Alertmanager units to running and reload or restart them after a change.
    type: bool
    default: false
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports which rule, route and target files would change, with a diff, after validating them; writes nothing.
  diff_mode:
    support: full
    details: Returns the before and after text of every changed file.
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

import grp
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su

KINDS = ("targets", "rules", "alertmanager", "prometheus", "prometheus_defaults", "alertmanager_defaults")
# Secret files checked before they are written: the web configurations (their password hashes stay out of logs too).
SECRET_KINDS = ("prometheus_web", "alertmanager_web")
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
        checkers["prometheus_web"] = checkers["alertmanager_web"] = [promtool, "check", "web-config"]
    if amtool:
        checkers["alertmanager"] = [amtool, "check-config"]
    return checkers


def _private_owner(group):
    """(mode, owner) of a file only root and the services' group read: 0640 root:group, or 0600 root's alone
    where the group does not exist (files written for a Prometheus run by someone else)."""
    try:
        gid = grp.getgrnam(group).gr_gid
    except KeyError:
        return 0o600, None
    # Only root gives a file away; a user writing for their own Prometheus keeps it to themselves.
    return (0o640, (0, gid)) if os.geteuid() == 0 else (0o600, None)


def desired_files(files, secret_files, group):
    """file_transaction entries: the files 0644, the secret files readable by group alone."""
    mode, owner = _private_owner(group)
    desired = [{"path": files[kind]["path"], "content": files[kind]["content"], "mode": 0o644}
               for kind in KINDS if kind in files]
    return desired + [{"path": entry["path"], "content": entry["content"], "mode": mode, "owner": owner,
                       "secret": True} for entry in secret_files]


def main():
    module = AnsibleModule(
        argument_spec={
            "files": {"type": "dict", "required": True},
            "directory_mode": {"type": "str", "default": "0755"},
            "services": {"type": "bool", "default": False},
            # The paths may be shown; each content is no_log.
            "secret_files": {"type": "list", "elements": "dict", "default": [], "no_log": False, "options": {
                "path": {"type": "str", "required": True},
                "content": {"type": "str", "required": True, "no_log": True},
                "kind": {"type": "str", "choices": list(SECRET_KINDS)}}},
            "service_group": {"type": "str", "default": "prometheus"},
        },
        supports_check_mode=True,
    )
    files = module.params["files"]
    problems = ["files.%s: unknown (known: %s)" % (kind, ", ".join(KINDS)) for kind in files if kind not in KINDS]
    problems += ["files.%s: needs an absolute path and a content" % kind for kind, entry in files.items()
                 if not _is_file_entry(entry)]
    problems += ["secret_files[%d]: needs an absolute path" % index
                 for index, entry in enumerate(module.params["secret_files"]) if not _is_file_entry(entry)]
    try:
        directory_mode = int(module.params["directory_mode"], 8)
    except ValueError:
        problems.append("directory_mode: %r is not an octal mode" % module.params["directory_mode"])
    if problems:
        module.fail_json(msg="Nothing was changed: %s" % "; ".join(problems))
    kind_of = {entry["path"]: kind for kind, entry in files.items()}
    kind_of.update({entry["path"]: entry["kind"] for entry in module.params["secret_files"] if entry.get("kind")})
    desired = desired_files(files, module.params["secret_files"], module.params["service_group"])
    try:
        changes = ft.plan(desired, ft.read_all(desired))
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Nothing was changed: %s" % exc)
    missing = sorted({os.path.dirname(entry["path"]) for entry in desired
                      if not os.path.isdir(os.path.dirname(entry["path"]))})
    checkers = _checkers(module)

    def validate(change, staged):
        argv = checkers.get(kind_of.get(change["path"]))
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
    changed = {kind_of.get(change["path"]) for change in changes}
    if module.params["services"]:
        try:
            result["service_actions"] += su.ensure_running(
                module.run_command, PROMETHEUS, restart=bool(changed & {"prometheus", "prometheus_defaults"}),
                reload="rules" in changed,
                check_mode=module.check_mode)
            if "alertmanager" in files:
                result["service_actions"] += su.ensure_running(
                    module.run_command, ALERTMANAGER, restart="alertmanager_defaults" in changed,
                    reload="alertmanager" in changed, check_mode=module.check_mode)
        except su.UnitError as exc:
            module.fail_json(msg="The monitoring files are in place, the services are not: %s" % exc, **result)
        result["changed"] = result["changed"] or bool(result["service_actions"])
    module.exit_json(**result)


def _is_file_entry(entry):
    return isinstance(entry, dict) and os.path.isabs(str(entry.get("path") or "")) and isinstance(entry.get("content"), str)


if __name__ == "__main__":
    main()
