"""The example production inventory is accepted by every role, and the check catches what a user could get wrong.

playbooks/check_inventory.yml runs on the controller only (local connection, action plugins and filters): it
validates each host's role variables against the roles' argument specs and runs the bonding, cooling, rdma, nccl
verify, ipsec, routing and health preflight filters, the rollout check and the check of what two hosts both claim. The
bad-input cases run as one check of one copy of the inventory: each mistake on a host of its own (a copy of the host
it is written for, in the same groups, with that host's variables, an address of its own and the mistake), so one
run shows every mistake refused on its host only (and, for a claim two hosts make, on the other host too, naming
both) and every other host passing. A case that carries a secret (a BMC password) checks it appears nowhere in
the output.
"""

import re
import shutil

import pytest
import yaml

from integration_helpers import ROOT, run_logged, tail

CHECK = ROOT / "playbooks" / "check_inventory.yml"
ROLES = ["rdma", "bonding", "routing", "ipsec", "nccl", "cooling", "verify", "health", "remediation"]
HOST = "gpu-r01-n03"


def run_check(inventory, name, fact_cache=None):
    env = {"ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default", "ANSIBLE_NOCOLOR": "1"}
    if fact_cache:
        env["ANSIBLE_CACHE_PLUGIN_CONNECTION"] = str(fact_cache)
    return run_logged(name, ["ansible-playbook", "-i", str(inventory), str(CHECK)], timeout=300, env=env)


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


def test_facts_cached_by_an_earlier_run_are_not_misspelt_variables(tmp_path):
    # What the rdma role's rdma_config module returns as facts, kept by the jsonfile fact cache (ansible.cfg) as a
    # converge keeps them: they come back as variables of the same name, which the misspelt-variable check once
    # refused on every host. set_fact with cacheable writes the cache the way a module's facts are written.
    rc, out = run_logged("example-inventory-cache-facts", [
        "ansible", "-i", str(ROOT / "inventories" / "example"), HOST, "-m", "ansible.builtin.set_fact",
        "-a", "rdma_reboot_required=false rdma_reboot_reasons=[] cacheable=true"], timeout=120,
        env={"ANSIBLE_CACHE_PLUGIN_CONNECTION": str(tmp_path)})
    assert rc == 0 and list(tmp_path.iterdir()), out
    rc, out = run_check(ROOT / "inventories" / "example", "example-inventory-cached-facts", fact_cache=tmp_path)
    assert rc == 0, tail(out)
    assert "Misspelt variables" not in out, tail(out)


