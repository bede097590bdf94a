# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a bonding transaction needs on the host before it starts: the activation and rollback helper that its units
run (gpufabric-bonding-activate, installed when missing or different) and the backend's service, enabled and
running before the new configuration is activated.

bond_config runs both under the host lock, after the configuration passed validation and before it arms the
rollback: a refused or invalid run touches neither. The helper is a host program in host_program's layout: the
collection's module_utils it imports (bonding/activate.py and its import closure, which the role passes as they
are) under the helper's library directory, and the command that runs bonding.activate.main.
"""

from __future__ import annotations

import os

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import host_program as hp
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su

LIB_DIR = "/usr/local/lib/gpufabric-bonding"
DIRECTORY_MODE = hp.DIRECTORY_MODE
ROOT = (0, 0)


def launcher_text(lib_dir):
    """The gpufabric-bonding-activate command: puts the library directory on sys.path and runs bonding_activate."""
    return hp.launcher_text(lib_dir, hp.DOTTED + ".bonding.activate", [
        "Managed by gpufabric.core.bonding (Ansible).",
        "gpufabric-bonding-activate apply|rollback|boot-rollback|confirm|revert-now TRANSACTION_DIR"])


def package_problems(package):
    """The package's names are relative .py paths in the collection's module_utils (host_program's layout)."""
    return hp.name_problems(package, "helper_package")


def helper_entries(helper, lib_dir, package, owner=ROOT):
    """file_transaction entries of the helper: the module_utils it imports (package maps their paths to their text),
    and the command last, so that the command never runs a half-installed package. Every file is owner's."""
    entries = hp.entries(lib_dir, package, owner=owner)
    entries.append({"path": helper, "content": launcher_text(lib_dir), "mode": 0o755, "owner": owner})
    return entries


def plan_helper(helper, lib_dir, package, owner=ROOT):
    """The file_transaction changes that install the helper (create, replace, mode or owner); empty when it is as
    wanted. Raises ValueError when a path exists and is not a regular file."""
    entries = helper_entries(helper, lib_dir, package, owner)
    return ft.plan(entries, ft.read_all(entries))


def install_helper(changes, helper, lib_dir):
    """Install the helper's changes as one transaction, creating its missing directories (0755): the library
    directory and those of the changed files, parents first."""
    directories = sorted({lib_dir, os.path.dirname(helper)} | {os.path.dirname(change["path"]) for change in changes})
    ft.apply(changes, make_directories=[(directory, DIRECTORY_MODE) for directory in directories])


def service_actions(run, service, activate, check_mode=False):
    """Enable and start the backend's service when the change is to be activated and the backend has one (service
    empty: netplan hands over to its renderer). Only asks systemctl when nothing needs doing; in check mode returns
    what it would do. Raises systemd_units.UnitError when systemctl refuses."""
    if not activate or not service:
        return []
    return su.ensure_running(run, service, check_mode=check_mode)
