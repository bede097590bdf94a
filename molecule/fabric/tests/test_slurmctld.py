"""Both slurmctld (Debian 12's Slurm 22.05, Debian 13's 24.11) took the topology.conf built from the lab's LLDP and
show the fabric, each in its release's words; topology/block for real on 24.11, refused on 22.05.

testinfra runs every test of this module on one controller, then every test on the other (its host fixture is
module-scoped): each test that runs scheduler.yml installs on its own controller only, with its own report
directory, so the other controller's checks still see what converge wrote."""

import hashlib
import os
import re
import subprocess

# podman exec per check (why: tests/molecule_helpers.py)
testinfra_hosts = ["podman://fabric-ctl", "podman://fabric-ctl13"]


def _topology(host):
    """{switch: (level, nodes expression, switches expression)} from `scontrol show topology`."""
    shown = {}
    for line in host.check_output("scontrol show topology").splitlines():
        fields = dict(item.split("=", 1) for item in line.split() if "=" in item)
        if "SwitchName" in fields:
            shown[fields["SwitchName"]] = (fields.get("Level"), fields.get("Nodes"), fields.get("Switches"))
    return shown


def _task_output(output, task):
    """What ansible-playbook printed under one task, up to the next task."""
    marker = "TASK [%s]" % task
    assert marker in output, output[-3000:]
    return output.split(marker, 1)[1].split("TASK [", 1)[0]


def test_slurmctld_shows_the_leaf_and_the_spine_of_rail0(host):
    # Rail 0 of node1 and node2 reaches leaf-a; leaf-a's uplink (LLDP on the leaf) reaches spine-1.
    # fabric-node3 is miscabled (its rail 0 reaches leaf-b): left out, not guessed.
    assert _topology(host) == {
        "leaf-a": ("0", "fabric-node[1-2]", None),
        "spine-1": ("1", "fabric-node[1-2]", "leaf-a"),
    }


def test_installed_file_is_the_report_and_the_hand_written_one_is_backed_up(host, reports):
    installed = host.file("/etc/slurm/topology.conf")
    # Compared by digest: testinfra's file contents through the ansible connection lose the last newline.
    assert _sha256(host, "/etc/slurm/topology.conf") == hashlib.sha256((reports / "topology.conf").read_bytes()).hexdigest()
    assert "# left out: fabric-node3: miscabled: fabric-node3 rail 0 (eth1) reaches leaf-b port swp3" \
        in installed.content_string
    backups = host.check_output("ls /etc/slurm").split()
    backups = [name for name in backups if re.fullmatch(r"topology\.conf\..+~", name)]
    assert len(backups) == 1, backups
    assert _sha256(host, "/etc/slurm/" + backups[0]) == hashlib.sha256(b"SwitchName=handwritten Nodes=fabric-node[1-3]\n").hexdigest()


def _sha256(host, path):
    return host.check_output("sha256sum %s" % path).split()[0]


def test_slurmctld_read_the_file_and_names_the_left_out_node_itself(host):
    log = host.file("/var/log/slurm/slurmctld.log").content_string
    assert "fatal" not in log, log[-2000:]
    assert "switches lack access to 1 nodes: fabric-node3" in log, log[-2000:]
    assert host.service("slurmctld").is_running


def test_report_names_the_miscabled_host_and_orders_the_host_list(slurm_result, reports):
    assert [item["host"] for item in slurm_result["excluded"]] == ["fabric-node3"]
    assert slurm_result["excluded"][0]["reasons"][0].startswith("miscabled: ")
    assert (reports / "hostfile").read_text() == "fabric-node1\nfabric-node2\n"
    assert slurm_result["rails"]["1"]["hostlist"] == ["fabric-node1", "fabric-node2"]
    # The map itself: two leaves, node3 miscabled (what a newcomer sees in the HTML page).
    assert slurm_result["switch_names"] == {}


def test_rail1_tree_replaces_rail0_and_reconfigures_only_when_changed(host, tmp_path):
    """scheduler.yml for rail 1: leaf-b under spine-1; a second run changes nothing and does not reconfigure."""
    name = host.backend.get_hostname()
    argv = _scheduler_argv(name, tmp_path, "-e", "scheduler_rail=1")
    first = _run(argv)
    assert first.returncode == 0, first.stdout[-3000:]
    assert "changed: [%s]" % name in _task_output(first.stdout, "Install | scontrol reconfigure")
    assert _topology(host) == {
        "leaf-b": ("0", "fabric-node[1-2]", None),
        "spine-1": ("1", "fabric-node[1-2]", "leaf-b"),
    }
    second = _run(argv)
    assert second.returncode == 0, second.stdout[-3000:]
    assert re.search(r"%s\s+: ok=\d+\s+changed=0 " % re.escape(name), second.stdout), second.stdout[-1500:]
    assert "changed:" not in _task_output(second.stdout, "Install | scontrol reconfigure")


