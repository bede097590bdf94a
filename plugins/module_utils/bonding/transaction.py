# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One bonding change at a time per host, and a rollback that survives a reboot.

Layout of the state directory (``bonding_state_dir``)::

    lock       flock(2): held by bond_config while it arms, backs up and writes, and by the helper
               gpufabric-bonding-activate while it activates, confirms or rolls back
    pending    present from arming until the change is confirmed or rolled back: which transaction, started
               when, by which run, changing what. A second transaction is refused while it names an armed one.
    <id>/      one directory per transaction (backup, manifest, logs), never renamed once armed
    current    symbolic link to the newest transaction, previous to the one before

The rollback is three persistent units in /etc/systemd/system, written before any configuration file and
removed by the helper on confirm or rollback: a timer, the service it starts, and a service that runs early at
boot (before any network service) so that a host restarted inside the window comes up on its previous files.

Used by bond_config and by the host program gpufabric-bonding-activate (bonding_activate.py), which installs this
file unchanged beside its own code: standard library and relative imports only. Files go through file_transaction,
systemd through systemd_units.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import time

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su

ROLLBACK_UNIT = "gpufabric-bonding-rollback"
BOOT_UNIT = "gpufabric-bonding-rollback-boot"
APPLY_UNIT = "gpufabric-bonding-apply"
UNIT_DIR = "/etc/systemd/system"
BOOT_WANTS = "sysinit.target.wants"

LOCK = "lock"
PENDING = "pending"
MANIFEST = "manifest"
CURRENT = "current"
PREVIOUS = "previous"
# Transactions kept on disk (backups and logs of the latest changes, for a manual rollback or a post-mortem).
KEEP = 10
PENDING_KEYS = ("id", "directory", "started", "deadline", "run", "client", "changes")

_ID = re.compile(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}")


class TransactionBusy(RuntimeError):
    """Another bonding transaction holds the host: armed and not yet confirmed or rolled back."""


def iso(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def transaction_id(epoch, token):
    """Sortable and unique: UTC time of the change and 8 hex digits of randomness."""
    return "%s-%s" % (time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(epoch)), token[:8])


def is_transaction_id(name):
    return bool(_ID.fullmatch(name))


def _one_line(value):
    # The record is line-based: a value can never start another key.
    return " ".join(str(value).split())


def pending_text(record):
    """The pending marker: one key=value line per key of PENDING_KEYS, in that order."""
    return "".join("%s=%s\n" % (key, _one_line(record.get(key, ""))) for key in PENDING_KEYS)


def parse_pending(text):
    record = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in PENDING_KEYS:
            record[key] = value
    return record


def describe(record):
    """The armed transaction in one sentence: which, when, by whom, what."""
    parts = ["transaction %s" % (record.get("id") or "(unnamed)")]
    if record.get("started"):
        parts.append("started %s" % record["started"])
    if record.get("run"):
        parts.append("by %s" % record["run"])
    if record.get("client"):
        parts.append("from %s" % record["client"])
    if record.get("deadline"):
        parts.append("rolls back at %s unless confirmed" % record["deadline"])
    text = ", ".join(parts)
    if record.get("changes"):
        text += "; it changes %s" % record["changes"]
    return text


def transaction_state(directory):
    """'armed', 'confirmed', 'rolled back' or 'missing', from the markers the helper writes."""
    if not directory or not os.path.isdir(directory):
        return "missing"
    if os.path.exists(os.path.join(directory, "confirmed")):
        return "confirmed"
    if os.path.exists(os.path.join(directory, "rollback.rc")):
        return "rolled back"
    return "armed"


def manifest_text(changes, directory):
    """One line per changed file: action, path, name of its backup in the transaction's files/ (or '-')."""
    lines = []
    for index, change in enumerate(changes):
        backup = "%03d-%s" % (index, change["name"]) if change["before"] is not None else "-"
        lines.append("%s\t%s/%s\t%s" % (change["action"], directory.rstrip("/"), change["name"], backup))
    return "\n".join(lines) + "\n"


