#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: report_files
short_description: Write a report's files (for example its JSON and HTML) into one directory as one transaction
version_added: "0.1.0"
description:
  - Creates the directory when it is missing and brings every named file to the given text and mode, all of them
    or none (M(gpufabric.core.nccl_env) and M(gpufabric.core.cooling_config) use the same transaction code). A
    file whose text and mode are already right is not touched, so a second run over the same report changes
    nothing.
  - One task instead of a directory task and a copy per file; C(playbooks/discover.yml) writes the fabric map's
    JSON and HTML with it, on the controller.
author:
  - gpufabric.core contributors (@gpufabric)
options:
  path:
    description: The report directory; created with O(directory_mode) when missing (its parents too).
    type: path
    required: true
  files:
    description: File name (no directory part) to its text. A dict or list (what ansible-core before 2.19 makes of a
      template that looks like one) is written as JSON.
    type: dict
    required: true
  mode:
    description:
      - Mode of every file, a quoted octal string. A number is refused (YAML reads an unquoted V(0640) as the
        number 416 and V(644) as 644, so a number cannot say which mode was meant), and so is a mode that lets every
        user write.
    type: raw
    default: "0644"
  directory_mode:
    description: Mode of the directories created, a quoted octal string as for O(mode); an existing directory keeps
      its mode.
    type: raw
    default: "0755"
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports which files would change, with a diff; writes nothing.
  diff_mode:
    support: full
    details: Returns the before and after text of every changed file.

  platform:
    support: full
    platforms: posix"""

EXAMPLES = r"""
- name: Write the fabric map as JSON and HTML
  gpufabric.core.report_files:
    path: reports
    files:
      fabric_map.json: "{{ fabric | to_nice_json(indent=2) }}\n"
      fabric_map.html: "{{ fabric | gpufabric.core.fabric_map_html }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changes:
  description: Files created, replaced or re-moded (or that would be, in check mode); no content.
  returned: always
  type: list
  elements: dict
  sample: [{action: replace, path: reports/fabric_map.json}]
files:
  description: The report's files.
  returned: always
  type: list
  elements: str
  sample: [reports/fabric_map.json, reports/fabric_map.html]
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import file_mode_problem, mode_value


def _mode(module, name):
    problem = file_mode_problem(name, module.params[name])
    if problem:
        module.fail_json(msg="Nothing was written: %s" % problem)
    return mode_value(module.params[name])


def _text(value):
    # ansible-core before 2.19 turns a template result that looks like a dict or list into one (as copy's content).
    if isinstance(value, (dict, list)):
        return json.dumps(value, indent=2, sort_keys=True, separators=(",", ": "))
    return str(value)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            files=dict(type="dict", required=True),
            mode=dict(type="raw", default="0644"),
            directory_mode=dict(type="raw", default="0755"),
        ),
        supports_check_mode=True,
    )
    directory = module.params["path"]
    mode, directory_mode = _mode(module, "mode"), _mode(module, "directory_mode")
    bad = sorted(name for name in module.params["files"]
                 if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name)
    if bad:
        module.fail_json(msg="Nothing was written: files: each name must be a file name without a directory part; "
                             "got %s" % ", ".join(repr(name) for name in bad))
    desired = [{"path": os.path.join(directory, name), "content": _text(text), "mode": mode}
               for name, text in sorted(module.params["files"].items())]
    try:
        current = ft.read_all(desired)
        changes = ft.plan(desired, current)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Nothing was written: %s" % exc)
    result = {"changed": bool(changes), "changes": ft.summary(changes), "files": [e["path"] for e in desired]}
    if module._diff:
        result["diff"] = ft.diff_entries(changes)
    if changes and not module.check_mode:
        try:
            ft.apply(changes, make_directories=[(directory, directory_mode)])
        except OSError as exc:
            module.fail_json(msg="Writing the report into %s failed, the previous files were restored: %s"
                                 % (directory, exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
