# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab sweep: concurrent rounds, the throttled node failing its gate alone, a report that renders."""

from __future__ import annotations

import functools
import itertools
import json
import os
import sys
from pathlib import Path

import pytest

THROTTLED = "verify-node3"
NODES = ["verify-node1", "verify-node2", "verify-node3", "verify-node4"]
# podman exec per check (why: tests/molecule_helpers.py)
testinfra_hosts = ["podman://" + name for name in NODES]
REPORT_DIR = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent")) / "report"
sys.path.insert(0, str(Path(os.environ.get("MOLECULE_PROJECT_DIRECTORY", ".")) / "tests" / "browser"))


@functools.lru_cache(maxsize=None)
def _report():
    return json.loads((REPORT_DIR / "verify.json").read_text())


@functools.lru_cache(maxsize=None)
def _rendered():
    import report_check  # tests/browser, beside the unit tests

    dom, errors = report_check.dump_dom(REPORT_DIR / "verify.html")
    return tuple(report_check.check_rendered(dom, errors, [THROTTLED], [node for node in NODES if node != THROTTLED]))


def _name(host):
    return host.backend.get_hostname()


def test_tool_installed_and_nothing_left_behind(host):
    # One command per node: every testinfra call through the Ansible connection costs seconds.
    state = host.check_output(
        "dpkg-query -W -f='${Status}' iperf3; echo; pgrep -c -x iperf3 || true; ls -d /tmp/gpufabric-bw-* 2>/dev/null | wc -l"
    ).splitlines()
    assert state[0] == "install ok installed"
    assert state[1] == "0", "an iperf3 server or client is still running"
    assert state[2] == "0", "a server's log directory was left in /tmp"


def test_gate_verdict_of_this_node(host):
    verdict = _report()["hosts"][_name(host)]
    rail = verdict["rails"]["tcp"]
    assert rail["expected_gbps"] == 0.05 and rail["basis"] == "absolute threshold of group 'verify_lab'"
    assert rail["tests"] == 3  # all mode: every other node once
    if _name(host) == THROTTLED:
        assert verdict["status"] == "fail"
        assert rail["measured_gbps"] < 0.02  # 10 Mbit/s token bucket on its egress
        assert verdict["messages"][0].startswith("%s rail tcp (" % THROTTLED)
    else:
        assert verdict["status"] == "pass", verdict["messages"]
        assert rail["measured_gbps"] > 0.05
        # Its one test against the throttled node is below the gate and is outvoted by the other two.
        assert rail["tests_passed"] == 2


def test_every_pair_is_tested_once_in_three_rounds():
    tests = _report()["tests"]
    assert sorted(tuple(sorted((test["client"], test["server"]))) for test in tests) == list(itertools.combinations(NODES, 2))
    assert sorted(set(test["round"] for test in tests)) == [1, 2, 3]


def test_pairs_of_a_round_ran_at_the_same_time():
    rounds = _report()["rounds"]
    assert len(rounds) == 3
    for span in rounds:
        tests = [test for test in _report()["tests"] if test["round"] == span["round"]]
        assert len(tests) == 2
        # Overlap: the later start comes before the earlier end. The async launches of a round's clients are
        # seconds apart at most, even on a loaded machine, against 10 s tests.
        overlap = min(test["ended_at"] for test in tests) - max(test["started_at"] for test in tests)
        assert overlap > 1.0, "round %d pairs overlapped %.2f s only" % (span["round"], overlap)
    # And rounds do not overlap each other: the next starts after the slowest pair of the previous.
    for earlier, later in zip(rounds, rounds[1:]):
        assert later["started_at"] >= earlier["ended_at"]


def test_prometheus_metrics_parse():
    from prometheus_client.parser import text_string_to_metric_families

    families = dict((family.name, family) for family in text_string_to_metric_families((REPORT_DIR / "verify.prom").read_text()))
    verdicts = dict((sample.labels["host"], sample.value) for sample in families["gpufabric_verify_host_pass"].samples)
    assert verdicts == dict((node, 0.0 if node == THROTTLED else 1.0) for node in NODES)


@pytest.mark.skipif(not any(os.path.exists(os.path.join(path, "chromium")) for path in os.environ.get("PATH", "").split(os.pathsep)),
                    reason="chromium is not installed on the controller")
def test_html_report_renders_in_headless_chromium():
    assert _rendered() == ()
