# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma role's host files as one desired state: rendering, module options checked against modinfo, and a
write of every file as one transaction (all or nothing).

Pure functions except apply, which writes through file_transaction and touches only the paths it is given.
"""

from __future__ import annotations

import json
import os
import re

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import host_program as hp

# The tuning program, installed in tune_lib_dir beside the module_utils it imports (host_program's layout).
PROGRAM = "gpufabric_rdma_tune.py"
HEADER = "# Managed by gpufabric.core.rdma: changes made here are overwritten.\n"

# `modinfo -p` prints `name:description (type)`; a description may run over several lines (mlx4_core's num_vfs),
# and a continuation line never starts with `identifier:`.
_MODINFO_PARAMETER = re.compile(r"([A-Za-z0-9_]+):(.*)")
_MODINFO_NOT_FOUND = re.compile(r"modinfo: ERROR: Module \S+ not found\.?")
_OPTION = re.compile(r"([A-Za-z0-9_.-]+)(=.*)?", re.DOTALL)


class ConfigError(ValueError):
    """Input the module refuses before any file is written; the message names the variable."""


# ---------------------------------------------------------------- module options and modinfo


def parse_modinfo_parameters(text):
    """Parameter names of one module from `modinfo -p MODULE` (exit 0), in order, without duplicates."""
    names = []
    for line in text.splitlines():
        match = _MODINFO_PARAMETER.match(line)
        if match and match.group(1) not in names:
            names.append(match.group(1))
    return names


def modinfo_not_found(text):
    """True when modinfo's stderr says the module does not exist for this kernel."""
    return any(_MODINFO_NOT_FOUND.fullmatch(line.strip()) for line in text.splitlines())


def option_names(options):
    """['disable_raw_qp_encap', 'foo'] from 'disable_raw_qp_encap=1 foo=2' (the modprobe.d options syntax)."""
    names = []
    for word in options.split():
        match = _OPTION.fullmatch(word)
        if not match:
            raise ConfigError("%r is not a module option (name=value)" % word)
        names.append(match.group(1))
    return names


def check_module_options(module_options, known_parameters, variable="rdma_module_options"):
    """Compare wanted options with the parameters modinfo lists.

    known_parameters: {module: [parameter names]} for modules modinfo knows, None for one it does not.
    Returns (problems, unchecked): a sentence per unknown option, naming the variable path, and the modules
    that could not be checked (not installed yet).
    """
    problems = []
    unchecked = []
    for module in sorted(module_options):
        parameters = known_parameters.get(module)
        if parameters is None:
            unchecked.append(module)
            continue
        # modprobe accepts dashes for underscores in parameter names, as in module names.
        accepted = {name.replace("-", "_") for name in parameters}
        for name in option_names(module_options[module]):
            if name.replace("-", "_") not in accepted:
                problems.append(
                    "%s.%s: option %r is not a parameter of the installed %s module (modinfo -p %s lists %s); "
                    "the kernel would ignore it" % (
                        variable, module, name, module, module, ", ".join(parameters) or "none"))
    return problems, unchecked


# ---------------------------------------------------------------- rendering


def render_modprobe(module_options):
    lines = [HEADER,
             "# Kernel module options for RDMA (gpufabric.core.rdma, rdma_module_options).\n",
             "# They apply when the module loads: reboot (or reload the driver) after a change.\n"]
    lines += ["options %s %s\n" % (module, module_options[module]) for module in sorted(module_options)]
    return "".join(lines)


def render_modules_load(modules):
    lines = [HEADER, "# RDMA modules loaded at boot by systemd-modules-load (gpufabric.core.rdma, rdma_modules_load).\n"]
    return "".join(lines + ["%s\n" % module for module in modules])


def render_limits(domains, limit):
    lines = [HEADER,
             "# Locked memory for RDMA (gpufabric.core.rdma): verbs applications pin their buffers.\n",
             '# "*" does not apply to root in pam_limits, so root is listed by name.\n']
    for domain in domains:
        for kind in ("soft", "hard"):
            lines.append("%-16s %-5s %-8s %s\n" % (domain, kind, "memlock", limit))
    return "".join(lines)


def render_systemd_memlock(limit):
    value = "infinity" if limit == "unlimited" else "%sK" % limit
    return (HEADER
            + "# Locked memory for services started by systemd (gpufabric.core.rdma). pam_limits does not apply to\n"
            "# services; systemd reads this at daemon-reexec, and running services keep their limit until restarted.\n"
            "[Manager]\nDefaultLimitMEMLOCK=%s\n" % value)


def render_tune_wrapper(python, program):
    # A wrapper, not a shebang: it names the interpreter Ansible found, which is not always /usr/bin/python3.
    return ("#!/bin/sh\n" + HEADER
            + "# Boot-time RDMA NIC tuning (gpufabric.core.rdma): irq-affinity, roce, pcie-relaxed-ordering, mlxconfig.\n"
            "exec %s %s \"$@\"\n" % (python, program))


