"""site.yml against a 4-node lab of two Debian 12 and two Debian 13 nodes: through ansible-runner (the engine AWX
uses) it converges and its second run changes nothing; the lab's fabric map shows its two lldpd leaves and the
miscabled node04, and scheduler.yml leaves node04 out of the Slurm topology; with rolling batches, a host made
unreachable in the first batch stops the rollout."""

import difflib
import json
import os
import re
import shutil
import subprocess
import threading

import ansible_runner
import pytest

from integration_helpers import LOG_DIR, ROOT, run_logged, tail

LAB = "gpufabric-site-test"
INVENTORY = ROOT / "inventories" / "lab" / f"{LAB}.yml"
# A fleet half upgraded: node01 and node02 run Debian 12, node03 and node04 Debian 13, so every role of site.yml
# converges, and changes nothing the second time, on both releases.
RELEASES = {"node01": "bookworm", "node02": "bookworm", "node03": "trixie", "node04": "trixie"}
LAB_ENV = dict(os.environ, GPUFABRIC_LAB_NAME=LAB, GPUFABRIC_LAB_SUBNET="10.231.20.0/24",
               GPUFABRIC_LAB_RELEASES=" ".join(RELEASES.values()),
               ANSIBLE_CACHE_PLUGIN_CONNECTION=str(ROOT / ".cache" / "facts" / LAB))


@pytest.fixture(scope="module")
def lab():
    subprocess.run([str(ROOT / "scripts" / "lab.sh"), "up", "4"], env=LAB_ENV, check=True)
    yield INVENTORY
    subprocess.run([str(ROOT / "scripts" / "lab.sh"), "down"], env=LAB_ENV, check=False)


def _runner(private_data_dir, playbook, inventory, name, extravars=None, cmdline=None):
    private_data_dir.mkdir(parents=True, exist_ok=True)
    env = {k: LAB_ENV[k] for k in ("PATH", "ANSIBLE_CONFIG", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_ROLES_PATH",
                                   "ANSIBLE_CACHE_PLUGIN_CONNECTION")}
    result = ansible_runner.run(private_data_dir=str(private_data_dir), project_dir=str(ROOT),
                                playbook=str(ROOT / playbook), inventory=str(inventory), envvars=env,
                                extravars=extravars, cmdline=cmdline, quiet=True, timeout=1500)
    output = result.stdout.read()
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    (LOG_DIR / f"{name}.log").write_text(output)
    return result, output


def _diff_text(diff):
    """A task's diff (one entry or a list, as modules return it) as unified diff text."""
    lines = []
    for entry in diff if isinstance(diff, list) else [diff]:
        if not isinstance(entry, dict):
            continue
        if "prepared" in entry:
            lines.append(str(entry["prepared"]))
        if "before" in entry or "after" in entry:
            before, after = entry.get("before", ""), entry.get("after", "")
            if not isinstance(before, str) or not isinstance(after, str):
                before, after = (json.dumps(side, indent=2, sort_keys=True) for side in (before, after))
            lines.extend(difflib.unified_diff(before.splitlines(), after.splitlines(),
                                              entry.get("before_header", "before"),
                                              entry.get("after_header", "after"), lineterm=""))
    return "\n".join(lines)


def changed_tasks(result):
    """'task on host' and its diff for every task that reported changed, from the run's events."""
    changes = []
    for event in result.events:
        data = event.get("event_data") or {}
        if event.get("event") == "runner_on_ok" and (data.get("res") or {}).get("changed"):
            diff = _diff_text(data["res"].get("diff") or [])
            changes.append("%s: %s on %s" % (data.get("play"), data.get("task"), data.get("host"))
                           + ("\n" + tail(diff, 60) if diff else " (no diff returned)"))
    return changes


def _fabric_map_diff(first, second):
    """Keep the map each run wrote in LOG_DIR when they differ, and return their diff (empty when alike)."""
    if not first.exists() or not second.exists():
        return "the first or second run wrote no fabric map (%s, %s)" % (first, second)
    before, after = first.read_text(), second.read_text()
    if before == after:
        return ""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(first, LOG_DIR / "site-first-fabric_map.json")
    shutil.copyfile(second, LOG_DIR / "site-second-fabric_map.json")
    return "\n".join(difflib.unified_diff(before.splitlines(), after.splitlines(), "first run's fabric_map.json",
                                          "second run's fabric_map.json", lineterm=""))


