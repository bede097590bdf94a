# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bring a systemd unit to the state a desired-state module wants, with systemctl, reporting what was done.

run is a function from an argv list to (rc, stdout, stderr), as AnsibleModule.run_command. In check mode nothing is
run but the queries, and the actions that would be taken are returned. The one way the collection asks systemd:
shared by the modules that own units (ipsec_config, bond_config, cooling_config, rdma_config, frr_config) and by
the host programs (the bonding role's gpufabric-bonding-activate installs this file unchanged beside its own code;
the cooling controller and gpufabric-health tell systemd how they are through sd_notify).
Standard library only, no imports from the collection.
"""

from __future__ import annotations

import os
import socket


def sd_notify(message, log=None):
    """Send a Type=notify service's state to systemd (READY=1, WATCHDOG=1, STATUS=...); nothing outside systemd (no
    NOTIFY_SOCKET). Returns why it could not be sent, else None, and logs it as a warning on log (a host program's
    logger): a watchdog ping never raises in the loop it keeps alive."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return None
    if address.startswith("@"):
        address = "\0" + address[1:]
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(message.encode(), address)
    except OSError as exc:
        problem = "cannot notify systemd: %s" % exc
        if log is not None:
            log.warning("%s", problem)
        return problem
    return None


class UnitError(Exception):
    """A systemctl action failed; the message names the unit and says where to look."""


def _act(run, check_mode, verb, unit):
    if not check_mode:
        _run_verb(run, [verb], unit)


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


def start(run, unit, no_block=False):
    """Start the unit (no_block: queue the start job and return at once, as the rollback's revert-now does).
    Raises UnitError."""
    _run_verb(run, ["start", "--no-block"] if no_block else ["start"], unit)


def run_transient(run, unit, argv, description):
    """Run argv as the transient service unit (systemd-run --no-block --collect): it outlives the caller and its
    connection, and its unit is gone once it ends. Raises UnitError naming the unit."""
    rc, out, err = run(["systemd-run", "--unit", unit, "--no-block", "--collect", "--description", description]
                       + list(argv))
    if rc != 0:
        raise UnitError("systemd-run --unit %s failed: %s" % (unit, (err or out).strip()))


def stop(run, unit):
    """Stop the unit. Raises UnitError (a unit systemd does not know is an error too: rc 5)."""
    _run_verb(run, ["stop"], unit)


def reset_failed(run, unit):
    """Forget a failed state of the unit, so that it can run again under its name; never an error (a unit that is
    not failed, or not loaded, has nothing to reset)."""
    run(["systemctl", "reset-failed", unit])


def unit_property(run, unit, name):
    """The value of one property of the unit (systemctl show -p NAME --value), or "" when systemctl cannot say."""
    rc, out, dummy = run(["systemctl", "show", "-p", name, "--value", unit])
    return out.strip() if rc == 0 else ""


def _run_verb(run, verb, unit):
    rc, out, err = run(["systemctl"] + verb + [unit])
    if rc != 0:
        raise UnitError("systemctl %s %s failed: %s (journalctl -u %s)"
                        % (" ".join(verb), unit, (err or out).strip(), unit))


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
