#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: cooling_gpu_policy
short_description: Set NVIDIA GPU persistence mode, power limits and application clocks per GPU model
version_added: 0.1.0
description:
  - Reads every GPU with C(nvidia-smi --query-gpu), matches each GPU's model name against O(models), and sets
    what differs - persistence mode (C(-pm)), power limit (C(-pl)) and application clocks (C(-ac)).
  - GPUs whose model is not in O(models) are left alone and listed in RV(unmanaged).
  - A power limit outside the GPU's own range, or clocks on a GPU that reports none, fail the task before any
    GPU changes. When a command fails midway, the settings this run already changed are put back.
  - When C(nvidia-smi) is not installed the module changes nothing and returns RV(available=false) with the
    reason, so one play can cover GPU and CPU-only hosts.
  - Power limits and application clocks set with C(nvidia-smi) last until the driver unloads or the host
    reboots; persistence mode keeps the driver loaded. Run the role at boot (or keep C(nvidia-persistenced)
    running) to hold them.
options:
  models:
    description:
      - Settings per GPU model, keyed by the name C(nvidia-smi --query-gpu=name) prints, for example
        C(NVIDIA H100 80GB HBM3).
      - "Each value may hold C(persistence_mode) (bool), C(power_limit_watts) (number) and C(application_clocks)
        (C({memory: MHz, graphics: MHz}))."
    type: dict
    required: true
  nvidia_smi:
    description: The nvidia-smi program to run.
    type: path
    default: nvidia-smi
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports the changes it would make without running them.
  diff_mode:
    support: full
    details: Shows each changed setting per GPU, before and after.
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Cap H100 power and pin application clocks
  gpufabric.core.cooling_gpu_policy:
    models:
      NVIDIA H100 80GB HBM3:
        persistence_mode: true
        power_limit_watts: 600
        application_clocks: {memory: 2619, graphics: 1980}
  register: gpu_policy
"""

RETURN = r"""
available:
  description: Whether nvidia-smi ran and listed GPUs.
  type: bool
  returned: always
  sample: true
reason:
  description: Why the policy could not be looked at, when RV(available) is false.
  type: str
  returned: always
  sample: nvidia-smi is not installed
changes:
  description: The settings changed (or, in check mode, to change), one entry per GPU and setting.
  type: list
  elements: dict
  returned: always
  sample:
    - {index: 0, model: NVIDIA H100 80GB HBM3, setting: power_limit_watts, before: 700.0, after: 600.0,
       args: ["-i", "0", "-pl", "600"]}
unmanaged:
  description: GPUs whose model has no entry in O(models).
  type: list
  elements: dict
  returned: always
  sample: [{index: 4, model: NVIDIA A100-SXM4-80GB}]
"""

import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils.cooling.gpu import (
    QUERY_FIELDS,
    model_policy_problems,
    parse_gpu_query,
    plan_gpu_policy,
    revert_args,
)
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError


def main():
    module = AnsibleModule(
        argument_spec={"models": {"type": "dict", "required": True}, "nvidia_smi": {"type": "path", "default": "nvidia-smi"}},
        supports_check_mode=True,
    )
    problems = model_policy_problems(module.params["models"], "models")
    if problems:
        module.fail_json(msg="GPU power policy is not usable: " + "; ".join(problems))
    result = {"changed": False, "available": False, "reason": "", "changes": [], "unmanaged": []}
    binary = shutil.which(module.params["nvidia_smi"])
    if binary is None:
        result["reason"] = "%s is not installed" % module.params["nvidia_smi"]
        module.exit_json(**result)
    rc, out, err = module.run_command([binary, "--query-gpu=" + ",".join(QUERY_FIELDS), "--format=csv,noheader,nounits"])
    if rc != 0:
        # "No devices were found" and a driver/library mismatch both land here: report, do not fail the host.
        result["reason"] = "nvidia-smi failed (exit %d): %s" % (rc, (err or out).strip())
        module.exit_json(**result)
    try:
        rows = parse_gpu_query(out)
    except ParseError as exc:
        module.fail_json(msg=str(exc), **result)
    plan = plan_gpu_policy(rows, module.params["models"])
    result.update(available=True, changes=plan["changes"], unmanaged=plan["unmanaged"])
    if plan["problems"]:
        module.fail_json(msg="GPU power policy cannot be applied, nothing changed: " + "; ".join(plan["problems"]), **result)
    result["changed"] = bool(plan["changes"])
    if module._diff:
        result["diff"] = {
            "before": "".join("GPU %d %s: %s\n" % (c["index"], c["setting"], c["before"]) for c in plan["changes"]),
            "after": "".join("GPU %d %s: %s\n" % (c["index"], c["setting"], c["after"]) for c in plan["changes"]),
        }
    if module.check_mode:
        module.exit_json(**result)
    applied = []
    for change in plan["changes"]:
        rc, out, err = module.run_command([binary] + change["args"])
        if rc != 0:
            # Nothing half-applied: put back what this run already changed, newest first.
            reverted = [module.run_command([binary] + revert_args(done))[0] == 0 for done in reversed(applied)]
            module.fail_json(msg="nvidia-smi %s failed (exit %d) on GPU %d: %s; %d earlier change(s) reverted%s"
                             % (" ".join(change["args"]), rc, change["index"], (err or out).strip(), sum(reverted),
                                "" if all(reverted) else ", %d could not be reverted" % reverted.count(False)), **result)
        applied.append(change)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