def test_site_converges_through_ansible_runner_and_second_run_changes_nothing(lab, tmp_path):
    reports = tmp_path / "reports"
    first_map = tmp_path / "first-fabric_map.json"
    first, output = _runner(tmp_path / "first", "playbooks/site.yml", lab, "site-first",
                            extravars={"discover_report_dir": str(reports)})
    assert first.rc == 0, tail(output, 80)
    shutil.copyfile(reports / "fabric_map.json", first_map)
    # --diff: a task that changes something the second time shows what it changed.
    second, output = _runner(tmp_path / "second", "playbooks/site.yml", lab, "site-second",
                             extravars={"discover_report_dir": str(reports)}, cmdline="--diff")
    assert second.rc == 0, tail(output, 80)
    hosts = sorted(second.stats["ok"])
    assert hosts == ["node01", "node02", "node03", "node04"]
    changed = {host: second.stats["changed"].get(host, 0) for host in hosts}
    map_diff = _fabric_map_diff(first_map, reports / "fabric_map.json")
    assert changed == {host: 0 for host in hosts} and not map_diff, "\n\n".join(
        ["second run changed %s" % changed] + changed_tasks(second)
        + (["fabric map (both kept in %s):\n%s" % (LOG_DIR, tail(map_diff, 80))] if map_diff else []))
    # Each node runs the release it was given, asked of the node itself.
    seen = {host: subprocess.run(["podman", "exec", f"{LAB}-{host}", "sed", "-n", "s/^VERSION_CODENAME=//p",
                                  "/etc/os-release"], capture_output=True, text=True, check=True).stdout.strip()
            for host in hosts}
    assert seen == RELEASES


def test_lab_fabric_map_shows_the_leaves_and_the_miscabled_node(lab, tmp_path):
    """What `make run` shows a newcomer: two switches, two rails, node04 miscabled, and a Slurm topology without it."""
    rc, output = run_logged("site-discover", ["ansible-playbook", "-i", str(lab), "playbooks/discover.yml",
                                              "-e", f"discover_report_dir={tmp_path}"], timeout=600, env=LAB_ENV)
    assert rc == 0, tail(output)
    fabric = json.loads((tmp_path / "fabric_map.json").read_text())
    assert sorted(fabric["switches"]) == ["leaf-a", "leaf-b"]
    assert fabric["summary"]["rails"] == 2
    assert fabric["summary"]["miscabled_hosts"] == ["node04"]
    rc, output = run_logged("site-scheduler", ["ansible-playbook", "-i", str(lab), "playbooks/scheduler.yml",
                                               "-e", f"scheduler_fabric_map={tmp_path}/fabric_map.json"],
                            timeout=600, env=LAB_ENV)
    assert rc == 0, tail(output)
    conf = (tmp_path / "topology.conf").read_text()
    assert [line for line in conf.splitlines() if not line.startswith("#")] == ["SwitchName=leaf-a Nodes=node[01-03]"]
    assert "# left out: node04: miscabled: node04 rail 0 (eth1) reaches leaf-b port swp4" in conf
    assert (tmp_path / "hostfile").read_text() == "node01\nnode02\nnode03\n"


def test_unreachable_host_in_first_batch_stops_the_rollout(lab):
    """node01 is stopped while the rdma play runs on the first batch (node01, node02) of two."""
    argv = ["ansible-playbook", "-i", str(lab), "playbooks/site.yml", "--tags", "rdma,nccl",
            "-e", "gpufabric_serial=2"]
    proc = subprocess.Popen(argv, cwd=ROOT, env=LAB_ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    stopped = threading.Event()
    for line in proc.stdout:
        lines.append(line)
        if not stopped.is_set() and line.startswith("TASK [gpufabric.core.rdma"):
            subprocess.run(["podman", "stop", "-t", "0", f"{LAB}-node01"], check=True, capture_output=True)
            stopped.set()
    rc = proc.wait()
    output = "".join(lines)
    (LOG_DIR / "site-failure-injection.log").write_text(output)
    assert stopped.is_set(), tail(output)
    assert rc != 0
    # The second batch never ran a task, and no later play started.
    assert not re.search(r"^(ok|changed|fatal|skipping): \[node0[34]\]", output, re.M), tail(output, 80)
    assert "TASK [gpufabric.core.nccl" not in output
    summary = output[output.index("GPUFABRIC ROLE SUMMARY"):]
    assert re.search(r"UNREACHABLE: node01 in task", summary), summary
    assert re.search(r"^hosts that did not complete: node01$", summary, re.M), summary
    assert re.search(r"^ROLLOUT STOPPED: .*node01 failed or became unreachable", summary, re.M), summary
