# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a change of configuration files as one transaction that can be undone."""

from __future__ import annotations

import hashlib
import re

# Pure functions: given the files a backend owns now and the files it should own, say what to create, replace
# and remove, what the activation has to tear down first and what the undo has to restore. The bond_config module
# does the I/O; the host program gpufabric-bonding-activate (bonding_activate.py) reads the plan files.
_NAME_LINE = re.compile(r"^\s*Name\s*=\s*(\S+)\s*$", re.MULTILINE)
_NETDEV_SECTION = re.compile(r"^\s*\[NetDev\]", re.MULTILINE)


def sha1(text):
    return hashlib.sha1(text.encode("utf-8")).hexdigest() if text is not None else None


def plan_changes(current, desired):
    """current, desired: {file name: content} of the files the backend owns. Returns a list of changes.

    Each change is {"action": create|replace|remove, "name": file name, "before": text or None,
    "after": text or None}; unchanged files are left out. The order is stable (sorted by name).
    """
    changes = []
    for name in sorted(set(current) | set(desired)):
        before, after = current.get(name), desired.get(name)
        if before == after:
            continue
        action = "create" if before is None else ("remove" if after is None else "replace")
        changes.append({"action": action, "name": name, "before": before, "after": after})
    return changes


def _netdev_name(text):
    if text is None or not _NETDEV_SECTION.search(text):
        return None
    # The [NetDev] section's Name= is the first Name= in a .netdev file.
    match = _NAME_LINE.search(text)
    return match.group(1) if match else None


def networkd_netdevs_to_delete(changes):
    """Virtual devices to delete before `networkctl reload`, for the change and for its undo.

    networkd creates netdevs from new .netdev files on reload but never changes or removes an existing one,
    so a netdev whose file is replaced or removed has to be deleted first to take its new (or no) settings.
    """
    apply, revert = [], []
    for change in changes:
        if not change["name"].endswith(".netdev"):
            continue
        before, after = _netdev_name(change["before"]), _netdev_name(change["after"])
        if change["action"] in ("replace", "remove") and before:
            apply.append(before)
        if change["action"] in ("create", "replace") and after:
            revert.append(after)
    return sorted(set(apply)), sorted(set(revert))


_NM_ORDER = {"ethernet": 0, "bond": 1, "vlan": 3}
_NM_TYPE = re.compile(r"^\s*type\s*=\s*(\S+)\s*$", re.MULTILINE)
_NM_ID = re.compile(r"^\s*id\s*=\s*(.+?)\s*$", re.MULTILINE)
_NM_PORT = re.compile(r"^\s*slave-type\s*=|^\s*port-type\s*=", re.MULTILINE)


def _nm_rank(text):
    kind = (_NM_TYPE.search(text) or [None, "ethernet"])[1]
    if _NM_PORT.search(text):
        return 2  # ports after their bond
    return _NM_ORDER.get(kind, 0)


def networkmanager_profiles_to_activate(changes):
    """Profile ids to `nmcli connection up` after the change and after its undo, parents before children."""
    apply, revert = [], []
    for change in changes:
        if change["after"] is not None:
            apply.append((_nm_rank(change["after"]), (_NM_ID.search(change["after"]) or [None, None])[1]))
        if change["before"] is not None:
            revert.append((_nm_rank(change["before"]), (_NM_ID.search(change["before"]) or [None, None])[1]))
    return ([pid for dummy, pid in sorted(apply) if pid], [pid for dummy, pid in sorted(revert) if pid])


def diff_entries(changes, directory):
    """Ansible diff entries (before/after with headers), one per changed file."""
    entries = []
    for change in changes:
        path = "%s/%s" % (directory.rstrip("/"), change["name"])
        entries.append({
            "before_header": path if change["before"] is not None else "%s (absent)" % path,
            "after_header": path if change["after"] is not None else "%s (removed)" % path,
            "before": change["before"] or "",
            "after": change["after"] or "",
        })
    return entries
