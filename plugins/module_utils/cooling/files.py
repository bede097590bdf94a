# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The files of the cooling role, rendered from its validated input, and the service state they call for.

Used by gpufabric.core.cooling_config. The renderers are pure functions; service_actions reaches the host only
through the systemctl runner it is given. The texts are what the role's templates and copy tasks wrote before the
module existed (with Ansible's default ansible_managed), so that upgrading the collection restarts no controller.
The controller's stop path (ExecStopPost ... stop-action) reads none of this code: it runs from the installed
package alone, so a bug here can at worst leave the previous files in place.
"""

from __future__ import annotations

import json
import os

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import host_program as hp
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su

MANAGED = "Ansible managed"
PACKAGE = "gpufabric_cooling"


def bin_text(lib_dir, managed=MANAGED):
    """The gpufabric-cooling command: puts the library directory on sys.path and runs the package's main()."""
    return hp.launcher_text(lib_dir, PACKAGE + ".__main__",
                            [managed, "gpufabric-cooling: run | check-config | once | status | stop-action (see --help)."])


def unit_text(bin_path, config_file, failsafe_record, watchdog_sec, managed=MANAGED):
    """gpufabric-cooling.service. ExecStopPost runs after every stop, crash or watchdog kill."""
    return """# {managed}
[Unit]
Description=gpufabric.core fan-curve controller and liquid-cooling watchdog
Documentation=https://github.com/gpufabric/gpufabric.core/tree/main/roles/cooling
Wants=network-online.target
After=network-online.target

[Service]
Type=notify
NotifyAccess=main
ExecStartPre={bin} check-config {config}
ExecStart={bin} run {config} --failsafe-record {record}
# Runs after every stop, a crash, a watchdog kill or a failed start included: the fans never stay at a low
# duty unattended. The fail-safe record goes first and needs no configuration; exit 1 means a group failed.
ExecStopPost={bin} stop-action {config} --failsafe-record {record} --reason "ExecStopPost, service result ${{SERVICE_RESULT}}"
Restart=always
RestartSec=2
TimeoutStartSec={watchdog}
WatchdogSec={watchdog}
SyslogIdentifier=gpufabric-cooling
NoNewPrivileges=yes
ProtectSystem=full
ProtectHome=yes
PrivateTmp=yes

[Install]
WantedBy=multi-user.target
""".format(managed=managed, bin=bin_path, config=config_file, record=failsafe_record, watchdog=int(watchdog_sec))


def config_text(config):
    """The controller's JSON configuration, as Ansible's to_nice_json(sort_keys=true) wrote it."""
    return json.dumps(config, indent=4, sort_keys=True, separators=(",", ": ")) + "\n"


def desired_files(params):
    """file_transaction entries, in install order: package (the module_utils it imports, then its own files, laid
    out by host_program), command, configuration, passwords, unit.

    The configuration goes after the package that reads it and the passwords it names; the unit last, so a
    controller (re)started by systemd in between finds a complete set. With enabled false only the password
    files are managed (removed): a controller turned off must not leave its secrets on the host.
    """
    files = []
    passwords = [(params["ipmi_password_file"], params.get("ipmi_password") or ""),
                 (params["redfish_password_file"], params.get("redfish_password") or "")]
    if not params["enabled"]:
        return [{"path": path, "content": None, "mode": 0o600, "secret": True} for path, _secret in passwords]
    files += hp.entries(params["lib_dir"], params.get("module_utils") or {}, params["package"], PACKAGE)
    files.append({"path": params["bin_path"], "content": bin_text(params["lib_dir"]), "mode": 0o755})
    files.append({"path": params["config_file"], "content": config_text(params["config"]), "mode": 0o640})
    for path, secret in passwords:
        files.append({"path": path, "content": secret + "\n" if secret else None, "mode": 0o600, "secret": True})
    files.append({"path": params["unit_file"], "mode": 0o644,
                  "content": unit_text(params["bin_path"], params["config_file"], params["failsafe_record"],
                                       params["watchdog_sec"])})
    return files


def directories(params):
    """(path, mode) of the directories the files live in, created or corrected before the files."""
    if not params["enabled"]:
        return []
    return hp.directories(params["lib_dir"], params.get("module_utils") or {}, PACKAGE) + [
        (params["config_dir"], 0o750), (params["state_dir"], 0o750)]


def package_name_problems(names, module_utils=()):
    """Package file names must be plain .py names (they are joined to the package directory); module_utils names
    are relative .py paths in the collection's module_utils (host_program's layout)."""
    return (["package.%s: not a plain .py file name" % name for name in names
             if os.path.basename(name) != name or not name.endswith(".py") or name.startswith(".")]
            + hp.name_problems(module_utils, "module_utils"))


def service_actions(run, unit, enabled, files_changed=False, unit_changed=False, unit_present=True, check_mode=False):
    """Bring the controller's unit to the state its files call for, once they are in place.

    Enabled: daemon-reload when the unit file changed, enable, and start, or restart when any of its files changed
    (a restart runs the unit's ExecStopPost stop-action before the new controller takes over). Turned off: stop and
    disable a unit that is present; a missing unit is nothing to do. run is AnsibleModule.run_command; in check mode
    only systemctl's queries run. Returns what was (or would be) done, e.g. ["daemon-reload", "restarted x.service"];
    raises systemd_units.UnitError when systemctl refuses.
    """
    if not enabled:
        return su.ensure_stopped(run, unit, check_mode=check_mode) if unit_present else []
    actions = su.daemon_reload(run, check_mode=check_mode) if unit_changed else []
    return actions + su.ensure_running(run, unit, restart=files_changed, check_mode=check_mode)
