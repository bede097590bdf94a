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
