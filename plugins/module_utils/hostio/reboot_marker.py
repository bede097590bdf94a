# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reboot marker of every gpufabric.core role: one location, one format.

/run/gpufabric/<role>-reboot-required holds one reason per line. /run is a tmpfs cleared at boot, so the marker
says "not rebooted since the change" by itself: a reboot by anyone (the role, an operator, a crash) clears it.
Standard library only.
"""

from __future__ import annotations

import os
import re

MARKER_DIR = "/run/gpufabric"
_ROLE = re.compile(r"[a-z][a-z0-9_]*")


def marker_path(role, directory=MARKER_DIR):
    if not _ROLE.fullmatch(role):
        raise ValueError("%r is not a role name" % role)
    return os.path.join(directory, "%s-reboot-required" % role)


def merge_reasons(existing_text, new_reasons):
    """Reasons already recorded, then the new ones; one line each, blank lines and repeats dropped."""
    reasons = []
    for reason in list((existing_text or "").splitlines()) + list(new_reasons):
        reason = " ".join(str(reason).split())
        if reason and reason not in reasons:
            reasons.append(reason)
    return reasons


def marker_text(reasons):
    return "".join("%s\n" % reason for reason in reasons)


def read_marker(role, directory=MARKER_DIR):
    """The marker's text, or None when the host has no marker for this role (rebooted since, or never needed)."""
    try:
        with open(marker_path(role, directory)) as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def exported_facts(role, reasons):
    """The facts a role exports about its pending reboot: <role>_reboot_reasons and <role>_reboot_required."""
    reasons = list(reasons)
    return {"%s_reboot_reasons" % role: reasons, "%s_reboot_required" % role: bool(reasons)}


def why_no_reboot(host_reasons, role, reboot_ok, reboot_possible):
    """The message said when reasons are pending and the role will not reboot, or None when it will (or need not)."""
    if not host_reasons or (reboot_ok and reboot_possible):
        return None
    how = ("it is a container: reboot its host instead" if not reboot_possible
           else "set %s_reboot_ok=true (with serial: on the play to reboot in batches) to let the role reboot it" % role)
    return "this host needs a reboot for: %s. %s." % ("; ".join(host_reasons), how[0].upper() + how[1:])