BAD_INPUTS = {
    "misspelt variable": ({"rdma_driver_sourc": "inbox"}, "rdma_driver_sourc. Supported parameters include"),
    # A misspelt prefix, which no argument spec sees: Ansible ignored it and the rate gate accepted any rate.
    "misspelt prefix": ({"rmda_expected_rate_gbps": 400}, "rmda_expected_rate_gbps: no role or playbook of "
                                                          "gpufabric.core reads this variable; did you mean "
                                                          "rdma_expected_rate_gbps?"),
    "misspelt fleet variable": ({"gpufabric_rail_interface": ["eth1"]}, "did you mean gpufabric_rail_interfaces?"),
    # One run names every mistake of a host: each check runs whatever an earlier one found.
    "three mistakes at once": ({"rdma_driver_source": "ofed", "rmda_expected_rate_gbps": 400,
                                "bonding_bonds": [{"name": "bond0", "members": ["ens21f0np0"]}]},
                               "3 check(s) failed for this host"),
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
    # Each copy's addresses are its own (.61, .62, .63): two hosts may not claim one.
    "gateway outside the subnet": ({"bonding_vlans": [{"id": 110, "link": "bond0", "addresses": ["10.110.1.61/24"],
                                                       "routes": [{"to": "10.111.0.0/16", "via": "10.9.0.1"}]}]},
                                   "bonding_vlans[0] (bond0.110).routes[0].via: gateway 10.9.0.1 is outside every"),
    "two default routes in one table": (
        {"bonding_vlans": [{"id": 110, "link": "bond0", "addresses": ["10.110.1.62/24"],
                            "routes": [{"to": "default", "via": "10.110.1.1"},
                                       {"to": "default", "via": "10.110.1.2"}]}]},
        "bonding_vlans[0] (bond0.110).routes[1]: a second IPv4 default route in table main"),
    "overlapping subnets": ({"bonding_vlans": [{"id": 110, "link": "bond0", "addresses": ["10.110.1.63/16"]},
                                               {"id": 111, "link": "bond0", "addresses": ["10.110.7.63/24"]}]},
                            "bonding_vlans[1] (bond0.111).addresses[0]: 10.110.7.63/24 overlaps"),
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
        {"cooling_bmc": {"redfish": {"base_url": "http://10.99.1.240", "user": "admin", "password": "x"}}},
        "cooling_bmc.redfish.base_url: 'http://10.99.1.240' is plain http"),
    # An IPsec host (the inference racks' mesh): a null cipher passes the type check and is refused.
    "null esp cipher": ({"ipsec_esp_proposals": ["null-sha256"]}, "ipsec_esp_proposals[0]: null is refused", "inf-r03-n01"),
    # The health role's rules (issue 39): an alert threshold out of range, a rate no NIC reaches, a label that
    # would split a Prometheus series, a listen address that is neither an address nor a name.
    "health threshold out of range": ({"health_thresholds": {"leaf_min_ratio": 1.5}},
                                      "health_thresholds.leaf_min_ratio: 1.5 is out of range (0.01 to 1)"),
    "expected rate no nic reaches": ({"health_rails": [{"rail": "rail0", "netdev": "ens1", "expected_rate_gbps": 4000}]},
                                     "health_rails[0].expected_rate_gbps: 4000 Gb/s is a rate no NIC reaches"),
    # Issue 47: two rails alike made the sampler export one series twice, and every sample of its ports failed.
    "health rail listed twice": ({"health_rails": [{"rail": "rail0", "netdev": "ens1"}, {"rail": "rail0", "netdev": "ens1"}]},
                                 "health_rails[0] and health_rails[1] both name rail rail0: each rail is listed once"),
    "target label with a newline": ({"health_target_labels": {"rack": "r01\nr02"}},
                                    "health_target_labels.rack: a target label must not hold a line break"),
    "listen address with a space": ({"health_listen_address": "gpu r01"},
                                    "health_listen_address: 'gpu r01' is neither an IP address nor a host name"),
    "health textfile dir adding an environment line": (
        {"health_textfile_dir": '/var/lib/prometheus/node-exporter"\nLD_PRELOAD=/tmp/x.so'},
        "health_textfile_dir: must be an absolute path of letters"),
    "bonding state dir adding a unit line": ({"bonding_state_dir": "/var/lib/gpufabric/bonding\nExecStartPre=/bin/true"},
                                             "bonding_state_dir: must be an absolute directory of letters"),
    "remediation peer group not in the inventory": ({"remediation_peer_group": "gpu_node"},
                                                    "remediation_peer_group: 'gpu_node' is not a group of the inventory"),
    "routing asn out of range": ({"routing_asn": 4294967296, "routing_uplinks": [
        {"interface": "ens1", "peer": "10.0.0.1", "remote_asn": 65001}]}, "routing_asn: 4294967296 is outside 1-4294967295"),
    # Issue 40: hostile and careless values that passed before.
    "bond member pattern": ({"bonding_bonds": [{"name": "bond0", "members": ["ens21f0np0", "en*"], "mtu": 9000}]},
                            "bonding_bonds[0] (bond0).members[1]: 'en*' is a pattern, not an interface name"),
    "bond member with an escape character": (
        {"bonding_bonds": [{"name": "bond0", "members": ["ens21f0np0", "ens\x1bx"], "mtu": 9000}]},
        "bonding_bonds[0] (bond0).members[1]: 'ens"),
    "bonding miimon 0": ({"bonding_miimon": 0}, "bonding_miimon: 0 is out of range 1-10000"),
    "bonding mtu 100000": ({"bonding_mtu": 100000}, "bonding_mtu: 100000 is out of range 1280-9216"),
    "nccl value of 200 kB": ({"nccl_variables": {"NCCL_IB_HCA": "mlx5_0:1," * 22222}},
                             "nccl_variables.NCCL_IB_HCA: 199998 characters, more than the 4096"),
    "module option ending in a backslash": ({"rdma_module_options": {"ib_uverbs": "disable_raw_qp_encap=1 \\"}},
                                            "rdma_module_options.ib_uverbs: must be a non-empty one-line option"),
    "infinite expected rate": ({"rdma_expected_rate_gbps": float("inf")},
                               "rdma_expected_rate_gbps: must be a number of at least 0"),
    "nan threshold": ({"verify_thresholds_gbps": {"hgx_h100": float("nan")}},
                      "verify_thresholds_gbps.hgx_h100: must be a positive number; got nan"),
    "cooling stale after a day": ({"cooling_stale_after": 86400}, "cooling_stale_after: must be at most 120 seconds"),
    "metrics file etc passwd": ({"cooling_metrics_file": "/etc/passwd"},
                                "cooling_metrics_file: must be under /var/lib/ or under /run/"),
    "redfish endpoint as a list": (
        {"cooling_bmc": {"redfish": [{"base_url": "https://10.99.1.250", "user": "admin", "password": "Pw-list-0xC0FFEE"}]}},
        "cooling_bmc.redfish: must be a mapping (base_url, user, password, auth, verify_tls ...), got a list",
        HOST, (), "Pw-list-0xC0FFEE"),
    "password in the redfish url": (
        {"cooling_bmc": {"redfish": {"base_url": "https://admin:Pw-url-0xBEEF@10.99.1.251", "user": "admin",
                                     "password": "Pw-url-0xBEEF"}}},
        "cooling_bmc.redfish.base_url: must be the BMC's https://HOST[:PORT] without a user or password",
        HOST, (), "Pw-url-0xBEEF"),
    "cooling bmc as a list": ({"cooling_bmc": [{"redfish": {"base_url": "https://10.99.1.252", "password": "Pw-bmc-0xD00D"}}]},
                              "argument 'cooling_bmc' is of type list", HOST, (), "Pw-bmc-0xD00D"),
    "ipmi cipher suite 0": ({"cooling_bmc": {"ipmi": {"host": "10.99.3.253", "user": "fabric-bmc", "password": "Pw-ipmi-0xF00",
                                                      "interface": "lanplus", "cipher_suite": 0}}},
                            "cooling_bmc.ipmi.cipher_suite: 0 is refused (no authentication, no integrity",
                            "inf-r03-n01", (), "Pw-ipmi-0xF00"),
    # What two hosts claim: both fail, each naming the other. The group variables derive the storage and BMC
    # addresses from these two variables.
    "same storage address": ({"storage_address": "10.110.1.11/24"},
                             "address '10.110.1.11/24' is claimed by two hosts: gpu-r01-n01 (bonding_vlans[0].addresses[0])"
                             " and mistake-same-storage-address (bonding_vlans[0].addresses[0])", HOST, ("gpu-r01-n01",)),
    "same bmc address": ({"bmc_address": "10.99.1.12", "gpufabric_bmc_password": "Pw-shared-0xBAD"},
                         "address '10.99.1.12' is claimed by two hosts: gpu-r01-n02 (cooling_bmc.redfish.base_url) and "
                         "mistake-same-bmc-address (cooling_bmc.redfish.base_url)", HOST, ("gpu-r01-n02",),
                         "Pw-shared-0xBAD"),
    # Issue 47: one IPMI BMC on two hosts (two copies: inf-r03-n02 is needed by the ipsec cases' checks, which a host
    # failed on a clash no longer runs), and a BMC written in a form the resolver reads as another host's (a leading
    # 0 is octal: 10.99.1.013 is 10.99.1.11, gpu-r01-n01's).
    "same ipmi bmc address a": ({"bmc_address": "10.99.3.250"},
                                "address '10.99.3.250' is claimed by two hosts: mistake-same-ipmi-bmc-address-a "
                                "(cooling_bmc.ipmi.host) and mistake-same-ipmi-bmc-address-b (cooling_bmc.ipmi.host)",
                                "inf-r03-n01", ("mistake-same-ipmi-bmc-address-b",)),
    "same ipmi bmc address b": ({"bmc_address": "10.99.3.250"},
                                "address '10.99.3.250' is claimed by two hosts: mistake-same-ipmi-bmc-address-a "
                                "(cooling_bmc.ipmi.host) and mistake-same-ipmi-bmc-address-b (cooling_bmc.ipmi.host)",
                                "inf-r03-n01", ("mistake-same-ipmi-bmc-address-a",)),
    "bmc address written in octal": ({"bmc_address": "10.99.1.013"},
                                     "(cooling_bmc.redfish.base_url); each host needs its own ('10.99.1.11' and "
                                     "'10.99.1.013' are one address, 10.99.1.11, as the resolver reads them)",
                                     HOST, ("gpu-r01-n01",)),
    # A host whose variables cannot be rendered fails alone: the comparison of all hosts skips it.
    "undefined variable in an address": ({"storage_address": "{{ undefined_storage_address }}"},
                                         "'undefined_storage_address' is undefined"),
    # The IPsec mesh (the inference racks): no member may pass for another.
    "ipsec identity of a peer": ({"ipsec_identity": "inf-r03-n02"},
                                 "mistake-ipsec-identity-of-a-peer's ipsec_identity 'inf-r03-n02' is also inf-r03-n02's "
                                 "inventory name", "inf-r03-n01", ("inf-r03-n02",)),
    "peer name in certificate names": ({"ipsec_pki_cert_names": ["inf-r03-n02"]},
                                       "ipsec_pki_cert_names[0] 'inf-r03-n02' is also inf-r03-n02's inventory name",
                                       "inf-r03-n01", ("inf-r03-n02",)),
    "duplicate ipsec identity a": ({"ipsec_identity": "inference.fabric.example.org"},
                                   "(hosts mistake-duplicate-ipsec-identity-a and mistake-duplicate-ipsec-identity-b)",
                                   "inf-r03-n01", ("mistake-duplicate-ipsec-identity-b",)),
    "duplicate ipsec identity b": ({"ipsec_identity": "inference.fabric.example.org"},
                                   "(hosts mistake-duplicate-ipsec-identity-a and mistake-duplicate-ipsec-identity-b)",
                                   "inf-r03-n01", ("mistake-duplicate-ipsec-identity-a",)),
    "same ipsec address a": ({"ipsec_address": "10.30.3.50"},
                             "ipsec_address '10.30.3.50' is also mistake-same-ipsec-address-a's ipsec_address",
                             "inf-r03-n01", ("mistake-same-ipsec-address-b",)),
    "same ipsec address b": ({"ipsec_address": "10.30.3.50"},
                             "ipsec_address '10.30.3.50' is also mistake-same-ipsec-address-a's ipsec_address",
                             "inf-r03-n01", ("mistake-same-ipsec-address-a",)),
    "duplicate gateway names": ({"ipsec_gateways": [
        {"name": "dc-gw", "address": "10.40.0.1", "id": "gw1.fabric.example.org", "networks": ["10.200.0.0/16"]},
        {"name": "dc-gw", "address": "10.40.0.2", "id": "gw2.fabric.example.org", "networks": ["10.201.0.0/16"]}]},
        "ipsec_gateways[1].name: 'dc-gw' is also the name of ipsec_gateways[0]", "inf-r03-n01"),
    # Issue 47: the CA in a temporary folder, a BMC timeout with a unit, thresholds Prometheus cannot read.
    "ipsec pki dir under tmp": ({"ipsec_pki_dir": "/tmp/gpufabric-pki"},
                                "ipsec_pki_dir: /tmp/gpufabric-pki is under /tmp, a temporary folder", "inf-r03-n01"),
    "ipmi timeout with a unit": (
        {"cooling_bmc": {"ipmi": {"host": "10.99.3.254", "user": "fabric-bmc", "password": "Pw-timeout-0xA",
                                  "interface": "lanplus", "cipher_suite": 3, "timeout": "5s"}}},
        "cooling_bmc.ipmi.timeout: must be whole seconds, an integer 1-60 (ipmitool -N takes no fraction and no unit",
        "inf-r03-n01", (), "Pw-timeout-0xA"),
    "health threshold with an underscore": ({"health_thresholds": {"pause_frames_per_second": "1_000"}},
                                            "health_thresholds.pause_frames_per_second: '1_000' is not a number as "
                                            "Prometheus reads one"),
    "health threshold in arabic-indic digits": ({"health_thresholds": {"flap_changes": "\u0664"}},
                                                "health_thresholds.flap_changes: must be a whole number written as a "
                                                "YAML number (4, not '4' or 4.5)"),
    "zero flap window": ({"health_thresholds": {"flap_window": "0s"}},
                         "health_thresholds.flap_window: 0s is a window of less than a second"),
    "quoted leaf min hosts": ({"health_thresholds": {"leaf_min_hosts": "2"}},
                              "health_thresholds.leaf_min_hosts: must be a whole number written as a YAML number "
                              "(2, not '2' or 2.5)"),
}


