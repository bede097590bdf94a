#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: rdma_config
short_description: Write every file of the rdma role as one transaction, module options checked against modinfo
version_added: "0.1.0"
description:
  - Takes the rdma role's validated input and writes its files (modprobe options, modules-load list, pam_limits
    memlock limits, systemd's memlock drop-in, the tuning program with its configuration, wrapper and units) as
    one transaction. Each file is written to a temporary file beside it and renamed over it; when a step fails,
    the files already replaced are restored and nothing is left half-applied.
  - Before anything is written, every option in O(module_options) is compared with C(modinfo -p MODULE) of the
    running kernel; an option the installed module does not have is refused naming C(rdma_module_options.MODULE)
    (the kernel would log "unknown parameter" and ignore it). A module modinfo does not know (its driver not
    installed yet) is named in a warning as not checked.
  - After a change it re-executes systemd (memlock drop-in), reloads units, enables and (re)starts the tuning
    services, stops irqbalance when asked, loads the modules now (not in containers) and rebuilds the initramfs
    when module options changed.
  - Supports check mode and diff. Returns the reasons the host needs a reboot.
author:
  - gpufabric.core contributors (@gpufabric)
options:
  module_options:
    description: "Kernel module options: {module: 'name=value ...'}."
    type: dict
    default: {}
  modules_load:
    description: Modules loaded at boot and now.
    type: list
    elements: str
    default: []
  nvidia_peermem:
    description: Add nvidia_peermem to the modules when the running kernel has it (auto), always, or never.
    type: str
    choices: [auto, enabled, disabled]
    default: auto
  load_modules:
    description: Load the modules now (false in a container sharing another kernel).
    type: bool
    default: true
  memlock_limit:
    description: memlock limit, C(unlimited) or KiB.
    type: str
    default: unlimited
  memlock_domains:
    description: pam_limits domains given the limit.
    type: list
    elements: str
    default: ["*", root]
  memlock_systemd:
    description: Write systemd's DefaultLimitMEMLOCK drop-in.
    type: bool
    default: true
  tune_config:
    description: The tuning program's configuration (JSON object).
    type: dict
    required: true
  tune_program:
    description: Content of gpufabric_rdma_tune.py.
    type: str
    required: true
  tune_libraries:
    description:
      - The collection's module_utils the program imports, path relative to C(plugins/module_utils) to content,
        installed beside the program under C(ansible_collections/gpufabric/core/plugins/module_utils) in the
        library directory (the layout of every host program of the collection).
    type: dict
    default: {}
  python:
    description: Interpreter the wrapper runs the program with.
    type: str
    required: true
  units:
    description: Boot-time services, each with name, action (the program's subcommand) and description.
    type: list
    elements: dict
    default: []
  unit_actions:
    description: Actions whose services are installed and enabled; the other services are disabled and removed.
    type: list
    elements: str
    default: []
  disable_irqbalance:
    description: Stop and disable irqbalance.service when it exists.
    type: bool
    default: false
  update_initramfs:
    description: Rebuild the initramfs when module options change.
    type: bool
    default: true
  initramfs_command:
    description: Command that rebuilds the initramfs; its first word must exist for it to run.
    type: list
    elements: str
    default: [update-initramfs, -u, -k, all]
  paths:
    description: Destination paths (modprobe, modules_load, limits, systemd_memlock, tune_config, tune_script,
      tune_lib_dir, unit_dir).
    type: dict
    required: true
  earlier_reboot_reasons:
    description: Reboot reasons found earlier in this run (a DOCA-OFED install), exported with this module's own.
    type: list
    elements: str
    default: []
  reboot_ok:
    description: Whether the role may reboot the host (C(rdma_reboot_ok)). With reasons recorded by an earlier run,
      none new and no reboot allowed, the module says why no reboot happens (the reboot policy does not run then).
    type: bool
    default: false
  reboot_possible:
    description: Whether the host can be rebooted (false in a container).
    type: bool
    default: true
  host:
    description: The host's name in that warning.
    type: str
    default: ""
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports which files, services and module options would change, and the reboot reasons; writes and restarts nothing.
  diff_mode:
    support: full
    details: Returns the before and after text of every changed file.
notes:
  - Package installation stays with the package modules.
  - Sets the facts C(rdma_reboot_reasons) (every reason pending since the last boot, the marker's and this run's)
    and C(rdma_reboot_required), so that a run that changes nothing needs no task of its own to export them.
"""

EXAMPLES = r"""
- name: Write the RDMA host configuration
  gpufabric.core.rdma_config:
    module_options: {mlx5_core: prof_sel=2}
    modules_load: [ib_umad, rdma_ucm]
    tune_config: "{{ tune_config }}"
    tune_program: "{{ lookup('ansible.builtin.file', 'gpufabric_rdma_tune.py') }}"
    python: /usr/bin/python3
    paths: "{{ rdma_paths }}"
"""

RETURN = r"""
files:
  description: The files written or removed, with their new state.
  returned: always
  type: list
  elements: dict
reboot_reasons:
  description: Why the host needs a reboot after this change (empty when it does not).
  returned: always
  type: list
  elements: str
modules_effective:
  description: The modules loaded at boot, nvidia_peermem included when chosen.
  returned: always
  type: list
  elements: str
modules_not_checked:
  description: Modules with options that modinfo does not know, so their options could not be checked.
  returned: always
  type: list
  elements: str
actions:
  description: Service and module actions taken (or that check mode would take).
  returned: always
  type: list
  elements: str
reboot_marker_present:
  description: Whether an earlier run left reasons in the marker every role uses (C(/run/gpufabric/rdma-reboot-required)).
  returned: always
  type: bool
topology_changed:
  description:
    - Whether this run loaded a kernel module, which can bring RDMA devices, ports and netdevs that topology
      discovery has not seen (never in check mode).
    - When true, C(ansible_facts.gpufabric_topology_stale) is set too, so that the roles after this one run
      M(gpufabric.core.topology_facts) again.
  returned: always
  type: bool
  sample: true
ansible_facts:
  description: The exported reboot facts, and C(gpufabric_topology_stale) (true) when RV(topology_changed).
  returned: always
  type: dict
  contains:
    rdma_reboot_reasons:
      description: Every reason a reboot is pending for, recorded ones first.
      type: list
      elements: str
    rdma_reboot_required:
      description: Whether any reason is pending.
      type: bool
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.rdma import config as rc
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import reboot_marker as rm
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su


def _modinfo_parameters(module, modinfo, names):
    """{module: [parameters] or None when modinfo does not know it}."""
    known = {}
    for name in names:
        if not modinfo:
            known[name] = None
            continue
        rc_, out, err = module.run_command([modinfo, "-p", name])
        if rc_ == 0:
            known[name] = rc.parse_modinfo_parameters(out)
        else:
            known[name] = None
            if not rc.modinfo_not_found(err):
                # Not the plain "not found": say what modinfo said, the module stays unchecked (and named).
                module.warn("modinfo -p %s failed (exit %d): %s" % (name, rc_, " ".join(err.split())))
    return known


def _exit(module, changes, actions, reasons, modules, unchecked, topology_changed=False):
    # The marker is only read here (the reboot policy's reboot_marker records into it): whether an earlier run left
    # reasons decides whether the reboot phase runs, and the exported facts say what is pending, every run.
    p = module.params
    recorded = rm.read_marker("rdma")
    pending = rm.merge_reasons(recorded, p["earlier_reboot_reasons"] + reasons)
    # With new reasons the reboot policy runs and says it; with only recorded ones it runs only to reboot.
    why_not = None if p["earlier_reboot_reasons"] or reasons else rm.why_no_reboot(
        pending, "rdma", p["reboot_ok"], p["reboot_possible"])
    if why_not:
        module.warn("%s%s" % (p["host"] + ": " if p["host"] else "", why_not))
    facts = rm.exported_facts("rdma", pending)
    if topology_changed:
        facts["gpufabric_topology_stale"] = True
    module.exit_json(changed=bool(changes or actions), diff=rc.diff_of(changes), reboot_reasons=reasons,
                     files=[{"path": c["path"], "state": c["state"]} for c in changes], actions=actions,
                     modules_effective=modules, modules_not_checked=unchecked,
                     reboot_marker_present=recorded is not None, topology_changed=topology_changed,
                     ansible_facts=facts)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            module_options=dict(type="dict", default={}),
            modules_load=dict(type="list", elements="str", default=[]),
            nvidia_peermem=dict(type="str", choices=["auto", "enabled", "disabled"], default="auto"),
            load_modules=dict(type="bool", default=True),
            memlock_limit=dict(type="str", default="unlimited"),
            memlock_domains=dict(type="list", elements="str", default=["*", "root"]),
            memlock_systemd=dict(type="bool", default=True),
            tune_config=dict(type="dict", required=True),
            tune_program=dict(type="str", required=True),
            tune_libraries=dict(type="dict", default={}),
            python=dict(type="str", required=True),
            units=dict(type="list", elements="dict", default=[]),
            unit_actions=dict(type="list", elements="str", default=[]),
            disable_irqbalance=dict(type="bool", default=False),
            update_initramfs=dict(type="bool", default=True),
            initramfs_command=dict(type="list", elements="str", default=["update-initramfs", "-u", "-k", "all"]),
            paths=dict(type="dict", required=True),
            earlier_reboot_reasons=dict(type="list", elements="str", default=[]),
            reboot_ok=dict(type="bool", default=False),
            reboot_possible=dict(type="bool", default=True),
            host=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    p = module.params
    module_options = {str(k): str(v) for k, v in p["module_options"].items()}
    actions = []

    # 1. Module options against the installed modules, before anything is written.
    modinfo = module.get_bin_path("modinfo")
    try:
        known = _modinfo_parameters(module, modinfo, sorted(module_options))
        problems, unchecked = rc.check_module_options(module_options, known)
    except rc.ConfigError as error:
        module.fail_json(msg="Nothing was changed. rdma_module_options: %s" % error)
    if problems:
        module.fail_json(msg="Nothing was changed. " + "; ".join(problems), modules_not_checked=unchecked)
    if unchecked:
        module.warn("module options not checked, modinfo does not know %s (not installed yet?): %s" % (
            "this module" if len(unchecked) == 1 else "these modules", ", ".join(unchecked)))

    # 2. nvidia_peermem, when the running kernel has it.
    modules = list(dict.fromkeys(p["modules_load"]))
    if p["nvidia_peermem"] != "disabled":
        available = bool(modinfo) and module.run_command([modinfo, "-F", "filename", "nvidia_peermem"])[0] == 0
        if p["nvidia_peermem"] == "enabled" and not available and p["load_modules"]:
            module.fail_json(msg="Nothing was changed. rdma_nvidia_peermem is enabled but the running kernel has no "
                                 "nvidia_peermem module. It ships with the NVIDIA driver (R470 and later) when the "
                                 "driver is built against the RDMA core: install the driver after the RDMA stack, or "
                                 "set rdma_nvidia_peermem to auto.")
        if available or p["nvidia_peermem"] == "enabled":
            modules.append("nvidia_peermem")
        elif os.path.exists("/proc/driver/nvidia"):
            module.warn("the NVIDIA driver is loaded but provides no nvidia_peermem module for this kernel: "
                        "GPUDirect RDMA will not work until the driver is rebuilt with peer-memory support")
    modules = list(dict.fromkeys(modules))

    # 3. The desired files and what differs.
    units = [dict(unit, enabled=unit["action"] in p["unit_actions"]) for unit in p["units"]]
    spec = dict(p, module_options=module_options, modules_effective=modules, units=units)
    files, absent = rc.desired_files(spec)
    paths = p["paths"]
    try:
        changes = rc.plan_changes(files, absent)
    except ValueError as error:
        module.fail_json(msg="Nothing was changed. %s" % error)
    changed_paths = {change["path"] for change in changes}
    modprobe_change = [change for change in changes if change["path"] == paths["modprobe"]]
    loaded_changed = []
    if modprobe_change and p["load_modules"]:
        loaded_changed = [name for name in rc.modules_with_changed_options(modprobe_change[0]["before"], module_options)
                          if os.path.isdir(os.path.join("/sys/module", name))]
    reasons = rc.reboot_reasons(changes, paths, loaded_changed)

    # Units to stop using before their files go.
    unit_paths = {unit["name"]: os.path.join(paths["unit_dir"], unit["name"] + ".service") for unit in units}
    stale = [unit["name"] for unit in units if not unit["enabled"] and unit_paths[unit["name"]] in changed_paths]
    wanted = [unit["name"] for unit in units if unit["enabled"]]
    program_paths = {paths["tune_script"], paths["tune_config"]} | {
        path for path in files if path.startswith(paths["tune_lib_dir"].rstrip("/") + "/")}
    rerun = bool(changed_paths & program_paths)

    run = module.run_command

    def check_tune_config():
        # The program just written reads the configuration just written; a refusal rolls everything back.
        code, _out, err = run([paths["tune_script"], "check-config", "--config", paths["tune_config"]])
        if code != 0:
            raise rc.ConfigError("the tuning program refuses its configuration: %s" % err.strip())

    # 4. The files, then what the running system must pick up. Units leaving are stopped before their files go.
    # systemctl is asked through the code the other roles' modules share; check mode only asks.
    check_mode = module.check_mode
    applied = False
    try:
        for name in stale:
            actions += su.ensure_stopped(run, name + ".service", check_mode=check_mode)
        if changes and not check_mode:
            try:
                rc.apply(changes, after=check_tune_config)
            except (OSError, rc.ConfigError) as error:
                module.fail_json(msg="No file was changed (every file restored): %s" % error, changed=bool(actions),
                                 actions=actions)
            applied = True
        if paths["systemd_memlock"] in changed_paths:
            actions += su.daemon_reexec(run, check_mode=check_mode)
        if any(unit_paths[name] in changed_paths for name in unit_paths):
            actions += su.daemon_reload(run, check_mode=check_mode)
        for name in wanted:
            actions += su.ensure_running(run, name + ".service", check_mode=check_mode,
                                         restart=rerun or unit_paths[name] in changed_paths)
        if p["disable_irqbalance"]:
            actions += su.ensure_stopped(run, "irqbalance.service", check_mode=check_mode)
    except su.UnitError as error:
        module.fail_json(msg=str(error), changed=applied or bool(actions), actions=actions)
    if check_mode:
        _exit(module, changes, actions, reasons, modules, unchecked)

    loaded = False
    if p["load_modules"]:
        modprobe = module.get_bin_path("modprobe", required=True)
        for name in modules:
            if not os.path.isdir(os.path.join("/sys/module", name)):
                code, _out, err = module.run_command([modprobe, name])
                if code != 0:
                    module.fail_json(msg="modprobe %s failed: %s" % (name, err.strip()))
                actions.append("loaded %s" % name)
                loaded = True
    if modprobe_change and p["update_initramfs"] and p["load_modules"] and \
            module.get_bin_path(p["initramfs_command"][0]):
        code, _out, err = module.run_command(p["initramfs_command"])
        if code != 0:
            module.fail_json(msg="%s failed: %s" % (" ".join(p["initramfs_command"]), err.strip()))
        actions.append("rebuilt the initramfs")

    _exit(module, changes, actions, reasons, modules, unchecked, topology_changed=loaded)


if __name__ == "__main__":
    main()