def _scheduler_argv(name, report_dir, *extra):
    """scheduler.yml installing on one controller only, its report in its own directory (not converge's)."""
    project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    return ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "%s/playbooks/scheduler.yml" % project,
            "-e", "scheduler_switch_hosts=lab_switches", "-e", "scheduler_controller_hosts=%s" % name,
            "-e", "scheduler_report_dir=%s" % report_dir, *extra]


def _run(argv):
    project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH="%s/.build/collections" % project,
               ANSIBLE_CONFIG="%s/ansible.cfg" % project, ANSIBLE_FORCE_COLOR="false",
               ANSIBLE_CACHE_PLUGIN="ansible.builtin.memory")
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)


def _slurm_version(host):
    """(major, minor) of the controller's Slurm, as `scontrol --version` prints it ("slurm-wlm 24.11.5")."""
    match = re.search(r"(\d+)\.(\d+)\.\d+", host.check_output("scontrol --version"))
    assert match, host.check_output("scontrol --version")
    return int(match.group(1)), int(match.group(2))


def _blocks(host):
    """Every line of `scontrol show topology` under topology/block, as a dict of its fields."""
    return [dict(item.split("=", 1) for item in line.split())
            for line in host.check_output("scontrol show topology").splitlines() if line.strip()]


BLOCK = ("-e", "scheduler_topology=block", "-e", '{"scheduler_block_sizes": [1, 2]}')


def test_block_topology_shown_by_24_11_and_refused_by_22_05(host, tmp_path):
    """Last test of the module (it leaves 24.11 on topology/block): scheduler_block of molecule.yml, BlockSizes 1,2."""
    name = host.backend.get_hostname()
    if _slurm_version(host) < (23, 11):
        before = _sha256(host, "/etc/slurm/topology.conf")
        refused = _run(_scheduler_argv(name, tmp_path, *BLOCK))
        assert refused.returncode == 2, refused.stdout[-3000:]
        # The result's YAML folds the message across lines: compared with its whitespace joined.
        assert "scheduler_topology is block but this slurmctld is Slurm 22.05.8, which has no topology/block " \
            "(Slurm 23.11 or later)" in " ".join(refused.stdout.split()), refused.stdout[-3000:]
        assert "TASK [Install | write topology.conf" not in refused.stdout
        assert _sha256(host, "/etc/slurm/topology.conf") == before
        return
    # The operator's part: slurm.conf switched to topology/block, a stale hand-written block file, a restart.
    host.check_output(
        "sed -i 's|^TopologyPlugin=topology/tree$|TopologyPlugin=topology/block|' /etc/slurm/slurm.conf"
        " && printf 'BlockName=handwritten Nodes=fabric-node[1-3]\\n' > /etc/slurm/topology.conf"
        " && systemctl restart slurmctld")
    # slurmctld answers once it has started: wait for it (bounded), then check what it shows.
    for _attempt in range(30):
        shown = host.run("scontrol show topology")
        if shown.rc == 0 and "BlockName=handwritten" in shown.stdout:
            break
        host.run("sleep 1")
    argv = _scheduler_argv(name, tmp_path, *BLOCK)
    first = _run(argv)
    assert first.returncode == 0, first.stdout[-3000:]
    assert "changed: [%s]" % name in _task_output(first.stdout, "Install | scontrol reconfigure")
    assert (tmp_path / "topology.conf").read_text().splitlines()[2:] == [
        "BlockName=nvl1 Nodes=fabric-node[1-2]", "BlockName=nvl2 Nodes=fabric-node3", "BlockSizes=1,2"]
    # Slurm 24.11.5's own words: the two blocks of the file, and the level-2 block it aggregates from them.
    assert _blocks(host) == [
        {"BlockName": "nvl1", "BlockIndex": "0", "Nodes": "fabric-node[1-2]", "BlockSize": "1"},
        {"BlockName": "nvl2", "BlockIndex": "1", "Nodes": "fabric-node3", "BlockSize": "1"},
        {"AggregatedBlock": "nvl[1-2]", "BlockIndex": "2", "Nodes": "fabric-node[1-3]", "BlockSize": "2"},
    ]
    log = host.file("/var/log/slurm/slurmctld.log").content_string
    assert "fatal" not in log, log[-2000:]
    second = _run(argv)
    assert second.returncode == 0, second.stdout[-3000:]
    assert re.search(r"%s\s+: ok=\d+\s+changed=0 " % re.escape(name), second.stdout), second.stdout[-1500:]
