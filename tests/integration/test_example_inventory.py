"""The example production inventory is accepted by every role, and the check catches what a user could get wrong.

playbooks/check_inventory.yml runs on the controller only (local connection, action plugins and filters): it
validates each host's role variables against the roles' argument specs and runs the bonding, cooling, rdma, nccl
verify, ipsec, routing and health preflight filters and the rollout check on them. The bad-input cases run as one check of
one copy of the inventory: each mistake on a host of its own (a copy of the host it is written for, in the same groups,
with that host's variables and the mistake), so one run shows every mistake refused on its host only and every other
host passing.
"""

import re
import shutil

import pytest
import yaml

from integration_helpers import ROOT, run_logged, tail

CHECK = ROOT / "playbooks" / "check_inventory.yml"
ROLES = ["rdma", "bonding", "routing", "ipsec", "nccl", "cooling", "verify", "health"]
HOST = "gpu-r01-n03"


def run_check(inventory, name):
    return run_logged(name, ["ansible-playbook", "-i", str(inventory), str(CHECK)], timeout=300,
                      env={"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_NOCOLOR": "1"})


def test_every_host_passes_every_role_check():
    rc, out = run_check(ROOT / "inventories" / "example", "example-inventory")
    assert rc == 0, tail(out)
    hosts = re.findall(r"^(\S+)\s+: ok=\d+ +changed=0 +unreachable=0 +failed=0", out, re.M)
    assert len(hosts) == 10, tail(out)
    for host in hosts:
        checked = re.findall(r"^ok: \[%s\] => \(item=(\w+)\)" % re.escape(host), out, re.M)
        assert checked == ROLES, (host, checked)
    # Both preflight filters ran on the HGX hosts, which define bonds and a cooling policy.
    assert re.search(r"TASK \[Check bonds.*\n(?:.*\n)*?ok: \[%s\]" % HOST, out)
    assert re.search(r"TASK \[Check the cooling policy.*\n(?:.*\n)*?ok: \[%s\]" % HOST, out)
    for task in ("RDMA variables", "NCCL variables", "verify variables", "rolling-batch variables", "sampler"):
        assert re.search(r"TASK \[Check the %s.*\n(?:.*\n)*?ok: \[%s\]" % (task, HOST), out), task


