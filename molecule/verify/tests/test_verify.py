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


def _leaf_port(node):
    """The host side of the node's eth0 veth: its port on the verify-fabric bridge (the lab's leaf port)."""
    import subprocess

    index = subprocess.run(["podman", "exec", node, "cat", "/sys/class/net/eth0/iflink"], capture_output=True,
                           text=True, check=True, timeout=120).stdout.strip()
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True, timeout=60).stdout
    for line in links.splitlines():
        number, name = line.split(":", 2)[:2]
        if number.strip() == index:
            return name.strip().split("@", 1)[0]
    raise AssertionError("no host interface with index %s (%s's eth0 peer)" % (index, node))


def _set_mtu(interface, mtu):
    import subprocess

    subprocess.run(["ip", "link", "set", "dev", interface, "mtu", str(mtu)], check=True, timeout=60)


def test_every_pair_proved_its_9000_path():
    checked = _report()["path_mtu"]
    # 6 pairs of the "all" plan, one rail (tcp) each; two probes each: 8972 bytes crossed, 8973 did not leave.
    assert len(checked) == 6, checked
    assert all(r["status"] == "ok" and r["path_mtu"] == 9000 and r["probes"] == 2 for r in checked), checked


def test_a_leaf_port_at_1500_is_found_and_named(capsys):
    sys.path.insert(0, str(Path(os.environ["MOLECULE_PROJECT_DIRECTORY"]) / "tests"))
    import molecule_helpers

    scenario = Path(__file__).resolve().parents[1]
    port = _leaf_port("verify-node4")
    _set_mtu(port, 1500)
    try:
        rc, _report_json, text = molecule_helpers.run_playbook(scenario, "path_mtu.yml")
    finally:
        _set_mtu(port, 9000)
    assert rc == 0, text[-3000:]
    report = json.loads((REPORT_DIR.parent / "report-path-mtu" / "verify.json").read_text())
    by_pair = {(r["client"], r["server"]): r for r in report["path_mtu"]}
    bad, good = by_pair[("verify-node1", "verify-node4")], by_pair[("verify-node2", "verify-node3")]
    with capsys.disabled():
        print("\npath MTU: verify-node1 -> verify-node4 behind a 1500 leaf port: %d probes, %.1f s; a good pair: "
              "%d probes, %.2f s\n%s" % (bad["probes"], bad["seconds"], good["probes"], good["seconds"], bad["message"]))
    assert (good["status"], good["path_mtu"]) == ("ok", 9000), good
    assert (bad["status"], bad["path_mtu"]) == ("mismatch", 1500), bad
    assert bad["message"].startswith("verify-node1 -> verify-node4 rail tcp (eth0 -> eth0): path MTU 1500, configured "
                                     "9000 on verify-node1 (eth0) and 9000 on verify-node4 (eth0)"), bad["message"]
    assert bad["probes"] <= 18, bad
    assert bad["message"] in report["failures"], report["failures"]
    assert report["hosts"]["verify-node4"]["status"] == "fail" and report["hosts"]["verify-node1"]["status"] == "fail"
