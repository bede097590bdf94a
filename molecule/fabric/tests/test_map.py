"""The fabric map of the lab: node3's swapped cables are reported, node1 and node2 are aligned."""

import json
import os
import subprocess

testinfra_hosts = ["podman://fabric-node1"]  # the map is one file on the controller: check it once

CABLING = {
    "fabric-node1": [("leaf-a", "swp1"), ("leaf-b", "swp1")],
    "fabric-node2": [("leaf-a", "swp2"), ("leaf-b", "swp2")],
    "fabric-node3": [("leaf-b", "swp3"), ("leaf-a", "swp3")],
}


def _ansible_env():
    project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    # The project's fact cache would outlive the scenario's instances: keep these runs' facts in memory.
    return dict(os.environ, ANSIBLE_COLLECTIONS_PATH="%s/.build/collections" % project,
                ANSIBLE_CONFIG="%s/ansible.cfg" % project, ANSIBLE_FORCE_COLOR="false",
                ANSIBLE_CACHE_PLUGIN="ansible.builtin.memory")


def test_every_rail_reaches_the_cabled_leaf_port(fabric_map):
    assert sorted(fabric_map["hosts"]) == sorted(CABLING)
    for host, cables in CABLING.items():
        rails = fabric_map["hosts"][host]["rails"]
        assert [(rail["switch"], rail["switch_port"]) for rail in rails] == cables
        assert fabric_map["hosts"][host]["rail_source"] == "inventory"
        assert fabric_map["hosts"][host]["peer_group"] == "lab"


def test_node3_is_miscabled_and_the_others_aligned(fabric_map):
    assert fabric_map["summary"]["miscabled_hosts"] == ["fabric-node3"]
    for host in ("fabric-node1", "fabric-node2"):
        assert [rail["aligned"] for rail in fabric_map["hosts"][host]["rails"]] == [True, True]
    node3 = fabric_map["hosts"]["fabric-node3"]
    assert [(rail["aligned"], rail["expected_switch"]) for rail in node3["rails"]] == [
        (False, "leaf-a"), (False, "leaf-b")]
    misaligned = [item for item in fabric_map["findings"] if item["kind"] == "rail_misaligned"]
    assert [(item["host"], item["rail"], item["severity"]) for item in misaligned] == [
        ("fabric-node3", 0, "error"), ("fabric-node3", 1, "error")]
    assert misaligned[0]["message"].startswith(
        "fabric-node3 rail 0 (eth1) reaches leaf-b port swp3, but rail 0 of its peers in group lab reaches leaf-a")


def test_mtu_mismatch_of_node2_rail1(fabric_map):
    mtu = [item for item in fabric_map["findings"] if item["kind"] == "mtu_mismatch"]
    assert [(item["host"], item["rail"], item["severity"]) for item in mtu] == [("fabric-node2", 1, "warning")]
    assert "netdev MTU 1500" in mtu[0]["message"] and "has 9000" in mtu[0]["message"]
    assert fabric_map["hosts"]["fabric-node2"]["status"] == "warning"
    assert fabric_map["hosts"]["fabric-node1"]["status"] in ("ok", "info")


def test_switches_list_their_ports(fabric_map):
    assert sorted(fabric_map["switches"]) == ["leaf-a", "leaf-b"]
    ports = [(port["port"], port["host"], port["rail"]) for port in fabric_map["switches"]["leaf-a"]["ports"]]
    assert ports == [("swp1", "fabric-node1", 0), ("swp2", "fabric-node2", 0), ("swp3", "fabric-node3", 1)]


def test_html_page_shows_the_miscabled_links(fabric_html):
    assert fabric_html.startswith("<!DOCTYPE html>")
    assert "<title>gpufabric.core lab fabric</title>" in fabric_html
    assert fabric_html.count('stroke="#d62728" stroke-width="3" stroke-dasharray="7 4"><title>fabric-node3') == 2
    assert ">leaf-a</text>" in fabric_html and ">leaf-b</text>" in fabric_html


def test_default_policy_fails_on_the_miscabled_node(tmp_path):
    """discover.yml with discover_fail_on at its default, error, fails, naming the miscabled rails (the scenario's
    inventory sets never for its converge, so the default is given back here)."""
    project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    result = subprocess.run(
        ["ansible-playbook", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "%s/playbooks/discover.yml" % project,
         "-e", "discover_hosts=gpu_nodes", "-e", "discover_report_dir=%s" % tmp_path, "-e", "discover_fail_on=error"],
        env=_ansible_env(), capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 2, result.stdout[-3000:]
    assert "2 findings at or above 'error'" in result.stdout
    assert "fabric-node3 rail 1 (eth2) reaches leaf-a port swp3" in result.stdout
    assert (tmp_path / "fabric_map.json").is_file()  # written before the policy failed


def test_snapshots_give_the_same_map_offline(tmp_path, fabric_map):
    """Capture each node's raw sources, copy them to the controller and map them offline: same fabric."""
    project = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    capture = subprocess.run(
        ["ansible", "-i", os.environ["MOLECULE_INVENTORY_FILE"], "gpu_nodes", "-m", "gpufabric.core.topology_facts",
         "-a", "capture=/var/tmp/gpufabric-snapshot"],
        env=_ansible_env(), capture_output=True, text=True, timeout=300, check=False)
    assert capture.returncode == 0, capture.stdout[-3000:]
    hosts = []
    for node in CABLING:
        subprocess.run(["podman", "cp", "%s:/var/tmp/gpufabric-snapshot" % node, str(tmp_path / node)], check=True)
        assert (tmp_path / node / "lldpctl.json").is_file()
        hosts.append("    %s: {gpufabric_snapshot_dir: %s}" % (node, tmp_path / node))
    inventory = tmp_path / "snapshots.yml"
    inventory.write_text("all:\n  hosts:\n%s\n  vars:\n    ansible_connection: local\n"
                         "    gpufabric_rail_interfaces: [eth1, eth2]\n    gpufabric_peer_group: lab\n"
                         % "\n".join(hosts))
    result = subprocess.run(
        ["ansible-playbook", "-i", str(inventory), "%s/playbooks/discover.yml" % project,
         "-e", "discover_report_dir=%s/reports" % tmp_path, "-e", "discover_fail_on=never"],
        env=_ansible_env(), capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-3000:]
    offline = json.loads((tmp_path / "reports" / "fabric_map.json").read_text())
    assert offline["hosts"]["fabric-node3"]["source"] == "snapshot:%s" % (tmp_path / "fabric-node3")
    for host in CABLING:
        keys = ("rail", "netdev", "switch", "switch_port", "mtu", "state", "aligned")
        assert [{key: rail[key] for key in keys} for rail in offline["hosts"][host]["rails"]] == \
            [{key: rail[key] for key in keys} for rail in fabric_map["hosts"][host]["rails"]]
    assert offline["summary"]["miscabled_hosts"] == ["fabric-node3"]
