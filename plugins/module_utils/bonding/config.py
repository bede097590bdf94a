# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bonding configuration API in one import: validation, the three renderers, change planning and the runtime
check, each in a module of its own concern:

- bonding_validate: the rules and ``normalize`` (controller filter and host module alike);
- bonding_render_networkd, bonding_render_netplan, bonding_render_nm: one renderer per backend, with the reading of
  that backend's tool output; bonding_render_common: what they share;
- bonding_plan: files to create, replace and remove, what activation and undo must do, and the diff;
- bonding_transaction: the host's transactions (lock, pending marker, manifest, rollback units);
- bonding_runtime: a running bond against its definition.
"""

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.bonding.plan import (
    diff_entries, networkd_netdevs_to_delete, networkmanager_profiles_to_activate, plan_changes, sha1)
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.render_common import MANAGED_HEADER
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.render_netplan import render_netplan
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.render_networkd import networkd_file_problems, render_networkd
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.render_nm import (
    connection_uuid, keyfile_dropped_settings, keyfile_pairs, nm_profile_id, render_networkmanager)
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.runtime import runtime_problems
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.transaction import MANIFEST, manifest_text
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.validate import (
    AD_SELECTS, BACKENDS, DEFAULT_BOND_SETTINGS, LACP_RATES, MIIMON_MAX, MODE_OPTIONS, MODES, MTU_MAX, MTU_MIN,
    ROUTE_TABLE_MAX, RULE_PRIORITY_MAX, VLAN_ID_MAX, VLAN_ID_MIN, XMIT_HASH_POLICIES, BondingConfigError,
    interface_name_problem, is_mac, normalize)

__all__ = [
    "AD_SELECTS", "BACKENDS", "DEFAULT_BOND_SETTINGS", "LACP_RATES", "MANAGED_HEADER", "MANIFEST", "MIIMON_MAX",
    "MODE_OPTIONS", "MODES", "MTU_MAX", "MTU_MIN", "ROUTE_TABLE_MAX", "RULE_PRIORITY_MAX", "VLAN_ID_MAX",
    "VLAN_ID_MIN", "XMIT_HASH_POLICIES", "BondingConfigError", "connection_uuid", "diff_entries",
    "interface_name_problem", "interface_names", "is_mac", "keyfile_dropped_settings", "keyfile_pairs",
    "manifest_text", "networkd_file_problems", "networkd_netdevs_to_delete", "networkmanager_profiles_to_activate",
    "nm_profile_id", "normalize", "plan_changes", "render", "render_netplan", "render_networkd",
    "render_networkmanager", "runtime_problems", "sha1"]


def render(backend, config, **options):
    """Return {file name: content} for backend ('networkd', 'netplan' or 'networkmanager')."""
    if backend == "networkd":
        return render_networkd(config, **options)
    if backend == "netplan":
        return render_netplan(config, **options)
    if backend == "networkmanager":
        return render_networkmanager(config, **options)
    raise BondingConfigError(["bonding_backend: %r is not one of %s" % (backend, ", ".join(BACKENDS))])


def interface_names(config):
    """Names of the virtual devices (bonds, VLANs) and of every interface the configuration touches."""
    virtual = [b["name"] for b in config["bonds"]] + [v["name"] for v in config["vlans"]]
    members = [m["name"] for b in config["bonds"] for m in b["members"] if m["name"]]
    return {"virtual": virtual, "links": virtual + members + [e["name"] for e in config["ethernets"]]}
