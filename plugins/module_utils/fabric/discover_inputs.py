# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The variables of playbooks/discover.yml, checked on the controller: one list of problems, each naming its variable.

Play variables (discover_*) and each host's fabric variables (gpufabric_rail_interfaces, gpufabric_peer_group,
gpufabric_snapshot_dir) in one pass, so that the playbook's preflight is one task that reports them all.
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import int_range_problem

FAIL_ON = ("error", "warning", "never")
_WHOLE_NUMBER = re.compile(r"[0-9]+")


def _is_text(value):
    return isinstance(value, str)


def play_problems(settings):
    """Problems of the play variables (discover_report_dir, ...); missing names are not checked."""
    problems = []
    if "discover_report_dir" in settings:
        value = settings["discover_report_dir"]
        if not _is_text(value) or not value.strip():
            problems.append("discover_report_dir: must be a directory path on the controller, got %r" % (value,))
    if "discover_report_name" in settings:
        value = settings["discover_report_name"]
        if not _is_text(value) or value in ("", ".", "..") or "/" in value or "\0" in value:
            problems.append("discover_report_name: must be a file name without a directory part (the reports are "
                            "<name>.json and <name>.html), got %r" % (value,))
    if "discover_fail_on" in settings and settings["discover_fail_on"] not in FAIL_ON:
        choice = settings["discover_fail_on"]
        problems.append("discover_fail_on: must be one of %s, got %r" % (", ".join(FAIL_ON), choice))
    if "discover_html_title" in settings and not _is_text(settings["discover_html_title"]):
        problems.append("discover_html_title: must be a string, got %r" % (settings["discover_html_title"],))
    if "discover_max_hosts_drawn" in settings:
        value = settings["discover_max_hosts_drawn"]
        # Extra vars arrive as strings: "64" is a number.
        if isinstance(value, bool) or not (isinstance(value, int) and value >= 0
                                           or _is_text(value) and _WHOLE_NUMBER.fullmatch(value)):
            problems.append("discover_max_hosts_drawn: must be a whole number, 0 or more, got %r" % (value,))
    if "discover_lldp_wait" in settings:
        # Two LLDP intervals at most: a switch not heard by then is not announcing.
        problem = int_range_problem("discover_lldp_wait", settings["discover_lldp_wait"], 0, 120,
                                    rule="must be a whole number of seconds from 0 to 120 (lldpd announces every 30 s)")
        if problem:
            problems.append(problem)
    if "discover_capture_dir" in settings:
        value = settings["discover_capture_dir"]
        if not _is_text(value) or value and not value.startswith("/"):
            problems.append("discover_capture_dir: must be empty or an absolute path on each host, got %r" % (value,))
    return problems


def host_problems(host, host_vars):
    """Problems of one host's fabric variables; host_vars holds those the host defines."""
    problems = []
    rails = host_vars.get("gpufabric_rail_interfaces", [])
    if not isinstance(rails, (list, tuple, dict)):
        problems.append("%s: gpufabric_rail_interfaces must be a list of interface names (item i is rail i) or a "
                        "mapping of rail index to interface name" % host)
    group = host_vars.get("gpufabric_peer_group", "all")
    if not _is_text(group) or not group:
        problems.append("%s: gpufabric_peer_group must be a non-empty string" % host)
    if "gpufabric_snapshot_dir" in host_vars:
        snapshot = host_vars["gpufabric_snapshot_dir"]
        if not _is_text(snapshot) or not snapshot.startswith("/"):
            problems.append("%s: gpufabric_snapshot_dir must be an absolute path on the controller" % host)
    return problems


def discover_problems(settings, hosts=None):
    """Every problem of the play variables (settings) and of each host's fabric variables (hosts: name -> vars)."""
    problems = play_problems(settings)
    for host, host_vars in (hosts or {}).items():
        problems.extend(host_problems(host, host_vars))
    return problems