def parse_manifest(text):
    """[(action, path, backup name or None)] from manifest_text's output; a line of another shape is skipped."""
    entries = []
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[0] in ("create", "replace", "remove"):
            entries.append((fields[0], fields[1], None if fields[2] == "-" else fields[2]))
    return entries


def rollback_units(helper, directory, timeout, tx_id):
    """{path: text} of the persistent rollback units of one transaction (the boot unit's wants link aside)."""
    header = "# Managed by gpufabric.core.bonding: removed when transaction %s is confirmed or rolled back.\n" % tx_id
    return {
        os.path.join(UNIT_DIR, ROLLBACK_UNIT + ".timer"): header + (
            "[Unit]\n"
            "Description=gpufabric.core.bonding: restore the previous network configuration unless confirmed\n"
            "\n[Timer]\n"
            "OnActiveSec=%ds\n"
            "AccuracySec=1s\n"
            "Unit=%s.service\n" % (timeout, ROLLBACK_UNIT)),
        os.path.join(UNIT_DIR, ROLLBACK_UNIT + ".service"): header + (
            "[Unit]\n"
            "Description=gpufabric.core.bonding: restore the previous network configuration unless confirmed\n"
            "\n[Service]\n"
            "Type=oneshot\n"
            "ExecStart=%s rollback %s\n" % (helper, directory)),
        # Early boot, ordered before every network service: they read the restored files. No default
        # dependencies: sysinit.target waits for it.
        os.path.join(UNIT_DIR, BOOT_UNIT + ".service"): header + (
            "[Unit]\n"
            "Description=gpufabric.core.bonding: restore the previous network configuration, the host restarted "
            "before the change was confirmed\n"
            "DefaultDependencies=no\n"
            "RequiresMountsFor=%s\n"
            "After=local-fs.target\n"
            "Before=sysinit.target network-pre.target systemd-networkd.service NetworkManager.service "
            "shutdown.target\n"
            "Wants=network-pre.target\n"
            "Conflicts=shutdown.target\n"
            "\n[Service]\n"
            "Type=oneshot\n"
            "ExecStart=%s boot-rollback %s\n"
            "\n[Install]\n"
            "WantedBy=sysinit.target\n" % (directory, helper, directory)),
    }


def boot_wants_link():
    return os.path.join(UNIT_DIR, BOOT_WANTS, BOOT_UNIT + ".service")


def install_units(helper, directory, timeout, tx_id):
    """Write the persistent rollback units of one transaction and the boot unit's wants link (not started)."""
    desired = [{"path": path, "content": text, "mode": 0o644}
               for path, text in sorted(rollback_units(helper, directory, timeout, tx_id).items())]
    ft.apply(ft.plan(desired, ft.read_all(desired)), make_directories=[(UNIT_DIR, 0o755)])
    ft.make_directory(os.path.dirname(boot_wants_link()), 0o755)
    ft.replace_symlink(boot_wants_link(), os.path.join(UNIT_DIR, BOOT_UNIT + ".service"))


def remove_units(run, reload=True):
    """Stop the rollback timer and remove the persistent units and the wants link; with reload, tell systemd (not
    at boot, where a reload would disturb the boot transaction and the units are not started anyway).

    The disarming half of every fail-safe path: each step is tried whatever the others did. Returns the problems
    (empty when everything went)."""
    problems = []
    try:
        su.stop(run, ROLLBACK_UNIT + ".timer")
    except su.UnitError:
        pass  # not loaded or not running: nothing to stop
    for path in sorted(rollback_units("-", "-", 0, "-")) + [boot_wants_link()]:
        try:
            ft.remove(path)
        except OSError as error:
            problems.append("could not remove %s: %s" % (path, error))
    if reload:
        try:
            su.daemon_reload(run)
        except su.UnitError as error:
            problems.append(str(error))
    return problems


