# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a bonding transaction needs on the host before it starts: the activation and rollback helper that its units
run (gpufabric-bonding-activate, installed when missing or different) and the backend's service, enabled and
running before the new configuration is activated.

bond_config runs both under the host lock, after the configuration passed validation and before it arms the
rollback: a refused or invalid run touches neither. The helper is a host program: the package gpufabric_bonding in
the helper's library directory (the collection's bonding_activate.py, bonding_transaction.py, file_transaction.py
and systemd_units.py, which the role passes as they are) and the command that runs it.
"""

from __future__ import annotations

import os

from ansible_collections.gpufabric.core.plugins.module_utils import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils import systemd_units as su

PACKAGE = "gpufabric_bonding"
LIB_DIR = "/usr/local/lib/gpufabric-bonding"
DIRECTORY_MODE = 0o755
ROOT = (0, 0)
PACKAGE_INIT = ('"""gpufabric-bonding-activate: the bonding role\'s activation and rollback (see bonding_activate.py).\n\n'
                "Every other file of this package is a copy of the gpufabric.core collection's module_utils, installed by "
                'gpufabric.core.bond_config."""\n')


def launcher_text(lib_dir):
    """The gpufabric-bonding-activate command: puts the library directory on sys.path and runs the package."""
    return ("#!/usr/bin/python3\n"
            "# Managed by gpufabric.core.bonding (Ansible).\n"
            "# gpufabric-bonding-activate apply|rollback|boot-rollback|confirm|revert-now TRANSACTION_DIR\n"
            "import sys\n\n"
            "sys.path.insert(0, %r)\n\n"
            "from gpufabric_bonding.bonding_activate import main  # noqa: E402\n\n"
            "sys.exit(main())\n") % lib_dir


def package_problems(package):
    """The package's file names must be plain .py names (they are joined to its directory), __init__.py aside."""
    return ["helper_package: %r is not a plain .py file name" % name for name in sorted(package)
            if os.path.basename(name) != name or not name.endswith(".py") or name.startswith(".")
            or name == "__init__.py"]


def helper_entries(helper, lib_dir, package, owner=ROOT):
    """file_transaction entries of the helper: its package (package maps file names to their text), and the
    command last, so that the command never runs a half-installed package. Every file is owner's."""
    package_dir = os.path.join(lib_dir, PACKAGE)
    files = dict(package, **{"__init__.py": PACKAGE_INIT})
    entries = [{"path": os.path.join(package_dir, name), "content": files[name], "mode": 0o644, "owner": owner}
               for name in sorted(files)]
    entries.append({"path": helper, "content": launcher_text(lib_dir), "mode": 0o755, "owner": owner})
    return entries


def plan_helper(helper, lib_dir, package, owner=ROOT):
    """The file_transaction changes that install the helper (create, replace, mode or owner); empty when it is as
    wanted. Raises ValueError when a path exists and is not a regular file."""
    entries = helper_entries(helper, lib_dir, package, owner)
    return ft.plan(entries, ft.read_all(entries))


def install_helper(changes, helper, lib_dir):
    """Install the helper's changes as one transaction, creating its missing directories (0755)."""
    ft.apply(changes, make_directories=[(os.path.join(lib_dir, PACKAGE), DIRECTORY_MODE),
                                        (os.path.dirname(helper), DIRECTORY_MODE)])


def service_actions(run, service, activate, check_mode=False):
    """Enable and start the backend's service when the change is to be activated and the backend has one (service
    empty: netplan hands over to its renderer). Only asks systemctl when nothing needs doing; in check mode returns
    what it would do. Raises systemd_units.UnitError when systemctl refuses."""
    if not activate or not service:
        return []
    return su.ensure_running(run, service, check_mode=check_mode)