# The ipsec case stays on its own host: a copy would join the mesh with the same address and be refused for that.
IN_PLACE = {"null esp cipher"}


def case_parts(case):
    """(overrides, expected message, the host it is written for, the other hosts it fails, a secret it holds)."""
    return (BAD_INPUTS[case] + (HOST, (), None)[len(BAD_INPUTS[case]) - 2:])[:5]


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
    for number, case in enumerate(BAD_INPUTS):
        overrides, _expected, base = case_parts(case)[:3]
        host = mistake_host(case)
        # The base's own variables as the example has them, not with a mistake written in place before.
        base_vars = ROOT / "inventories" / "example" / "host_vars" / f"{base}.yml"
        merged = dict(yaml.safe_load(base_vars.read_text()) if base_vars.exists() else {}, **overrides)
        (inventory / "host_vars" / f"{host}.yml").write_text(yaml.safe_dump(merged))
        if host != base:
            # In the same groups, with an ansible_host of its own in the base's subnet: the group variables derive
            # the storage, front-end and BMC addresses from it, and two hosts may not claim one.
            address = host_entries[base]["ansible_host"].rsplit(".", 1)[0] + ".%d" % (100 + number)
            for group in groups[base]:
                added.setdefault(group, {})[host] = dict(host_entries[base], ansible_host=address)
    # A second inventory source in the same directory adds the copies to their groups.
    (inventory / "mistakes.yml").write_text(yaml.safe_dump(
        {"all": {"children": {group: {"hosts": members} for group, members in added.items()}}}))
    rc, out = run_check(inventory, "example-inventory-mistakes")
    failed = dict(re.findall(r"^(\S+)\s+: ok=\d+ +changed=\d+ +unreachable=\d+ +failed=(\d+)", out, re.M))
    return {"rc": rc, "out": out, "failed": failed, "hosts": sorted(groups)}


