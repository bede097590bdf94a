# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bring a systemd unit to the state a desired-state module wants, with systemctl, reporting what was done.

run is a function from an argv list to (rc, stdout, stderr), as AnsibleModule.run_command. In check mode nothing is
run but the queries, and the actions that would be taken are returned. Shared by the modules that own units
(ipsec_config, bond_config, cooling_config, rdma_config), so that each asks systemd the same way.
"""

from __future__ import annotations


class UnitError(Exception):
    """A systemctl action failed; the message names the unit and says where to look."""


def _act(run, check_mode, verb, unit):
    if check_mode:
        return
    rc, out, err = run(["systemctl", verb, unit])
    if rc != 0:
        raise UnitError("systemctl %s %s failed: %s (journalctl -u %s)" % (verb, unit, (err or out).strip(), unit))


def _manager(run, verb, check_mode):
    if not check_mode:
        rc, out, err = run(["systemctl", verb])
        if rc != 0:
            raise UnitError("systemctl %s failed: %s" % (verb, (err or out).strip()))
    return [verb]


def daemon_reload(run, check_mode=False):
    """Make systemd read unit files again (one of them changed). Returns ["daemon-reload"]; raises UnitError."""
    return _manager(run, "daemon-reload", check_mode)


def daemon_reexec(run, check_mode=False):
    """Re-execute systemd, so that a changed system.conf drop-in (a limit for every service) applies. Returns
    ["daemon-reexec"]; raises UnitError."""
    return _manager(run, "daemon-reexec", check_mode)


def is_enabled(run, unit):
    return run(["systemctl", "is-enabled", "--quiet", unit])[0] == 0


def is_active(run, unit):
    return run(["systemctl", "is-active", "--quiet", unit])[0] == 0


def ensure_running(run, unit, restart=False, check_mode=False, reload=False):
    """Enable the unit when it is not, and start it when it is not active, or restart it when restart is true (its
    files changed, or a oneshot must run again), or reload a running unit when reload is true (a file it re-reads
    on SIGHUP changed). Returns the actions, e.g. ["enabled x.service", "started x.service"]; raises UnitError when
    one fails."""
    actions = []
    if not is_enabled(run, unit):
        _act(run, check_mode, "enable", unit)
        actions.append("enabled %s" % unit)
    if restart:
        _act(run, check_mode, "restart", unit)
        actions.append("restarted %s" % unit)
    elif not is_active(run, unit):
        _act(run, check_mode, "start", unit)
        actions.append("started %s" % unit)
    elif reload:
        _act(run, check_mode, "reload", unit)
        actions.append("reloaded %s" % unit)
    return actions


def ensure_stopped(run, unit, check_mode=False):
    """Stop and disable the unit when it is active or enabled. Returns the actions; raises UnitError on failure."""
    actions = []
    if is_active(run, unit):
        _act(run, check_mode, "stop", unit)
        actions.append("stopped %s" % unit)
    if is_enabled(run, unit):
        _act(run, check_mode, "disable", unit)
        actions.append("disabled %s" % unit)
    return actions
