# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is wrong with the nccl role's variables, checked on the controller before any host changes.

nccl_problems() takes the role's variables by name (nccl_*, and the inventory's gpufabric_peer_group the role groups
hosts by; other names are ignored) after argument_specs has checked their types and choices, and returns one sentence
per problem naming the variable. What needs the host's
topology (which RDMA ports to use, whether hosts of a group agree) is decided later by nccl_config() on the facts.
"""

from __future__ import annotations

import posixpath
import re

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import (
    ENV_VALUE_MAX,
    environment_problems,
    has_line_break,
    int_range_problem,
    masked,
    path_problems,
)
from ansible_collections.gpufabric.core.plugins.module_utils.nccl.config import INTERFACE_NAME, check_variables

# NCCL_ALGO: algorithm names, comma separated, optionally all excluded with a leading ^.
ALGORITHMS = re.compile(r"\^?[A-Za-z]+(,[A-Za-z]+)*")

# Where each file the role writes may go. NCCL reads /etc/nccl.conf by itself; a file under /etc/nccl/ only
# where NCCL_CONF_FILE names it. Login shells source /etc/profile.d/*.sh only.
CONF_EXACT = ("/etc/nccl.conf",)
CONF_UNDER = ("/etc/nccl",)
PROFILE_UNDER = ("/etc/profile.d",)
# Where KEY=VALUE files for Slurm prologs, EnvironmentFile=, docker --env-file and enroot live. Not anywhere under
# /etc: a file named nccl in /etc/sudoers.d (sudo reads every file there and stops working on a line it cannot
# parse), /etc/cron.d or /etc/pam.d would be read by a program that is not expecting NAME=value lines.
ENV_FILE_UNDER = ("/etc/default", "/etc/sysconfig", "/etc/environment.d", "/etc/enroot", "/etc/slurm", "/etc/nccl")
TOPOLOGY_XML_UNDER = ("/etc/nccl",)


def _socket_ifnames(value):
    # argument_specs accepts a comma-separated string for a list, as the example inventory writes it.
    if isinstance(value, str):
        return [name.strip() for name in value.split(",")] if value.strip() else []
    return value


def _tier_problems(tiers, problems):
    if not isinstance(tiers, list):
        problems.append("nccl_algorithm_tiers: must be a list of {max_nodes, algorithms}; got %r" % (tiers,))
        return
    previous = 0
    for index, tier in enumerate(tiers):
        name = "nccl_algorithm_tiers[%d]" % index
        if not isinstance(tier, dict):
            problems.append("%s: must be a dict with max_nodes and algorithms; got %r" % (name, tier))
            continue
        algorithms = tier.get("algorithms")
        if not isinstance(algorithms, str) or has_line_break(algorithms) or not ALGORITHMS.fullmatch(algorithms):
            problems.append("%s.algorithms: must be NCCL_ALGO names separated by commas (Ring, Tree, NVLS ...); got %r"
                            % (name, algorithms))
        max_nodes = tier.get("max_nodes")
        if max_nodes is None:
            if index != len(tiers) - 1:
                problems.append("%s.max_nodes: only the last tier may be unbounded (null); the tiers after it are "
                                "never used" % name)
            continue
        problem = int_range_problem(name + ".max_nodes", max_nodes, previous + 1,
                                    rule="must be an integer above the previous tier's (%d)" % previous)
        if problem:
            problems.append(problem)
        else:
            previous = int(max_nodes)


def nccl_problems(settings):
    """Every problem with the nccl role's variables (a dict of name: value), one sentence each."""
    if not isinstance(settings, dict):
        return ["the nccl settings must be a dict of nccl_* variables; got %s" % type(settings).__name__]
    problems = []
    variables = settings.get("nccl_variables", {})
    # Every value is exported from /etc/profile.d into each login shell's environment (and written to nccl.conf):
    # a value past the limits would make every command of that shell fail with "Argument list too long".
    problems.extend(environment_problems("nccl_variables", variables,
                                         "a login shell's environment (nccl_profile_script_path)"))
    if isinstance(variables, dict):
        # A value too long to export is named above; its characters are not listed again.
        variables = {name: value for name, value in variables.items()
                     if not isinstance(value, str) or len(value) <= ENV_VALUE_MAX}
    problems.extend(check_variables(variables, allow_debug=bool(settings.get("nccl_allow_debug_variables", False)),
                                    prefix="nccl_variables."))
    names = _socket_ifnames(settings.get("nccl_socket_ifname", []))
    if not isinstance(names, list):
        problems.append("nccl_socket_ifname: must be a list of interface names; got %r" % (names,))
    else:
        for index, name in enumerate(names):
            if not isinstance(name, str) or not INTERFACE_NAME.fullmatch(name):
                problems.append("nccl_socket_ifname[%d]: must be an interface name (up to 15 of A-Z a-z 0-9 _ . : @ -); "
                                "got %r" % (index, name))
    problems.extend(path_problems("nccl_conf_path", settings.get("nccl_conf_path", "/etc/nccl.conf"),
                                  under=CONF_UNDER, exact=CONF_EXACT, what="file path"))
    profile = settings.get("nccl_profile_script_path", "/etc/profile.d/nccl.sh")
    found = path_problems("nccl_profile_script_path", profile, under=PROFILE_UNDER, what="file path")
    if not found and not profile.endswith(".sh"):
        found.append("nccl_profile_script_path: must end in .sh, the only files login shells read from "
                     "/etc/profile.d; got %r" % profile)
    problems.extend(found)
    env_file = settings.get("nccl_env_file_path", "")
    found = path_problems("nccl_env_file_path", env_file, under=ENV_FILE_UNDER, allow_empty=True, what="file path")
    if not found and env_file and "nccl" not in posixpath.basename(env_file).lower():
        # The role replaces the whole file: a name of its own keeps it off /etc/environment and its neighbours.
        found.append("nccl_env_file_path: the file name must contain 'nccl' (for example /etc/default/nccl), so that "
                     "the role never replaces a file it does not own; got %r" % env_file)
    problems.extend(found)
    problems.extend(path_problems("nccl_topology_xml_path", settings.get("nccl_topology_xml_path", "/etc/nccl/topo.xml"),
                                  under=TOPOLOGY_XML_UNDER, what="file path"))
    problems.extend(path_problems("nccl_topology_snapshot", settings.get("nccl_topology_snapshot", ""),
                                  allow_empty=True, what="directory"))
    for name, low, high in (("nccl_roce_qps_per_connection", 1, 128), ("nccl_ib_qps_per_connection", 1, 128),
                            ("nccl_roce_traffic_class", 0, 255)):
        problem = int_range_problem(name, settings.get(name), low, high, allow_none=True,
                                    rule="must be null or an integer from %d to %d" % (low, high))
        if problem:
            problems.append(problem)
    problem = int_range_problem("nccl_cluster_nodes", settings.get("nccl_cluster_nodes", 0), 0,
                                rule="must be 0 (count the play's hosts) or a number of nodes")
    if problem:
        problems.append(problem)
    _tier_problems(settings.get("nccl_algorithm_tiers", []), problems)
    selection = settings.get("nccl_hca_selection", "gpu_affine")
    if selection not in ("gpu_affine", "all_active"):
        problems.append("nccl_hca_selection: must be gpu_affine or all_active; got %r" % (selection,))
    group = settings.get("nccl_consistency_group", "default")
    if not isinstance(group, str) or has_line_break(group):
        problems.append("nccl_consistency_group: must be a one-line name (or empty); got %r" % (group,))
    group = settings.get("gpufabric_peer_group", "all")
    if not isinstance(group, str) or not group or has_line_break(group):
        problems.append("gpufabric_peer_group: must be a one-line, non-empty name (the hosts cabled alike); got %r"
                        % (group,))
    return masked(problems, settings)
