# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a bonding transaction needs on the host before it starts: the activation and rollback helper that its units
run (gpufabric-bonding-activate, installed when missing or different) and the backend's service, enabled and
running before the new configuration is activated.

bond_config runs both under the host lock, after the configuration passed validation and before it arms the
rollback: a refused or invalid run touches neither. The helper's content comes from the role
(roles/bonding/files/gpufabric-bonding-activate) and is written as it is.
"""

from __future__ import annotations

import os

from ansible_collections.gpufabric.core.plugins.module_utils import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils import systemd_units as su

HELPER_MODE = 0o755
DIRECTORY_MODE = 0o755
ROOT = (0, 0)


def plan_helper(path, content, owner=ROOT):
    """The change that brings the helper at path to content, mode 0755 and owner (uid, gid); None when it is so.

    A change is a file_transaction change (path, action, before, after, mode, before_mode); action is create,
    replace, mode or owner. Raises ValueError when path exists and is not a regular file.
    """
    current = ft.read_current(path)
    changes = ft.plan([{"path": path, "content": content, "mode": HELPER_MODE}], {path: current})
    if changes:
        return changes[0]
    info = os.stat(path)
    if (info.st_uid, info.st_gid) == tuple(owner):
        return None
    return {"path": path, "action": "owner", "before": current[0], "after": content, "mode": HELPER_MODE,
            "before_mode": current[1], "secret": False, "before_owner": (info.st_uid, info.st_gid)}


def helper_diff(change, owner=ROOT):
    """The Ansible diff entry of a helper change."""
    if change["action"] != "owner":
        return ft.diff_entries([change])[0]
    return {"before_header": change["path"], "after_header": change["path"],
            "before": "owner %d:%d\n" % change["before_owner"], "after": "owner %d:%d\n" % tuple(owner)}


def install_helper(change, owner=ROOT):
    """Write the helper atomically with its mode and owner, creating its missing directories (0755, owner)."""
    ft.make_directory(os.path.dirname(change["path"]), DIRECTORY_MODE, owner=tuple(owner),
                      parents_mode=DIRECTORY_MODE)
    ft.write_atomically(change["path"], change["after"].encode("utf-8", errors="surrogateescape"), HELPER_MODE,
                        owner=tuple(owner))


def service_actions(run, service, activate, check_mode=False):
    """Enable and start the backend's service when the change is to be activated and the backend has one (service
    empty: netplan hands over to its renderer). Only asks systemctl when nothing needs doing; in check mode returns
    what it would do. Raises systemd_units.UnitError when systemctl refuses."""
    if not activate or not service:
        return []
    return su.ensure_running(run, service, check_mode=check_mode)
