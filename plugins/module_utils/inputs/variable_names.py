# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Variables of an inventory that look like the collection's but that nothing reads: a misspelt name is ignored by
Ansible without a word (rmda_expected_rate_gbps leaves rdma_expected_rate_gbps at its default of 0, accepting any
link rate). The roles' own prefixes are checked by their argument specs (`rdma_driver_sourc` is an unknown option);
this finds what no argument spec sees: a misspelt prefix, and the collection's fleet-wide gpufabric_* variables.
"""

from __future__ import annotations

import difflib

# The inventory variables of the collection that no role's argument spec holds: the fabric's per-host facts and the
# playbooks' host patterns and rollout settings (docs/topology.md, README "Running it against a real fleet").
FLEET_VARIABLES = frozenset((
    "gpufabric_rail_interfaces", "gpufabric_peer_group", "gpufabric_locality", "gpufabric_snapshot_dir",
    "gpufabric_soft_roce", "gpufabric_serial", "gpufabric_max_fail_percentage", "gpufabric_check_hosts",
    "gpufabric_bonding_hosts", "gpufabric_cooling_hosts", "gpufabric_health_hosts", "gpufabric_ipsec_hosts",
    "gpufabric_monitoring_hosts", "gpufabric_nccl_hosts", "gpufabric_rdma_hosts", "gpufabric_routing_hosts",
    "gpufabric_soft_roce_hosts", "gpufabric_verify_hosts", "gpufabric_untested_platforms",
))
# How alike two names must be (difflib's ratio) to call one a misspelling of the other: one letter swapped, left out
# or added in a name of 15 or more characters; a name of the user's own is rarely that close to one of ours.
_CUTOFF = 0.9


def misspelt_variable_problems(names, argument_specs):
    """One sentence per name of `names` that no role or playbook reads but that is nearly one they read, naming that
    one. `argument_specs` maps each role to its parsed meta/argument_specs.yml. A name with a role's own prefix is
    left to that role's argument spec, which refuses every unknown option."""
    known = set(FLEET_VARIABLES)
    for specs in argument_specs.values():
        for entry_point in specs["argument_specs"].values():
            known.update(entry_point.get("options") or {})
    prefixes = tuple("%s_" % role for role in argument_specs) + ("ansible_", "__")
    problems = []
    for name in sorted(set(names) - known):
        if name.startswith(prefixes):
            continue
        match = difflib.get_close_matches(name, known, n=1, cutoff=_CUTOFF)
        if match:
            problems.append("%s: no role or playbook of gpufabric.core reads this variable; did you mean %s? (a "
                            "misspelt variable is ignored, and %s keeps its default)" % (name, match[0], match[0]))
    return problems
