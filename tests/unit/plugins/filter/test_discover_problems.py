# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""discover_problems: the discover playbook's one preflight check, every problem named, play and host variables."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.filter.discover_problems import FilterModule

discover_problems = FilterModule().filters()["discover_problems"]

# What discover.yml passes when nothing is set (its defaults), with the lab's host variables.
PLAY = {"discover_report_dir": "/srv/reports", "discover_report_name": "fabric_map", "discover_fail_on": "error",
        "discover_html_title": "Fabric map", "discover_max_hosts_drawn": 64, "discover_lldp_wait": 35,
        "discover_capture_dir": ""}
HOSTS = {"node1": {"gpufabric_rail_interfaces": ["eth1", "eth2"], "gpufabric_peer_group": "lab"},
         "node2": {"gpufabric_rail_interfaces": {"0": "eth1"}, "gpufabric_snapshot_dir": "/srv/snap/node2"},
         "node3": {}}


def test_defaults_and_the_lab_are_usable():
    assert discover_problems(PLAY, hosts=HOSTS) == []
    # Extra vars arrive as strings.
    assert discover_problems(dict(PLAY, discover_max_hosts_drawn="16", discover_capture_dir="/var/tmp/cap",
                                  discover_lldp_wait="0")) == []


@pytest.mark.parametrize("name, value, message", [
    ("discover_fail_on", "errors", "discover_fail_on: must be one of error, warning, never, got 'errors'"),
    ("discover_report_name", "maps/fabric", "discover_report_name: must be a file name without a directory part"),
    ("discover_report_name", "", "discover_report_name: must be a file name"),
    ("discover_report_dir", " ", "discover_report_dir: must be a directory path on the controller"),
    ("discover_max_hosts_drawn", "-1", "discover_max_hosts_drawn: must be a whole number, 0 or more, got '-1'"),
    ("discover_max_hosts_drawn", "64\n", "discover_max_hosts_drawn: must be a whole number"),
    ("discover_max_hosts_drawn", True, "discover_max_hosts_drawn: must be a whole number"),
    ("discover_lldp_wait", "-1", "discover_lldp_wait: must be a whole number of seconds from 0 to 120"),
    ("discover_lldp_wait", 600, "discover_lldp_wait: must be a whole number of seconds from 0 to 120 (lldpd "
                                "announces every 30 s); got 600"),
    ("discover_lldp_wait", "soon", "discover_lldp_wait: must be a whole number of seconds"),
    ("discover_capture_dir", "capture", "discover_capture_dir: must be empty or an absolute path on each host"),
    ("discover_html_title", 7, "discover_html_title: must be a string, got 7"),
])
def test_a_bad_play_variable_is_named(name, value, message):
    problems = discover_problems(dict(PLAY, **{name: value}), hosts=HOSTS)
    assert len(problems) == 1 and problems[0].startswith(message), problems


def test_every_host_problem_at_once_naming_the_host():
    problems = discover_problems(dict(PLAY, discover_fail_on="sometimes"), hosts={
        "node1": {"gpufabric_rail_interfaces": "eth1,eth2"},
        "node2": {"gpufabric_peer_group": ""},
        "node3": {"gpufabric_snapshot_dir": "snap/node3"},
        "node4": {"gpufabric_peer_group": 4}})
    assert problems == [
        "discover_fail_on: must be one of error, warning, never, got 'sometimes'",
        "node1: gpufabric_rail_interfaces must be a list of interface names (item i is rail i) or a mapping of rail "
        "index to interface name",
        "node2: gpufabric_peer_group must be a non-empty string",
        "node3: gpufabric_snapshot_dir must be an absolute path on the controller",
        "node4: gpufabric_peer_group must be a non-empty string"]


def test_filter_refuses_what_is_not_a_dict():
    with pytest.raises(AnsibleFilterError, match="must be dicts"):
        discover_problems(["discover_fail_on"])