BAD_INPUTS = {
    "misspelt variable": ({"rdma_driver_sourc": "inbox"}, "rdma_driver_sourc. Supported parameters include"),
    "wrong type": ({"verify_gate_percent": "ninety"}, "verify_gate_percent"),
    "unknown choice": ({"rdma_driver_source": "ofed"}, "rdma_driver_source"),
    # Each bond is valid on its own (the argument spec accepts it); the bonding preflight filter sees the overlap.
    "member in two bonds": ({"bonding_bonds": [{"name": "bond0", "members": ["ens21f0np0", "ens21f1np1"]},
                                               {"name": "bond1", "members": ["ens21f1np1", "ens22f0np0"]}]},
                            "bonding_bonds[1] (bond1).members[0]: ens21f1np1 is already a member of"),
    # Well-formed but wrong bonding values (issue 14), refused by the same filter as the role's preflight.
    "lacp bond of one member": ({"bonding_bonds": [{"name": "bond0", "members": ["ens21f0np0"]}]},
                                "bonding_bonds[0] (bond0).members: an 802.3ad (LACP) bond needs at least two members"),
    "bond as its own member": ({"bonding_bonds": [{"name": "bond0", "members": ["ens21f0np0", "bond0"]}]},
                               "bonding_bonds[0] (bond0).members[1]: bond0 is the bond itself"),
    "gateway outside the subnet": ({"bonding_vlans": [{"id": 110, "link": "bond0", "addresses": ["10.110.1.5/24"],
                                                       "routes": [{"to": "10.111.0.0/16", "via": "10.9.0.1"}]}]},
                                   "bonding_vlans[0] (bond0.110).routes[0].via: gateway 10.9.0.1 is outside every"),
    "two default routes in one table": (
        {"bonding_vlans": [{"id": 110, "link": "bond0", "addresses": ["10.110.1.5/24"],
                            "routes": [{"to": "default", "via": "10.110.1.1"},
                                       {"to": "default", "via": "10.110.1.2"}]}]},
        "bonding_vlans[0] (bond0.110).routes[1]: a second IPv4 default route in table main"),
    "overlapping subnets": ({"bonding_vlans": [{"id": 110, "link": "bond0", "addresses": ["10.110.1.5/16"]},
                                               {"id": 111, "link": "bond0", "addresses": ["10.110.7.5/24"]}]},
                            "bonding_vlans[1] (bond0.111).addresses[0]: 10.110.7.5/24 overlaps"),
    # The bonding role's rollback-window rule, applied by check_inventory.yml since it runs bonding_problems.
    "rollback window shorter than the confirmation": ({"bonding_rollback_timeout": 60},
                                                      "bonding_rollback_timeout (60 s) must be at least"),
    "falling fan curve": ({"cooling_zones": {"gpu": {"sensors": [{"backend": "nvml", "selector": "max"}],
                                                     "curve": [{"temp": 40, "duty": 80}, {"temp": 70, "duty": 50}]}}},
                          "cooling_zones.gpu.curve[1]"),
    # Values of the right type that the rdma, nccl and verify preflights refuse (issue 14): before, check_inventory
    # did not apply those roles' rules, and the old patterns let a trailing newline through.
    "memlock limit with a trailing newline": ({"rdma_memlock_limit": "unlimited\n"},
                                              "rdma_memlock_limit: must be 'unlimited' or a positive size in KiB"),
    "nccl conf path escaping etc-nccl": ({"nccl_conf_path": "/etc/nccl/../../etc/passwd"},
                                         "nccl_conf_path: must be under /etc/nccl/ or /etc/nccl.conf; /etc/passwd"),
    "nccl variable with a carriage return": ({"nccl_variables": {"NCCL_IB_TIMEOUT": "22\r"}},
                                             "nccl_variables.NCCL_IB_TIMEOUT: the value"),
    "verify gate percent 0": ({"verify_gate_percent": 0}, "verify_gate_percent: must be a share of the port rate"),
    "gpufabric_serial 0": ({"gpufabric_serial": 0}, "gpufabric_serial: must be at least 1 host per batch"),
    # Cooling values of the right type that would leave fans low (issue 14).
    "fan group duty above 100 percent": (
        {"cooling_fan_groups": {"chassis": {"backend": "redfish", "target": "/redfish/v1/Chassis/1/Controls/ChassisFans",
                                            "body": {"ControlMode": "Manual", "SetPoint": "{duty}"},
                                            "zones": ["gpu", "inlet"], "min_duty": 382}}},
        "cooling_fan_groups.chassis.min_duty: must be a number 0-100 (%), got 382"),
    "curve that never reaches full duty": (
        {"cooling_zones": {"gpu": {"sensors": [{"backend": "nvml", "selector": "max"}], "critical_temp": 150,
                                   "curve": [{"temp": 40, "duty": 35}, {"temp": 150, "duty": 35}]}}},
        "cooling_zones.gpu.curve: must reach 100 % duty at or below critical_temp 150 C"),
    "leak action command as a string": (
        {"cooling_liquid": {"leak_action": "shutdown", "shutdown_command": "systemctl poweroff",
                            "cdus": {"1": {"supply_temp_max": 40, "action": "alert"}}}},
        "cooling_liquid.shutdown_command: must be an argument list"),
    "redfish over plain http": (
        {"cooling_bmc": {"redfish": {"base_url": "http://{{ bmc_address }}", "user": "admin", "password": "x"}}},
        "cooling_bmc.redfish.base_url: 'http://10.99.1.13' is plain http"),
    # An IPsec host (the inference racks' mesh): a null cipher passes the type check and is refused.
    "null esp cipher": ({"ipsec_esp_proposals": ["null-sha256"]}, "ipsec_esp_proposals[0]: null is refused", "inf-r03-n01"),
    # The health role's rules (issue 39): an alert threshold out of range, a rate no NIC reaches, a label that
    # would split a Prometheus series, a listen address that is neither an address nor a name.
    "health threshold out of range": ({"health_thresholds": {"leaf_min_ratio": 1.5}},
                                      "health_thresholds.leaf_min_ratio: 1.5 is out of range (0.01 to 1)"),
    "expected rate no nic reaches": ({"health_rails": [{"rail": "rail0", "netdev": "ens1", "expected_rate_gbps": 4000}]},
                                     "health_rails[0].expected_rate_gbps: 4000 Gb/s is a rate no NIC reaches"),
    "target label with a newline": ({"health_target_labels": {"rack": "r01\nr02"}},
                                    "health_target_labels.rack: a target label must not hold a line break"),
    "listen address with a space": ({"health_listen_address": "gpu r01"},
                                     "health_listen_address: 'gpu r01' is neither an IP address nor a host name"),
    "routing asn out of range": ({"routing_asn": 4294967296, "routing_uplinks": [
        {"interface": "ens1", "peer": "10.0.0.1", "remote_asn": 65001}]}, "routing_asn: 4294967296 is outside 1-4294967295"),
}


