# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.core.slurm_node_state run by Ansible on this machine, scontrol stood in for at its process boundary
(tests/fake_scontrol.py, serving a real captured `scontrol show node`); molecule/health runs it against
Debian's real slurmctld."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from fixture_data import read_fixture

ROOT = Path(__file__).resolve().parents[4]
sys.path.insert(0, str(ROOT / "tests"))
import fake_scontrol  # noqa: E402  pylint: disable=wrong-import-position

BIN = Path(sys.executable).parent
_CONFIG = Path(tempfile.gettempdir()) / ("gpufabric-unit-ansible-%d.cfg" % os.getuid())
CAPTURE = "slurm/public-huji-17.11-four-nodes-one-drained.txt"
REASON = "gpufabric: rail1 eth2 down since 2026-12-04T10:00:00Z (GpufabricPortDown leaf-b swp1)"


@pytest.fixture
def slurm(tmp_path):
    return fake_scontrol.install(tmp_path / "bin", read_fixture(CAPTURE))


def run(tmp_path, slurm, args, *options):
    _CONFIG.write_text("[defaults]\ninterpreter_python = %s\n" % sys.executable)
    env = dict(os.environ, ANSIBLE_CONFIG=str(_CONFIG), ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json",
               ANSIBLE_LOCALHOST_WARNING="0", PATH="%s:%s" % (slurm, os.environ["PATH"]))
    args = dict({"state_dir": str(tmp_path / "state"), "textfile": str(tmp_path / "remediation.prom")}, **args)
    completed = subprocess.run([str(BIN / "ansible"), "localhost", "-i", "localhost,", "-c", "local",
                                "-m", "gpufabric.core.slurm_node_state", "-a", json.dumps(args), *options],
                               env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=180, check=False)
    try:
        report = json.loads(completed.stdout)
    except ValueError:
        pytest.fail("ansible did not print JSON:\n%s\n%s" % (completed.stdout, completed.stderr))
    return report["plays"][0]["tasks"][0]["hosts"]["localhost"]


def updates(slurm):
    return [call for call in fake_scontrol.calls(slurm) if call[0] == "update"]


def drain(node="cricket", **extra):
    # cricket is the only node of some of its partitions: small_partitions lets the guard drain it.
    return dict({"state": "drained", "node": node, "reason": REASON, "alertname": "GpufabricPortDown",
                 "max_drained": "25%", "small_partitions": True}, **extra)


def resume(node="cricket", **extra):
    return dict({"state": "resumed", "node": node, "verification": "passed", "window": 0}, **extra)


def test_check_mode_decides_and_changes_nothing(tmp_path, slurm):
    result = run(tmp_path, slurm, drain(), "--check", "--diff")
    assert result["changed"] and result["decision"] == "drain", result
    assert result["diff"]["before"] == "State=IDLE\nReason=\n"
    assert result["diff"]["after"] == "State=DRAIN\nReason=%s\n" % REASON
    assert updates(slurm) == [] and not (tmp_path / "state").exists() and not (tmp_path / "remediation.prom").exists()


def test_drain_then_nothing_more_to_do_and_the_counter(tmp_path, slurm):
    result = run(tmp_path, slurm, drain())
    assert (result["changed"], result["decision"], result["reason"]) == (True, "drain", "GpufabricPortDown"), result
    assert result["after"]["state"] == "IDLE+DRAIN" and result["after"]["reason"] == REASON
    assert updates(slurm) == [["update", "NodeName=cricket", "State=DRAIN", "Reason=" + REASON]]
    again = run(tmp_path, slurm, drain())
    assert (again["changed"], again["decision"]) == (False, "none") and "already drained by this loop" in again["message"]
    recorded = json.loads((tmp_path / "state" / "ledger.json").read_text())["nodes"]["cricket"]
    assert (recorded["slurm_reason"], recorded["slurm_user"]) == (REASON, "root") and recorded["slurm_time"]
    assert len(updates(slurm)) == 1
    text = (tmp_path / "remediation.prom").read_text()
    assert 'gpufabric_remediation_actions_total{action="drain",reason="GpufabricPortDown"} 1' in text
    assert oct(os.stat(tmp_path / "state").st_mode & 0o777) == "0o700"


def test_the_guard_holds_the_next_drain_in_a_shared_partition(tmp_path, slurm):
    run(tmp_path, slurm, drain("cricket"))
    held = run(tmp_path, slurm, drain("cortex-01"))
    assert (held["changed"], held["decision"], held["reason"]) == (True, "hold", "guard"), held
    assert [check["room"] for check in held["guard"]["partitions"]] == [False, True]
    assert len(updates(slurm)) == 1
    ledger = json.loads((tmp_path / "state" / "ledger.json").read_text())
    assert ledger["counters"] == {"drain|GpufabricPortDown": 1, "hold|guard": 1}


