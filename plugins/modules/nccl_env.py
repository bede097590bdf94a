#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_env
short_description: Write NCCL's configuration, profile script, environment file and topology file as one transaction
version_added: "0.1.0"
description:
  - Renders C(/etc/nccl.conf), the login-shell profile script, an optional C(KEY=VALUE) environment file and an
    optional NCCL topology XML from variables derived by P(gpufabric.core.nccl_config#filter), and installs all of
    them or none. Each file is staged next to its target, checked (C(sh -n) for the shell files, an XML parser for
    the topology), and renamed into place; when a rename fails the files already replaced are restored.
  - Files no longer asked for (the profile script when turned off, the topology file) are removed in the same
    transaction.
  - Used by the P(gpufabric.core.nccl#role) role; the derivation itself stays in the filter, on the controller.
author:
  - gpufabric.core contributors (@gpufabric)
options:
  variables:
    description: The NCCL variables, name to value, in the order the files list them (the filter sorts them).
    type: dict
    required: true
  user_names:
    description: Names of the variables set through C(nccl_variables), listed in a comment of the configuration file.
    type: list
    elements: str
    default: []
  topology_source:
    description: Where the topology came from (the C(source) of the C(gpufabric_topology) facts), for the file's header.
    type: str
    required: true
  conf_path:
    description: NCCL's configuration file.
    type: path
    default: /etc/nccl.conf
  profile_script_path:
    description: The profile script to write; empty writes none and removes O(profile_script_remove).
    type: path
    default: ""
  profile_script_remove:
    description: The profile script to remove when O(profile_script_path) is empty.
    type: path
    default: ""
  env_file_path:
    description: C(KEY=VALUE) environment file to write; empty writes none.
    type: path
    default: ""
  topology_xml:
    description: Content of the NCCL topology file; empty removes O(topology_xml_path).
    type: str
    default: ""
  topology_xml_path:
    description: Path of the NCCL topology file; empty leaves topology files alone.
    type: path
    default: ""
  write:
    description:
      - V(false) writes nothing and only verifies (as with O(verify=always)); the role passes it when only the
        C(nccl_verify) phase is selected by tags. RV(changes) then lists what a run that writes would change.
    type: bool
    default: true
  verify:
    description:
      - When to read O(conf_path) back and look for other files that set NCCL variables (they win over
        O(conf_path)). V(after_change) verifies only when this run changed a file, V(always) on every run (a
        scheduled audit), V(never) never.
      - The file must hold exactly the NAME=VALUE lines of O(variables), in order, and none of O(retired); otherwise
        the module fails (something else writes the file). Other files that set NCCL variables are named in a
        warning and in RV(other_settings).
      - In check mode a file that would change is not read back (nothing was written).
    type: str
    choices: [after_change, always, never]
    default: after_change
  retired:
    description: Variable names that must not be left in O(conf_path) (retired by NCCL, not set on purpose).
    type: list
    elements: str
    default: []
  other_settings_globs:
    description:
      - Where to look for other files that set NCCL variables. The files this module writes are left out.
    type: list
    elements: str
    default: [/etc/profile.d/*.sh, /etc/*.sh, /etc/environment]
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports which files would change, with a diff, after checking them; writes nothing.
  diff_mode:
    support: full
    details: Returns the before and after text of every changed file.
notes:
  - The directories of the files are created (mode 0755) when missing.
  - The verification is part of this one task, so that a run that changes nothing runs no task of its own for it.
seealso:
  - module: gpufabric.core.topology_facts
"""

EXAMPLES = r"""
- name: Write the NCCL files derived from the topology facts
  gpufabric.core.nccl_env:
    variables: "{{ (ansible_facts.gpufabric_topology | gpufabric.core.nccl_config).variables }}"
    topology_source: "{{ ansible_facts.gpufabric_topology.source }}"
    profile_script_path: /etc/profile.d/nccl.sh
    env_file_path: /etc/default/nccl
  register: nccl_files
"""

RETURN = r"""
changes:
  description: Files created, replaced, re-moded or removed (or that would be, in check mode); no content.
  returned: always
  type: list
  elements: dict
  sample: [{action: replace, path: /etc/nccl.conf}]
files:
  description: The files the configuration now consists of.
  returned: always
  type: list
  elements: str
  sample: [/etc/nccl.conf, /etc/profile.d/nccl.sh]
verified:
  description: Whether this run read the configuration back and looked for other NCCL settings (O(verify)).
  returned: always
  type: bool
  sample: true
other_settings:
  description: Other files that set NCCL variables, which win over O(conf_path); empty when not verified.
  returned: always
  type: list
  elements: str
  sample: [/etc/profile.d/cuda-env.sh]
"""

import glob
import os
import xml.dom.minidom

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.nccl import config as nc
from ansible_collections.gpufabric.core.plugins.module_utils.nccl import files as nf


def verify(module, params, desired, unwritten, result):
    """Read the configuration back (unless check mode left it unwritten) and name other files setting NCCL
    variables; fails when the file is not what this module derives."""
    result["verified"] = True
    if not unwritten:
        try:
            text = ft.read_current(params["conf_path"])[0] or ""
        except (OSError, ValueError) as exc:
            module.fail_json(msg="Reading %s back failed: %s" % (params["conf_path"], exc), **result)
        problems = nf.conf_problems(text, params["variables"], params["retired"], params["conf_path"])
        if problems:
            module.fail_json(msg=" ".join(problems), **result)
    own = {entry["path"] for entry in desired}
    others = []
    for path in sorted({path for pattern in params["other_settings_globs"] for path in glob.glob(pattern)} - own):
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                if nf.sets_nccl_variables(handle.read()):
                    others.append(path)
        except OSError:
            continue
    result["other_settings"] = others
    if others:
        module.warn("These files also set NCCL variables, and the environment wins over %s: %s. Remove the NCCL "
                    "lines from them, or move their values into nccl_variables." % (params["conf_path"], ", ".join(others)))


def main():
    module = AnsibleModule(
        argument_spec={
            "variables": {"type": "dict", "required": True},
            "user_names": {"type": "list", "elements": "str", "default": []},
            "topology_source": {"type": "str", "required": True},
            "conf_path": {"type": "path", "default": "/etc/nccl.conf"},
            "profile_script_path": {"type": "path", "default": ""},
            "profile_script_remove": {"type": "path", "default": ""},
            "env_file_path": {"type": "path", "default": ""},
            "topology_xml": {"type": "str", "default": ""},
            "topology_xml_path": {"type": "path", "default": ""},
            "write": {"type": "bool", "default": True},
            "verify": {"type": "str", "choices": ["after_change", "always", "never"], "default": "after_change"},
            "retired": {"type": "list", "elements": "str", "default": []},
            "other_settings_globs": {"type": "list", "elements": "str", "default": list(nf.OTHER_SETTINGS_GLOBS)},
        },
        supports_check_mode=True,
    )
    params = dict(module.params)
    params["variables"] = {name: nc.format_value(value) for name, value in params["variables"].items()}
    problems = nf.value_problems(params["variables"])
    desired = nf.desired_files(params)
    for entry in desired:
        if not os.path.isabs(entry["path"]):
            problems.append("%s: not an absolute path" % entry["path"])
    if problems:
        module.fail_json(msg="Nothing was written: %s" % "; ".join(problems))
    try:
        current = ft.read_all(desired)
        changes = ft.plan(desired, current)
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Nothing was written: %s" % exc)

    def validate(change, staged):
        if change["path"] == params["topology_xml_path"]:
            try:
                xml.dom.minidom.parse(staged)
            except Exception as exc:  # pylint: disable=broad-except
                return "%s: not well-formed XML: %s" % (change["path"], exc)
            return None
        if change["path"] in (params["profile_script_path"], params["env_file_path"]):
            rc, _out, err = module.run_command(["/bin/sh", "-n", staged])
            if rc != 0:
                return "%s: /bin/sh -n refused it: %s" % (change["path"], err.strip())
        return None

    writes = bool(changes) and params["write"]
    result = {"changed": writes, "changes": ft.summary(changes),
              "files": [entry["path"] for entry in desired if entry["content"] is not None],
              "verified": False, "other_settings": []}
    if module._diff and writes:
        result["diff"] = ft.diff_entries(changes)
    if writes and module.check_mode:
        problems = ft.check(changes, validate)
        if problems:
            module.fail_json(msg="Nothing would be written: %s" % "; ".join(problems), **result)
    elif writes:
        directories = sorted({os.path.dirname(change["path"]) for change in changes if change["after"] is not None})
        try:
            problems = ft.apply(changes, validate=validate, make_directories=[(path, 0o755) for path in directories])
        except OSError as exc:
            module.fail_json(msg="Writing the NCCL files failed, the previous files were restored: %s" % exc, **result)
        if problems:
            module.fail_json(msg="Nothing was written: %s" % "; ".join(problems), **result)
    if params["verify"] == "always" or not params["write"] or (params["verify"] == "after_change" and writes):
        verify(module, params, desired, unwritten=writes and module.check_mode, result=result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