class HostTransactions:
    """The state directory of one host: its lock, its pending marker and its transaction directories."""

    def __init__(self, state_dir):
        self.state_dir = state_dir
        self._lock_fd = None

    def path(self, *names):
        return os.path.join(self.state_dir, *names)

    def acquire(self, timeout=30.0, poll=0.2):
        """Take the host-wide lock, waiting at most timeout seconds. Raises TransactionBusy."""
        ft.make_directory(self.state_dir, 0o700)
        fd = os.open(self.path(LOCK), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._lock_fd = fd
                return
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    os.close(fd)
                    raise
            if time.monotonic() >= deadline:
                os.close(fd)
                message = "another bonding change holds the lock %s for more than %d s" % (self.path(LOCK), timeout)
                record = self.pending()
                if record:
                    message += ": " + describe(record)
                raise TransactionBusy(message)
            time.sleep(poll)

    def release(self):
        if self._lock_fd is not None:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def pending(self):
        try:
            with open(self.path(PENDING)) as handle:
                return parse_pending(handle.read())
        except FileNotFoundError:
            return {}

    def check_not_armed(self):
        """Under the lock: raise TransactionBusy naming the armed transaction, if there is one.

        Returns the record of a finished transaction whose marker was left behind (confirmed or rolled back but
        interrupted before it disarmed): the caller removes its units and the marker, then goes on.
        """
        record = self.pending()
        if not record:
            return None
        state = transaction_state(record.get("directory"))
        if state in ("confirmed", "rolled back"):
            return record
        if state == "missing":
            raise TransactionBusy(
                "%s names %s, whose directory %s is missing: the rollback of that change cannot run. Check the "
                "network configuration by hand, then remove %s and the %s units in %s"
                % (self.path(PENDING), describe(record), record.get("directory"), self.path(PENDING),
                   ROLLBACK_UNIT, UNIT_DIR))
        raise TransactionBusy(
            "another bonding change is armed on this host and not yet confirmed: %s. This run is refused and "
            "changed nothing; run again once that change is confirmed or rolled back (%s/rollback.log)"
            % (describe(record), record.get("directory")))

    def write_pending(self, record):
        ft.write_atomically(self.path(PENDING), pending_text(record).encode("utf-8"), 0o600)

    def clear_pending(self, directory):
        """Remove the pending marker when it names directory (the same directory by any path to it)."""
        record = self.pending()
        if record and os.path.realpath(record.get("directory") or "") == os.path.realpath(directory):
            ft.remove(self.path(PENDING))

    def new_transaction(self, tx_id):
        """Create the transaction's directory and point current (and previous) at it."""
        directory = self.path(tx_id)
        ft.make_directory(os.path.join(directory, "files"), 0o700, parents_mode=0o700)
        current = self.path(CURRENT)
        if os.path.islink(current):
            self._link(PREVIOUS, os.readlink(current))
        elif os.path.isdir(current):
            # A state directory of an older version of this module: keep that backup as a named transaction.
            legacy = "legacy-%s" % time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(os.stat(current).st_mtime))
            os.rename(current, self.path(legacy))
            self._link(PREVIOUS, legacy)
        self._link(CURRENT, tx_id)
        self.prune(keep=(tx_id,))
        return directory

    def _link(self, name, target):
        ft.replace_symlink(self.path(name), target)

    def prune(self, keep=()):
        """Remove the oldest transaction directories beyond KEEP, never the pending one or those linked."""
        protected = set(keep)
        for name in (CURRENT, PREVIOUS):
            if os.path.islink(self.path(name)):
                protected.add(os.readlink(self.path(name)))
        pending = self.pending().get("directory")
        if pending:
            protected.add(os.path.basename(pending))
        names = sorted(name for name in os.listdir(self.state_dir) if is_transaction_id(name))
        for name in names[:-KEEP] if len(names) > KEEP else []:
            if name not in protected:
                shutil.rmtree(self.path(name), ignore_errors=True)