# The ipsec case stays on its own host: a copy would join the mesh with the same address and be refused for that.
IN_PLACE = {"null esp cipher"}


def case_parts(case):
    """(overrides, expected message, the host it is written for)."""
    return (BAD_INPUTS[case] + (HOST,))[:3]


def mistake_host(case):
    base = case_parts(case)[2]
    return base if case in IN_PLACE else "mistake-" + case.replace(" ", "-").replace("_", "-")


@pytest.fixture(scope="module")
def mistakes_checked(tmp_path_factory):
    inventory = tmp_path_factory.mktemp("mistakes") / "inventory"
    shutil.copytree(ROOT / "inventories" / "example", inventory)
    hosts = yaml.safe_load((inventory / "hosts.yml").read_text())
    groups, host_entries = {}, {}

    def find_groups(name, group):
        for host, entry in (group.get("hosts") or {}).items():
            groups.setdefault(host, []).append(name)
            if entry:
                host_entries[host] = entry
        for child_name, child in (group.get("children") or {}).items():
            find_groups(child_name, child or {})

    find_groups("all", hosts["all"])
    added = {}
    for case in BAD_INPUTS:
        overrides, _expected, base = case_parts(case)
        host = mistake_host(case)
        base_vars = inventory / "host_vars" / f"{base}.yml"
        merged = dict(yaml.safe_load(base_vars.read_text()) if base_vars.exists() else {}, **overrides)
        (inventory / "host_vars" / f"{host}.yml").write_text(yaml.safe_dump(merged))
        if host != base:
            # In the same groups, with the same ansible_host: the group variables derive the addresses from it.
            for group in groups[base]:
                added.setdefault(group, {})[host] = host_entries[base]
    # A second inventory source in the same directory adds the copies to their groups.
    (inventory / "mistakes.yml").write_text(yaml.safe_dump(
        {"all": {"children": {group: {"hosts": members} for group, members in added.items()}}}))
    rc, out = run_check(inventory, "example-inventory-mistakes")
    failed = dict(re.findall(r"^(\S+)\s+: ok=\d+ +changed=\d+ +unreachable=\d+ +failed=(\d+)", out, re.M))
    return {"rc": rc, "out": out, "failed": failed, "hosts": sorted(groups)}


def test_every_mistake_fails_its_own_host_only(mistakes_checked):
    rc, out, failed, hosts = (mistakes_checked[key] for key in ("rc", "out", "failed", "hosts"))
    assert rc != 0, tail(out)
    bad = {mistake_host(case) for case in BAD_INPUTS}
    assert {host for host, count in failed.items() if count != "0"} == bad, tail(out)
    # Every host of the example inventory that carries no mistake still passes in the same run.
    assert set(hosts) - bad <= {host for host, count in failed.items() if count == "0"}, tail(out)


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_a_mistake_in_host_vars_fails_naming_the_variable(mistakes_checked, case):
    out = mistakes_checked["out"]
    host = mistake_host(case)
    expected = case_parts(case)[1]
    failures = [line for line in out.splitlines() if line.startswith(("fatal: [%s]" % host, "failed: [%s]" % host))]
    assert failures and expected in "\n".join(failures), (host, failures)