def failures_of(out, host):
    return [line for line in out.splitlines() if line.startswith(("fatal: [%s]" % host, "failed: [%s]" % host))]


def test_every_mistake_fails_its_own_host_only(mistakes_checked):
    rc, out, failed, hosts = (mistakes_checked[key] for key in ("rc", "out", "failed", "hosts"))
    assert rc != 0, tail(out)
    bad = {mistake_host(case) for case in BAD_INPUTS}
    # A claim two hosts make fails the other host too (it is named in the sentence, test below).
    others = {peer for case in BAD_INPUTS for peer in case_parts(case)[3]}
    assert {host for host, count in failed.items() if count != "0"} == bad | others, tail(out)
    # Every host of the example inventory that carries no mistake still passes in the same run.
    assert set(hosts) - bad - others <= {host for host, count in failed.items() if count == "0"}, tail(out)


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_a_mistake_in_host_vars_fails_naming_the_variable(mistakes_checked, case):
    out = mistakes_checked["out"]
    host = mistake_host(case)
    expected = case_parts(case)[1]
    failures = failures_of(out, host)
    assert failures and expected in "\n".join(failures), (host, failures)


@pytest.mark.parametrize("case", sorted(case for case in BAD_INPUTS if case_parts(case)[3]))
def test_a_claim_of_two_hosts_fails_both_naming_each_other(mistakes_checked, case):
    out = mistakes_checked["out"]
    for peer in case_parts(case)[3]:
        failures = "\n".join(failures_of(out, peer))
        assert mistake_host(case) in failures and peer in failures, (peer, failures)


@pytest.mark.parametrize("case", sorted(case for case in BAD_INPUTS if case_parts(case)[4]))
def test_a_refused_secret_is_never_printed(mistakes_checked, case):
    out = mistakes_checked["out"]
    assert failures_of(out, mistake_host(case)), case
    assert case_parts(case)[4] not in out


def test_a_long_value_is_named_not_printed(mistakes_checked):
    assert "mlx5_0:1," * 100 not in mistakes_checked["out"]


def test_one_run_names_every_mistake_of_a_host_without_printing_the_argument_spec(mistakes_checked):
    failures = "\n".join(failures_of(mistakes_checked["out"], mistake_host("three mistakes at once")))
    for expected in ("rdma_driver_source", "did you mean rdma_expected_rate_gbps?",
                     "an 802.3ad (LACP) bond needs at least two members"):
        assert expected in failures, (expected, failures)
    # A failed argument-spec check used to print the whole spec with its error, about 12 kB a host and role.
    assert "argument_spec_data" not in mistakes_checked["out"]