def test_the_last_node_in_service_of_a_small_partition_is_held_by_default(tmp_path, slurm):
    held = run(tmp_path, slurm, drain(small_partitions=False, max_drained="100%"))
    assert (held["decision"], held["reason"]) == ("hold", "guard"), held
    assert "partition debug has 1 node(s) and this drain would leave none of them in service" in held["message"]
    assert updates(slurm) == []


@pytest.mark.parametrize("argv", [
    # A person extends the loop's reason, or another user drains the node again with the same words.
    ["update", "NodeName=cricket", "State=DRAIN", "Reason=" + REASON + " -- DO NOT RESUME, RMA 4711"],
    ["update", "NodeName=cricket", "State=DRAIN", "Reason=" + REASON],
])
def test_a_loop_drain_a_person_changed_is_theirs(tmp_path, slurm, argv):
    run(tmp_path, slurm, drain())
    state = slurm / "scontrol-state.json"
    data = json.loads(state.read_text())
    time.sleep(1.1)  # scontrol stamps the reason to the second
    assert fake_scontrol.main(str(state), argv) == 0
    if argv[-1].endswith(REASON):
        data = json.loads(state.read_text())
        state.write_text(json.dumps(dict(data, text=data["text"].replace("[root@", "[alice@"))))
    held = run(tmp_path, slurm, resume())
    assert (held["decision"], held["reason"]) == ("hold", "foreign_drain"), held
    assert updates(slurm)[-1] == argv


def test_someone_elses_drain_is_never_resumed(tmp_path, slurm):
    result = run(tmp_path, slurm, {"state": "resumed", "node": "oxygen-04", "verification": "passed"})
    assert (result["decision"], result["reason"]) == ("hold", "foreign_drain"), result
    assert updates(slurm) == []


def test_resume_after_the_window_with_a_passed_reverification(tmp_path, slurm):
    run(tmp_path, slurm, drain())
    early = run(tmp_path, slurm, {"state": "resumed", "node": "cricket", "verification": "passed", "window": 3600})
    assert (early["decision"], early["reason"]) == ("hold", "window") and early["wait_s"] > 3500, early
    failed = run(tmp_path, slurm, resume(verification="failed", verify_message="rail 1: no answer"))
    assert failed["reason"] == "verify_failed" and "rail 1: no answer" in failed["message"]
    firing = run(tmp_path, slurm, resume(firing=["GpufabricPortFlapping"]))
    assert firing["reason"] == "alert_firing"
    resumed = run(tmp_path, slurm, resume(), "--diff")
    assert (resumed["changed"], resumed["decision"], resumed["reason"]) == (True, "resume", "verified"), resumed
    assert resumed["after"]["state"] == "IDLE" and resumed["after"]["reason"] is None
    assert updates(slurm)[-1] == ["update", "NodeName=cricket", "State=RESUME"]


@pytest.mark.parametrize("args, words", [
    ({"node": "node[1-64]"}, "never a host list"),
    ({"reason": "maintenance: rail1 down"}, "must start with the prefix"),
    ({"reason": "gpufabric: line one\nline two"}, "line break"),
    ({"reason": "gpufabric: " + "x" * 300}, "slurmdbd cuts"),
    ({"max_drained": "0%"}, "above 0 %"),
    ({"prefix": "gpu fabric:"}, "a word ending in a colon"),
])
def test_bad_input_changes_nothing(tmp_path, slurm, args, words):
    result = run(tmp_path, slurm, drain(**args))
    assert result.get("failed") and result["msg"].startswith("Nothing was changed") and words in result["msg"], result
    assert fake_scontrol.calls(slurm) == [] and not (tmp_path / "state").exists()


def test_a_failed_scontrol_update_fails_and_records_nothing(tmp_path):
    slurm = fake_scontrol.install(tmp_path / "bin", read_fixture(CAPTURE), fail_update=True)
    result = run(tmp_path, slurm, drain())
    assert result.get("failed") and "Access/permission denied" in result["msg"], result
    assert not (tmp_path / "state" / "ledger.json").exists()


def test_query_records_what_it_is_given_and_keeps_the_metrics(tmp_path, slurm):
    result = run(tmp_path, slurm, {"state": "query", "record": [
        {"action": "report", "reason": "GpufabricLeafDown", "note": "leaf-b rail1"}]})
    assert result["changed"] and result["recorded"] == [{"action": "report", "reason": "GpufabricLeafDown",
                                                         "node": None}], result
    assert [node["name"] for node in result["nodes"]] == ["cortex-01", "dumfries-002", "oxygen-04", "cricket"]
    unchanged = run(tmp_path, slurm, {"state": "query"})
    assert not unchanged["changed"]