def render_unit(unit, script, config):
    return (HEADER
            + "[Unit]\n"
            "Description=%s (gpufabric.core.rdma)\n"
            "Documentation=file://%s\n"
            "# NIC drivers probe through udev; RDMA-CM configfs needs rdma_cm (modules-load) and configfs mounted;\n"
            "# newer mlx5 drivers allocate completion IRQs when the link is configured, hence network-online.\n"
            "After=systemd-udev-trigger.service systemd-modules-load.service sys-kernel-config.mount "
            "network-online.target\n"
            "Wants=network-online.target\n"
            "ConditionPathExists=%s\n"
            "\n[Service]\n"
            "Type=oneshot\n"
            "RemainAfterExit=yes\n"
            "ExecStart=%s %s --config %s\n"
            "\n[Install]\n"
            "WantedBy=multi-user.target\n" % (unit["description"], config, config, script, unit["action"], config))


def desired_files(spec):
    """({path: (text, mode)}, [paths to remove]) of the whole role from the validated input (see the module)."""
    paths = spec["paths"]
    files = {}
    absent = []
    if spec["module_options"]:
        files[paths["modprobe"]] = (render_modprobe(spec["module_options"]), 0o644)
    else:
        absent.append(paths["modprobe"])
    files[paths["modules_load"]] = (render_modules_load(spec["modules_effective"]), 0o644)
    files[paths["limits"]] = (render_limits(spec["memlock_domains"], spec["memlock_limit"]), 0o644)
    if spec["memlock_systemd"]:
        files[paths["systemd_memlock"]] = (render_systemd_memlock(spec["memlock_limit"]), 0o644)
    else:
        absent.append(paths["systemd_memlock"])
    program = os.path.join(paths["tune_lib_dir"], PROGRAM)
    for entry in hp.entries(paths["tune_lib_dir"], spec["tune_libraries"], {PROGRAM: spec["tune_program"]}):
        files[entry["path"]] = (entry["content"], entry["mode"])
    files[paths["tune_script"]] = (render_tune_wrapper(spec["python"], program), 0o755)
    files[paths["tune_config"]] = (json.dumps(spec["tune_config"], indent=2, sort_keys=True) + "\n", 0o644)
    for unit in spec["units"]:
        path = os.path.join(paths["unit_dir"], unit["name"] + ".service")
        if unit["enabled"]:
            files[path] = (render_unit(unit, paths["tune_script"], paths["tune_config"]), 0o644)
        else:
            absent.append(path)
    return files, absent


# ---------------------------------------------------------------- planning and the transaction


def plan_changes(files, absent):
    """file_transaction changes for the files that differ from the host, in path order, writes before removals; each
    also says its state (write or remove). Every file is root's when the module runs as root. Raises ValueError
    when a path exists and is not a regular file."""
    owner = (0, 0) if os.geteuid() == 0 else None
    desired = [{"path": path, "content": files[path][0], "mode": files[path][1], "owner": owner}
               for path in sorted(files)]
    desired += [{"path": path, "content": None, "mode": 0o644} for path in sorted(absent)]
    changes = ft.plan(desired, ft.read_all(desired))
    for change in changes:
        change["state"] = "remove" if change["after"] is None else "write"
    return changes


def diff_of(changes):
    """Ansible's diff list: one before/after pair per changed file."""
    return ft.diff_entries(changes)


def apply(changes, after=None):
    """Write every change as one file_transaction, then run after() (a check of the result): when anything fails
    or after() raises, every file gets its previous content, mode and owner back, files that did not exist are
    removed again, and so are the directories created for them (0755)."""
    directories = sorted({os.path.dirname(change["path"]) for change in changes if change["after"] is not None})
    ft.apply(changes, make_directories=[(directory, 0o755) for directory in directories], after=after)


# ---------------------------------------------------------------- reboot reasons


def reboot_reasons(changes, paths, loaded_modules_with_new_options):
    """Why the host needs a reboot after these changes (empty when none is needed)."""
    changed = {change["path"] for change in changes}
    reasons = []
    if paths["modprobe"] in changed:
        reasons.append("kernel module options changed in %s" % paths["modprobe"])
    if loaded_modules_with_new_options:
        reasons.append("loaded modules keep their old options until reloaded: %s"
                       % ", ".join(sorted(loaded_modules_with_new_options)))
    return reasons


def modules_with_changed_options(before_text, module_options):
    """Modules whose `options` lines differ between the old modprobe file and the wanted options."""
    old = {}
    for line in (before_text or "").splitlines():
        words = line.split(None, 2)
        if len(words) >= 2 and words[0] == "options":
            old[words[1]] = words[2].strip() if len(words) == 3 else ""
    modules = set(old) | set(module_options)
    return sorted(module for module in modules if old.get(module) != module_options.get(module))
