# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bonding role's variables as a whole, checked on the controller: one list of problems.

The role's preflight and playbooks/check_inventory.yml both call this (filter gpufabric.core.bonding_problems), so
an inventory check applies every rule the role applies: the bonds, VLANs and interfaces (bonding_validate and
bonding_addressing) and the rollback window. Needs netaddr (the addressing checks): controller side only.
"""

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.bonding.addressing import addressing_problems
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.validate import (
    MIIMON_MAX, MIIMON_MIN, MTU_MAX, MTU_MIN, BondingConfigError, _as_int, _check_int, normalize)
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import masked, path_problems, verify_mode

# The role-wide defaults every bond takes where it does not set the key (<prefix>_mode, ...).
BOND_DEFAULT_KEYS = ("mode", "miimon", "lacp_rate", "xmit_hash_policy", "ad_select", "min_links", "mtu")
# Spare seconds between the end of the controller's confirmation window and the rollback, for the bond
# verification's last read and the confirm command.
ROLLBACK_MARGIN = 20
_TIMING_KEYS = ("rollback_timeout", "settle_seconds", "confirm_timeout", "verify_timeout")


def bond_defaults(settings, prefix="bonding"):
    """The role-wide bond defaults (<prefix>_mode, ...) as bond_validate and bond_config take them."""
    return {key: settings[prefix + "_" + key] for key in BOND_DEFAULT_KEYS if prefix + "_" + key in settings}


def default_problems(settings, prefix="bonding"):
    """The role-wide numbers, checked even where no bond reads them yet: a bond added later (or one without its own
    mtu) would take them, and an inventory check must not wait for that."""
    problems = []
    for key, low, high in (("mtu", MTU_MIN, MTU_MAX), ("miimon", MIIMON_MIN, MIIMON_MAX)):
        name = "%s_%s" % (prefix, key)
        if settings.get(name) is not None:
            _check_int(problems, name, settings[name], low, high)
    return problems


def rollback_problems(settings, prefix="bonding"):
    """The rollback must not fire before the controller can have confirmed a good change.

    The controller's worst case before it confirms: the settle delay, then two waits of <prefix>_confirm_timeout
    (for the host on a new connection, then for the activation's exit status), then, when bonds are verified, the
    bond verification, then the confirm command (the margin). Checked only when <prefix>_rollback_timeout is
    given; the other timings must then be given too.
    """
    if prefix + "_rollback_timeout" not in settings:
        return []
    problems = []
    values = {}
    for key in _TIMING_KEYS:
        name = prefix + "_" + key
        value = _as_int(settings.get(name))
        if value is None or value < 0:
            problems.append("%s: must be a whole number of seconds, 0 or more; got %r" % (name, settings.get(name)))
        values[key] = value
    if problems:
        return problems
    try:
        verifies = verify_mode(settings.get(prefix + "_verify", "after_change"), prefix + "_verify") != "never"
    except ValueError as error:
        return [str(error)]
    verifies = verifies and len(settings.get(prefix + "_bonds") or []) > 0
    worst_case = (values["settle_seconds"] + 2 * values["confirm_timeout"]
                  + (values["verify_timeout"] if verifies else 0) + ROLLBACK_MARGIN)
    if values["rollback_timeout"] >= worst_case:
        return []
    return [
        "{p}_rollback_timeout ({t} s) must be at least {p}_settle_seconds ({s}) + 2 x {p}_confirm_timeout ({c}; the "
        "controller waits that long for the host, then again for the activation) {v}+ {m} s = {w} s, or the host "
        "could revert a good change before the controller confirms it.".format(
            p=prefix, t=values["rollback_timeout"], s=values["settle_seconds"], c=values["confirm_timeout"],
            v=("+ %s_verify_timeout (%d) " % (prefix, values["verify_timeout"])) if verifies else "",
            m=ROLLBACK_MARGIN, w=worst_case)]


def bonding_problems(settings, prefix="bonding"):
    """Every problem of the role's variables (settings: <prefix>_* by name), each naming the variable's path.

    An empty list means the variables are usable. Types and choices of single values are argument_specs' job;
    this checks what they cannot: the bonds, VLANs and interfaces as a whole and the rollback window.
    """
    problems = []
    try:
        config = normalize(settings.get(prefix + "_bonds") or [], settings.get(prefix + "_vlans") or [],
                           settings.get(prefix + "_ethernets") or [], bond_defaults(settings, prefix), prefix=prefix)
    except BondingConfigError as exc:
        problems.extend(exc.problems)
    else:
        problems.extend(addressing_problems(config, prefix=prefix))
    problems.extend(rollback_problems(settings, prefix))
    if prefix + "_state_dir" in settings:
        # It reaches the rollback units' ExecStart and RequiresMountsFor lines, run as root.
        problems.extend(path_problems(prefix + "_state_dir", settings[prefix + "_state_dir"], what="directory"))
    problems.extend(problem for problem in default_problems(settings, prefix) if problem not in problems)
    return masked(problems, settings)
