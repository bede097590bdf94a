# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-bonding-activate: activate, undo or confirm one network configuration change written by
gpufabric.core.bond_config, never inside the SSH session the change may cut.

    apply TX          gpufabric-bonding-apply.service (transient): activate the new files (after a short delay)
    rollback TX       gpufabric-bonding-rollback.service, started by its timer or by revert-now: restore the
                      previous files and activate them, unless the change was confirmed or already rolled back
    boot-rollback TX  gpufabric-bonding-rollback-boot.service, early at boot, before any network service: the host
                      restarted before the change was confirmed, so restore the previous files before they are read
    confirm TX        run by the controller after it reconnected and verified: disarm the rollback
    revert-now TX     run by the controller when verification failed: start the rollback service at once

TX is the transaction directory bond_config wrote (backend, config_dir, manifest, files/, *.delete, *.up). Every
command takes the host-wide lock STATE_DIR/lock (STATE_DIR is TX's parent), the one bond_config holds while it arms
and writes: one transaction at a time, and a confirmation and a rollback never both happen.

A host program: the bonding role installs this file, bonding_transaction.py, file_transaction.py and
systemd_units.py unchanged in host_program's layout, and a command that runs main(). So the transaction's
files are read by the same code that wrote them, files are restored through file_transaction (fsync, atomic rename)
and systemd is asked through systemd_units. Standard library and relative imports only.

The rollback is the fail-safe path: every step of it is tried whatever the steps before it did (each file restored
on its own, then the activation, then the disarming), and what failed is logged and gives exit status 1.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

from ansible_collections.gpufabric.core.plugins.module_utils.bonding import transaction as bt
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su

COMMANDS = ("apply", "rollback", "boot-rollback", "confirm", "revert-now")
USAGE = "usage: gpufabric-bonding-activate %s TRANSACTION_DIR" % "|".join(COMMANDS)
NETWORKD = "systemd-networkd.service"
# Seconds the apply command waits before it activates: the module's reply must reach the controller before the
# connection can change (GPUFABRIC_APPLY_DELAY overrides it).
APPLY_DELAY_S = 2.0


def run_command(argv):
    """argv to (rc, stdout, stderr), as AnsibleModule.run_command; a program that cannot be run is rc 127."""
    try:
        # This helper runs as a program of its own, after the module returned: no AnsibleModule to ask.
        done = subprocess.run(  # pylint: disable=ansible-bad-function
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False)
    except OSError as error:
        return 127, "", "%s: %s" % (argv[0], error.strerror)
    return done.returncode, done.stdout, done.stderr


class Transaction:
    """One transaction directory, its log and the host's lock; run executes a command (argv to rc, out, err)."""

    def __init__(self, directory, run=run_command, log_name=None, clock=time.time):
        self.directory = directory.rstrip("/") or "/"
        self.state_dir = os.path.dirname(self.directory)
        self.hosts = bt.HostTransactions(self.state_dir)
        self.run = run
        self.log_name = log_name
        self.clock = clock
        self.backend = self.read("backend").strip()

    def path(self, name):
        return os.path.join(self.directory, name)

    def exists(self, name):
        return os.path.lexists(self.path(name))

    def read(self, name):
        with open(self.path(name), encoding="utf-8", errors="surrogateescape") as handle:
            return handle.read()

    def plan(self, name):
        """The non-empty lines of a plan file of the transaction (none when it does not exist)."""
        if not self.exists(name):
            return []
        return [line.strip() for line in self.read(name).splitlines() if line.strip()]

    def mark(self, name, text=""):
        """A marker file of the transaction (apply.rc, confirmed ...), written whole."""
        ft.write_atomically(self.path(name), text.encode("utf-8"), 0o600)

    def log(self, message):
        """A line in the command's log (apply.log or rollback.log); a log that cannot be written never stops a
        rollback: the line goes to stderr (the journal) instead."""
        line = "%s %s\n" % (bt.iso(self.clock()), message)
        if self.log_name:
            try:
                ft.append(self.path(self.log_name), line)
                return
            except OSError as error:
                sys.stderr.write("cannot write %s: %s\n" % (self.path(self.log_name), error))
        sys.stderr.write(line)

    def command(self, argv):
        """Run argv, log what it printed; True when it succeeded."""
        rc, out, err = self.run(argv)
        for line in (out + err).splitlines():
            if line.strip():
                self.log("%s: %s" % (os.path.basename(argv[0]), line.rstrip()))
        if rc != 0:
            self.log("%s exited with status %d" % (" ".join(argv), rc))
        return rc == 0

    def lock(self, timeout):
        """Take the host-wide lock within timeout seconds; False when another holder kept it (or it cannot be
        taken at all: the caller decides whether to go on without it)."""
        try:
            self.hosts.acquire(timeout=timeout)
        except (bt.TransactionBusy, OSError):
            return False
        return True

    def attempt(self, what, step, *args):
        """One step of a fail-safe path: an exception is logged as that step's failure (False), never the end of
        the path."""
        try:
            return step(*args)
        except Exception as error:  # pylint: disable=broad-except
            self.log("%s failed: %s: %s" % (what, type(error).__name__, error))
            return False

    # ------------------------------------------------------------------ the steps

    def activate(self, phase):
        """Make the backend read the files on disk: phase apply (the new files) or revert (the restored ones)."""
        if self.backend == "networkd":
            # networkd never changes or removes an existing netdev on reload: delete those whose file changed.
            for device in self.plan(phase + ".delete"):
                if self.run(["ip", "link", "show", "dev", device])[0] == 0:
                    self.log("deleting %s so that it is created again from its (new or previous) .netdev" % device)
                    if not self.command(["networkctl", "delete", device]):
                        return False
            if not su.is_active(self.run, NETWORKD):
                try:
                    su.start(self.run, NETWORKD)
                except su.UnitError as error:
                    self.log(str(error))
                    return False
            # Reload also reconfigures every link whose .network file was added, changed or removed.
            return self.command(["networkctl", "reload"])
        if self.backend == "netplan":
            return self.command(["netplan", "apply"])
        if self.backend == "networkmanager":
            if not self.command(["nmcli", "connection", "reload"]):
                return False
            for profile in self.plan(phase + ".up"):
                self.log("activating %s" % profile)
                if not self.command(["nmcli", "connection", "up", "id", profile]):
                    return False
            return True
        self.log("unknown backend %s" % self.backend)
        return False

    def restore_files(self):
        """Put every file of the manifest back as it was before the change, each on its own (a file that cannot be
        restored does not keep the others from it). True when every one was."""
        ok = True
        for action, path, backup in bt.parse_manifest(self.read(bt.MANIFEST)):
            try:
                if action == "create":
                    ft.remove(path)
                else:
                    source = os.path.join(self.directory, "files", backup)
                    info = os.stat(source)
                    with open(source, "rb") as handle:
                        data = handle.read()
                    ft.write_atomically(path, data, stat.S_IMODE(info.st_mode), owner=(info.st_uid, info.st_gid))
            except (OSError, TypeError) as error:
                self.log("could not restore %s (%s not undone): %s" % (path, action, error))
                ok = False
                continue
            self.log("restored %s (%s undone)" % (path, action))
        return ok

    def disarm(self, reload=True):
        """Remove the rollback units and the pending marker of this transaction (not at boot: reload false)."""
        for problem in bt.remove_units(self.run, reload=reload):
            self.log(problem)
        try:
            self.hosts.clear_pending(self.directory)
        except OSError as error:
            self.log("could not remove %s: %s" % (self.hosts.path(bt.PENDING), error))

    def finished(self, reload=True):
        """Under the lock: True when there is nothing (more) to roll back, after making sure nothing stays armed."""
        if self.exists("confirmed"):
            self.log("the change was confirmed; nothing to roll back")
        elif self.exists("rollback.rc"):
            self.log("already rolled back (exit status %s); not restoring again" % self.read("rollback.rc").strip())
        else:
            return False
        self.disarm(reload)
        return True

    # ------------------------------------------------------------------ the commands

    def execute(self, command, delay=APPLY_DELAY_S):
        """Run one of COMMANDS and return its exit status; the host lock is released whatever happened."""
        try:
            if command == "apply":
                return self.apply(delay)
            if command == "rollback":
                return self.rollback()
            if command == "boot-rollback":
                return self.boot_rollback()
            if command == "confirm":
                return self.confirm()
            return self.revert_now()
        finally:
            self.hosts.release()

    def apply(self, delay=APPLY_DELAY_S, sleep=time.sleep):
        self.log_name = "apply.log"
        sleep(delay)
        if not self.lock(600):
            self.log("could not take the lock")
            return self._exit("apply.rc", 4)
        if self.exists("rollback.started"):
            self.log("the rollback already started; not activating")
            return self._exit("apply.rc", 3)
        self.log("activating the new configuration (%s)" % self.backend)
        rc = 0 if self.activate("apply") else 1
        self.log("activation finished with exit status %d" % rc)
        return self._exit("apply.rc", rc)

    def rollback(self):
        self.log_name = "rollback.log"
        # A confirmation in progress holds the lock for a moment; an activation that still runs is stopped.
        if not self.lock(5):
            try:
                su.stop(self.run, bt.APPLY_UNIT + ".service")
            except su.UnitError:
                pass  # no activation running
            if not self.lock(30):
                self.log("could not take the lock; rolling back anyway")
        if self.finished():
            return 0
        self.attempt("marking the rollback as started", self.mark, "rollback.started")
        if self.exists("revert.requested"):
            self.log("rolling back (%s), requested by the controller" % self.backend)
        else:
            self.log("rolling back (%s), the change was not confirmed in time" % self.backend)
        rc = 0 if self.attempt("restoring the files", self.restore_files) else 1
        if not self.attempt("activating the previous files", self.activate, "revert"):
            rc = 1
        self._exit("rollback.rc", rc)
        self.log("rollback finished with exit status %d" % rc)
        self.attempt("disarming", self.disarm)
        return rc

    def boot_rollback(self):
        self.log_name = "rollback.log"
        if not self.lock(30):
            self.log("could not take the lock; rolling back anyway")
        if self.finished(reload=False):
            return 0
        self.attempt("marking the rollback as started", self.mark, "rollback.started")
        self.log("rolling back at boot (%s): the host restarted before the change was confirmed" % self.backend)
        rc = 0 if self.attempt("restoring the files", self.restore_files) else 1
        # The network services start after this unit and read the restored files; netplan's generator already ran
        # from the new ones, so generate again.
        if self.backend == "netplan" and not self.attempt("netplan generate", self.command, ["netplan", "generate"]):
            rc = 1
        self._exit("rollback.rc", rc)
        self.log("rollback at boot finished with exit status %d" % rc)
        self.attempt("disarming", self.disarm, False)
        return rc

    def confirm(self):
        self.log_name = "apply.log"
        if not self.lock(60):
            sys.stderr.write("could not take the lock %s within 60 s\n" % self.hosts.path(bt.LOCK))
            return 4
        if self.exists("rollback.started"):
            sys.stderr.write("too late: the rollback of this change already started (see %s)\n"
                             % self.path("rollback.log"))
            return 3
        self.mark("confirmed")
        self.disarm()
        self.log("confirmed")
        sys.stdout.write("confirmed; %s.timer disarmed\n" % bt.ROLLBACK_UNIT)
        return 0

    def revert_now(self):
        self.log_name = "rollback.log"
        if not self.lock(60):
            self.log("revert-now: could not take the lock")
            return 4
        if self.exists("rollback.rc") or self.exists("confirmed"):
            self.log("revert-now: nothing to start, the change was already rolled back or confirmed")
            sys.stdout.write("already rolled back or confirmed\n")
            self.disarm()
            return 0
        self.mark("revert.requested")
        self.hosts.release()
        # The same unit as the timer's: systemd never runs it twice at once, and it rolls back once. The timer stays
        # armed until the rollback disarms it, in case this start fails.
        try:
            su.start(self.run, bt.ROLLBACK_UNIT + ".service", no_block=True)
        except su.UnitError as error:
            self.log("revert-now: %s; the timer still rolls back at its deadline" % error)
            sys.stderr.write("%s\n" % error)
            return 1
        return 0

    def _exit(self, name, rc):
        """Record the command's exit status in the transaction (what the controller waits for) and return it."""
        try:
            self.mark(name, "%d\n" % rc)
        except OSError as error:
            self.log("could not write %s: %s" % (self.path(name), error))
        return rc


def main(argv=None, run=run_command):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2:
        sys.stderr.write(USAGE + "\n")
        return 2
    command, directory = argv
    if command not in COMMANDS:
        sys.stderr.write("unknown command %s (%s)\n" % (command, ", ".join(COMMANDS)))
        return 2
    if not os.path.isfile(os.path.join(directory, bt.MANIFEST)) or not os.path.isfile(os.path.join(directory, "backend")):
        sys.stderr.write("%s is not a complete transaction directory (no manifest)\n" % directory)
        return 2
    delay = float(os.environ.get("GPUFABRIC_APPLY_DELAY", APPLY_DELAY_S))
    return Transaction(directory, run=run).execute(command, delay=delay)
