"""slurmctld (Debian 12, Slurm 22.05) took the topology.conf built from the lab's LLDP, and shows the fabric."""

import hashlib
import os
import re
import subprocess

testinfra_hosts = ["scheduler-ctl"]


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
    # scheduler-node3 is miscabled (its rail 0 reaches leaf-b): left out, not guessed.
    assert _topology(host) == {
        "leaf-a": ("0", "scheduler-node[1-2]", None),
        "spine-1": ("1", "scheduler-node[1-2]", "leaf-a"),
    }


def test_installed_file_is_the_report_and_the_hand_written_one_is_backed_up(host, reports):
    installed = host.file("/etc/slurm/topology.conf")
    # Compared by digest: testinfra's file contents through the ansible connection lose the last newline.
    assert _sha256(host, "/etc/slurm/topology.conf") == hashlib.sha256((reports / "topology.conf").read_bytes()).hexdigest()
    assert "# left out: scheduler-node3: miscabled: scheduler-node3 rail 0 (eth1) reaches leaf-b port swp3" \
        in installed.content_string
    backups = host.check_output("ls /etc/slurm").split()
    backups = [name for name in backups if re.fullmatch(r"topology\.conf\..+~", name)]
    assert len(backups) == 1, backups
    assert _sha256(host, "/etc/slurm/" + backups[0]) == hashlib.sha256(b"SwitchName=handwritten Nodes=scheduler-node[1-3]\n").hexdigest()


def _sha256(host, path):
    return host.check_output("sha256sum %s" % path).split()[0]


def test_slurmctld_read_the_file_and_names_the_left_out_node_itself(host):
    log = host.file("/var/log/slurm/slurmctld.log").content_string
    assert "fatal" not in log, log[-2000:]
    assert "switches lack access to 1 nodes: scheduler-node3" in log, log[-2000:]
    assert host.service("slurmctld").is_running


def test_report_names_the_miscabled_host_and_orders_the_host_list(slurm_result, reports):
    assert [item["host"] for item in slurm_result["excluded"]] == ["scheduler-node3"]
    assert slurm_result["excluded"][0]["reasons"][0].startswith("miscabled: ")
    assert (reports / "hostfile").read_text() == "scheduler-node1\nscheduler-node2\n"
    assert slurm_result["rails"]["1"]["hostlist"] == ["scheduler-node1", "scheduler-node2"]
    # The map itself: two leaves, node3 miscabled (what a newcomer sees in the HTML page).
    assert slurm_result["switch_names"] == {}


def test_rail1_tree_replaces_rail0_and_reconfigures_only_when_changed(host):
    """scheduler.yml for rail 1: leaf-b under spine-1; a second run changes nothing and does not reconfigure."""
    project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH="%s/.build/collections" % project,
               ANSIBLE_CONFIG="%s/ansible.cfg" % project, ANSIBLE_FORCE_COLOR="false",
               ANSIBLE_CACHE_PLUGIN="ansible.builtin.memory")
    argv = ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "%s/playbooks/scheduler.yml" % project,
            "-e", "scheduler_rail=1", "-e", "scheduler_switch_hosts=lab_switches"]
    first = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert first.returncode == 0, first.stdout[-3000:]
    assert "changed: [scheduler-ctl]" in _task_output(first.stdout, "Install | scontrol reconfigure")
    assert _topology(host) == {
        "leaf-b": ("0", "scheduler-node[1-2]", None),
        "spine-1": ("1", "scheduler-node[1-2]", "leaf-b"),
    }
    second = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert second.returncode == 0, second.stdout[-3000:]
    assert re.search(r"scheduler-ctl\s+: ok=\d+\s+changed=0 ", second.stdout), second.stdout[-1500:]
    assert "changed:" not in _task_output(second.stdout, "Install | scontrol reconfigure")
