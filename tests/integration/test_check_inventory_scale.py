"""check_inventory at fleet size: the issue's mistakes on every host of a 3-host and a 500-host inventory.

Each host carries the four mistakes of issue #50 (a role prefix misspelt, `gpufabric_rail_interface` for
`gpufabric_rail_interfaces`, a bond's members as one string, a string where a number is expected). One run names
all of them for every host, one line a problem, and never prints an argument spec or ansible-core's internals: the
output grows with the hosts, not with the size of the specs (it was about 12 kB per host and item before).
"""

import os
import re
import shutil

import pytest
import yaml

from integration_helpers import ROOT, run_logged, tail

CHECK = ROOT / "playbooks" / "check_inventory.yml"
RACK_SIZE = 100
MISTAKES = {
    "rmda_expected_rate_gbps": 400,
    "gpufabric_rail_interface": ["ens1f0np0", "ens2f0np0"],
    "bonding_bonds": [{"name": "bond0", "members": "ens21f0np0,ens21f1np1", "mtu": 9000, "min_links": 1}],
    "rdma_expected_rate_gbps": "fast",
}


def fleet_inventory(path, hosts):
    """The example inventory's model and fleet variables for `hosts` HGX hosts in racks of 100, every host in the
    group `mistakes`."""
    shutil.copytree(ROOT / "inventories" / "example" / "group_vars", path / "group_vars")
    rack_vars = (path / "group_vars" / "rack_r01.yml").read_text()
    for old in path.glob("group_vars/rack_r0*.yml"):
        old.unlink()
    racks = {}
    for index in range(hosts):
        rack = index // RACK_SIZE + 1
        racks.setdefault(rack, {})["gen-g%d-n%03d" % (rack, index % RACK_SIZE)] = {
            "ansible_host": "10.21.%d.%d" % (rack, 10 + index % RACK_SIZE)}
    for rack in racks:
        text = rack_vars.replace("r01", "g%d" % rack)
        for prefix in ("10.99.", "10.110.", "10.120."):
            text = text.replace(prefix + "1.", "%s%d." % (prefix, 100 + rack))
        (path / "group_vars" / ("rack_g%d.yml" % rack)).write_text(text)
    models = {host: entry for members in racks.values() for host, entry in members.items()}
    # The mistakes group is a child of the model group: a deeper group's variables win.
    mistakes = {"mistakes": {"hosts": {host: None for host in models}}}
    children = {"gpu_nodes": {"children": {"hgx_h100": {"hosts": models, "children": mistakes}}}}
    children.update({"rack_g%d" % rack: {"hosts": {host: None for host in members}} for rack, members in racks.items()})
    (path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": children}}))
    (path / "group_vars" / "mistakes.yml").write_text(yaml.safe_dump(MISTAKES))
    return path


def check(tmp_path, hosts):
    inventory = fleet_inventory(tmp_path / "inventory", hosts)
    env = {"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORKS": "50"}
    return run_logged("check-inventory-%d-hosts" % hosts, ["ansible-playbook", "-i", str(inventory), str(CHECK)],
                      timeout=3600, env=env)


# 500 hosts take about 20 minutes of a shared 2-core machine: run with GPUFABRIC_CHECK_FLEET_HOSTS=500.
FLEET_SIZES = [3] + [int(n) for n in os.environ.get("GPUFABRIC_CHECK_FLEET_HOSTS", "").split(",") if n.strip()]


@pytest.mark.parametrize("hosts", FLEET_SIZES)
def test_every_mistake_of_every_host_in_one_compact_run(tmp_path, hosts):
    rc, out = check(tmp_path, hosts)
    assert rc == 2, tail(out)
    size = len(out.encode())
    print("check_inventory, %d hosts with 4 mistakes each: %d bytes, %d lines, %.0f bytes a host"
          % (hosts, size, out.count("\n"), size / hosts))
    final = [line for line in out.splitlines() if line.startswith("fatal: [") and "check(s) failed" in line]
    assert len(final) == hosts, tail(out)
    for line in final:
        assert "did you mean rdma_expected_rate_gbps?" in line, line
        assert "gpufabric_rail_interfaces" in line, line
        assert "members" in line and "list" in line, line
        assert "rdma_expected_rate_gbps" in line and "fast" in line, line
    assert "argument_spec_data" not in out and "_AnsibleTaggedStr" not in out
    # Compact: each host's problems are printed twice (by its check, then in its last task's one line), never a spec.
    assert size / hosts < 6000, size
    assert not re.search(r"^.{20000,}$", out, re.M)
