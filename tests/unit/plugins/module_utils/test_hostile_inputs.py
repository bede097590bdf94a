# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hostile and careless inventories, round two (issue 40): each value here passed the problems filters before.

Every case goes through the function the role's preflight and playbooks/check_inventory.yml share, and asserts the
sentence names the variable; the secret cases also assert the secret is in no message, whatever the input's shape.
"""

from __future__ import annotations

import copy
import socket
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.filter.cooling_policy_problems import FilterModule as CoolingFilters
from ansible_collections.gpufabric.core.plugins.filter.inventory_problems import FilterModule as InventoryFilters
from ansible_collections.gpufabric.core.plugins.module_utils.bonding.inputs import bonding_problems
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import as_number, masked, path_problems
from ansible_collections.gpufabric.core.plugins.module_utils.nccl.inputs import nccl_problems
from ansible_collections.gpufabric.core.plugins.module_utils.rdma.inputs import rdma_problems
from ansible_collections.gpufabric.core.plugins.module_utils.verify.inputs import verify_problems

ROOT = Path(__file__).resolve().parents[4]
SECRET = "S3cret-BMC-pw!"
cooling_policy_problems = CoolingFilters().filters()["cooling_policy_problems"]
inventory_problems = InventoryFilters().filters()["inventory_problems"]


def defaults(role):
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())


BOND = {"name": "bond0", "members": ["ens21f0np0", "ens21f1np1"], "mtu": 9000}


def bonding(**overrides):
    return bonding_problems(dict({"bonding_bonds": [BOND]}, **overrides))


# Bonding

@pytest.mark.parametrize("member", ["*", "!eth0", "en*", "ens?", "ens[12]"])
def test_bond_member_patterns_are_refused(member):
    """systemd-networkd and netplan read these as patterns: every NIC they match would join the bond."""
    problems = bonding(bonding_bonds=[dict(BOND, members=["ens21f0np0", member])])
    assert problems == ["bonding_bonds[0] (bond0).members[1]: %r is a pattern, not an interface name: "
                        "systemd-networkd and netplan would match every interface it fits (* ? [ ] and a leading ! "
                        "are pattern characters) (members are interface names or MAC addresses)" % member]


@pytest.mark.parametrize("character", ["\x00", "\x1b", "\x7f"], ids=["NUL", "ESC", "DEL"])
def test_bond_and_member_names_with_control_characters_are_refused(character):
    problems = bonding(bonding_bonds=[{"name": "bond" + character, "members": ["ens1"]}])
    assert len(problems) == 1 and problems[0].startswith("bonding_bonds[0] (%r).name: %r is not an interface name"
                                                         % ("bond" + character, "bond" + character)), problems
    problems = bonding(bonding_bonds=[dict(BOND, members=["ens21f0np0", "ens" + character])])
    assert len(problems) == 1 and "members[1]: %r is not an interface name" % ("ens" + character) in problems[0]
    # The message shows the character escaped: nothing raw reaches a terminal or a log.
    assert not any(character in problem for problem in problems)


@pytest.mark.parametrize("state_dir", ["/var/lib/gpufabric/bonding\nExecStartPre=/bin/sh -c id",
                                       "/var/lib/gpu fabric", "var/lib/gpufabric", '/var/lib/"gpufabric"'])
def test_a_bonding_state_dir_that_would_change_the_rollback_units_is_refused(state_dir):
    """The directory is written into the rollback units' ExecStart and RequiresMountsFor lines (run as root)."""
    problems = bonding(bonding_state_dir=state_dir)
    assert len(problems) == 1 and problems[0].startswith("bonding_state_dir: must be an absolute directory"), problems


def test_bonding_miimon_zero_is_refused():
    """miimon 0 turns link monitoring off: a dead member stays in the bond."""
    assert bonding(bonding_miimon=0) == ["bonding_miimon: 0 is out of range 1-10000"]
    assert bonding(bonding_bonds=[dict(BOND, miimon=0)]) == ["bonding_bonds[0] (bond0).miimon: 0 is out of range 1-10000"]


@pytest.mark.parametrize("mtu", [100000, 65536, 9217])
def test_bonding_mtu_above_the_limit_is_refused_even_where_no_bond_uses_it(mtu):
    """Every bond here sets its own mtu, so bonding_mtu was never read, and never checked."""
    assert bonding(bonding_mtu=mtu) == ["bonding_mtu: %d is out of range 1280-9216" % mtu]
    assert bonding_problems({"bonding_mtu": mtu}) == ["bonding_mtu: %d is out of range 1280-9216" % mtu]


# NCCL, RDMA, verify: lengths from what reads them, no line continuation, no infinity

def test_nccl_value_too_long_for_an_environment_is_refused():
    """200 kB exported from /etc/profile.d made every command of a login shell fail with E2BIG."""
    value = "mlx5_0:1," * 22222
    problems = nccl_problems(dict(defaults("nccl"), nccl_variables={"NCCL_IB_HCA": value}))
    assert len(problems) == 2, problems
    assert problems[0].startswith("nccl_variables.NCCL_IB_HCA: 199998 characters, more than the 4096 that a login "
                                  "shell's environment (nccl_profile_script_path) takes")
    assert problems[1].startswith("nccl_variables: 200011 bytes of NAME=value strings in all, more than the 32768")
    assert all(len(problem) < 400 for problem in problems), "the value is named, not printed"
    assert nccl_problems(dict(defaults("nccl"), nccl_variables={"NCCL_IB_HCA": "mlx5_0:1," * 400})) == []


def test_nccl_values_too_long_together_are_refused():
    variables = {"NCCL_IB_HCA": "x" * 4000, "NCCL_SOCKET_IFNAME": "y" * 4000, "NCCL_TOPO_FILE": "/" + "z" * 4000,
                 "NCCL_NET_PLUGIN": "p" * 4000, "NCCL_IB_GID_INDEX": "3" * 4000, "NCCL_ALGO": "a" * 4000,
                 "NCCL_PROTO": "b" * 4000, "NCCL_IB_TC": "1" * 4000, "NCCL_IB_SL": "2" * 4000}
    problems = nccl_problems(dict(defaults("nccl"), nccl_variables=variables))
    assert any(p.startswith("nccl_variables: ") and "more than the 32768" in p for p in problems), problems


@pytest.mark.parametrize("options", ["disable_raw_qp_encap=1 \\", "a=1\\", "a=1\nb=2", "a=\\1"])
def test_module_option_ending_in_a_backslash_or_holding_a_newline_is_refused(options):
    """modprobe joins a line ending in a backslash with the next one in /etc/modprobe.d."""
    problems = rdma_problems(dict(defaults("rdma"), rdma_module_options={"ib_uverbs": options}))
    assert [p for p in problems if p.startswith("rdma_module_options.ib_uverbs: must be a non-empty one-line option "
                                                "string without '#' or '\\'")], problems


def test_module_options_longer_than_a_modprobe_line_are_refused():
    problems = rdma_problems(dict(defaults("rdma"), rdma_module_options={"ib_uverbs": "a=" + "1" * 2000}))
    assert any(p.startswith("rdma_module_options.ib_uverbs: 2002 characters, more than the 1024 that a line of "
                            "/etc/modprobe.d takes") for p in problems), problems


@pytest.mark.parametrize("number", [float("inf"), float("-inf"), float("nan"), "nan", "inf"])
def test_inf_and_nan_rates_and_thresholds_are_refused(number):
    """YAML's .inf and .nan are floats: an infinite expected rate or threshold disabled the gate it feeds."""
    rdma = rdma_problems(dict(defaults("rdma"), rdma_expected_rate_gbps=number))
    assert any(p.startswith("rdma_expected_rate_gbps: must be a number") for p in rdma), rdma
    settings = dict(defaults("verify"), verify_report_dir="/srv/reports", verify_gate_percent=number,
                    verify_thresholds_gbps={"hgx": number}, verify_nccl_thresholds_gbytes={"hgx": number})
    names = [p.split(":")[0] for p in verify_problems(settings)]
    assert {"verify_gate_percent", "verify_thresholds_gbps.hgx", "verify_nccl_thresholds_gbytes.hgx"} <= set(names)


@pytest.mark.parametrize("number", ["1_000", "\u0669\u0660", "\u0669\u0660.5", "\uff19\uff10", "0x5A", "90%"])
def test_numbers_python_reads_but_no_config_reader_does_are_refused(number):
    """Python's float() takes "1_000", Arabic-Indic ("\u0669\u0660") and full-width digits (issue 47); the value
    then reached a file as written. A number is ASCII decimal digits, a point and an exponent, nothing else."""
    rdma = rdma_problems(dict(defaults("rdma"), rdma_expected_rate_gbps=number))
    assert any(p.startswith("rdma_expected_rate_gbps: must be a number") for p in rdma), rdma
    settings = dict(defaults("verify"), verify_report_dir="/srv/reports", verify_gate_percent=number,
                    verify_thresholds_gbps={"hgx": number})
    names = [p.split(":")[0] for p in verify_problems(settings)]
    assert {"verify_gate_percent", "verify_thresholds_gbps.hgx"} <= set(names)


@pytest.mark.parametrize("number, value", [("90", 90.0), (" 90.5 ", 90.5), ("1e2", 100.0), (".5", 0.5), (85, 85.0)])
def test_decimal_numbers_as_strings_are_still_read(number, value):
    assert as_number(number) == value


def test_verify_arguments_and_environment_longer_than_their_consumers_take_are_refused():
    settings = dict(defaults("verify"), verify_report_dir="/srv/reports",
                    verify_nccl_mpirun_args=["--mca", "x" * 5000], verify_nccl_environment={"UCX_TLS": "y" * 5000},
                    verify_nccl_binary="/" + "b" * 5000)
    problems = verify_problems(settings)
    assert any(p.startswith("verify_nccl_mpirun_args[1]: 5000 characters, more than the 4096") for p in problems)
    assert any(p.startswith("verify_nccl_environment.UCX_TLS: 5000 characters, more than the 4096") for p in problems)
    assert any(p.startswith("verify_nccl_binary: 5001 characters") for p in problems)


def test_paths_longer_than_path_max_are_refused():
    problems = path_problems("nccl_conf_path", "/etc/nccl/" + "a" * 4100, under=("/etc/nccl",))
    assert len(problems) == 1 and problems[0].startswith(
        "nccl_conf_path: 4110 characters, longer than the kernel's PATH_MAX (4096); got '/etc/nccl/aaa")
    assert problems[0].endswith("... (4110 characters)")


def test_password_in_a_mirror_url_is_never_printed():
    url = "https://mirror-user:%s@mirror.example.org/doca bad/" % SECRET
    problems = rdma_problems(dict(defaults("rdma"), rdma_driver_source="doca", rdma_doca_repo_url=url,
                                  rdma_doca_gpg_key_url="https://mirror.example.org/key.pub"))
    assert any(p.startswith("rdma_doca_repo_url: must be the http(s)") for p in problems), problems
    assert SECRET not in "\n".join(problems) and "mirror-user:<secret>@" in "\n".join(problems)


# Cooling

GOOD = {
    "interval": 5, "stale_after": 20, "on_stop": "full",
    "bmc": {"ipmi": {"host": "192.0.2.10", "user": "fabric-bmc", "password": SECRET, "cipher_suite": 3},
            "redfish": {"base_url": "https://192.0.2.10", "user": "fabric-bmc", "password": SECRET}},
    "zones": {"gpu": {"sensors": [{"backend": "redfish", "selector": "GPU Temp"}], "critical_temp": 87,
                      "curve": [{"temp": 40, "duty": 30}, {"temp": 85, "duty": 100}]}},
    "fan_groups": {"chassis": {"backend": "redfish", "target": "/redfish/v1/Chassis/1/Controls/Fans",
                               "body": {"SetPoint": "{duty}"}, "zones": ["gpu"]}},
    "metrics_file": "/var/lib/prometheus/node-exporter/gpufabric_cooling.prom",
}


def cooling(**changes):
    policy = copy.deepcopy(GOOD)
    policy.update(changes)
    return cooling_policy_problems(policy, prefix="cooling_")


def test_good_policy_passes():
    assert cooling() == []


@pytest.mark.parametrize("bmc, named", [
    ({"redfish": [{"base_url": "https://192.0.2.10", "user": "admin", "password": SECRET}]},
     "cooling_bmc.redfish: must be a mapping (base_url, user, password, auth, verify_tls ...), got a list"),
    ({"redfish": {"base_url": "https://admin:%s@192.0.2.10" % SECRET, "password": "other-secret"}},
     "cooling_bmc.redfish.base_url: must be the BMC's https://HOST[:PORT] without a user or password (set them in "
     "user and password), got 'https://admin:<secret>@192.0.2.10'"),
    ({"ipmi": ["192.0.2.10", "admin", SECRET]},
     "cooling_bmc.ipmi: must be a mapping (host, user, password, interface, cipher_suite ...), got a list"),
    ({"redfish": {"base_url": "https://192.0.2.10", "password": {"vault": SECRET}}},
     "cooling_bmc.redfish.password: must be one line of at most 256 bytes (no BMC takes longer ones); the value is "
     "not shown"),
    ({"redfish": {"base_url": "https://192.0.2.10", "auth": SECRET, "password": SECRET}},
     "cooling_bmc.redfish.auth: must be one of session, basic, got <secret>"),
], ids=["redfish-as-a-list", "password-in-the-url", "ipmi-as-a-list", "password-as-a-mapping",
        "password-copied-into-another-key"])
def test_bmc_password_is_never_printed_whatever_the_shape(bmc, named):
    problems = cooling(bmc=bmc)
    assert named in problems, problems
    assert SECRET not in "\n".join(problems)


def test_cooling_bmc_given_as_a_list_is_named_not_an_attribute_error():
    problems = cooling(bmc=[{"redfish": {"base_url": "https://192.0.2.10", "password": SECRET}}])
    assert problems[0] == "cooling_bmc: must be a mapping (optional ipmi and redfish endpoints), got a list"
    assert SECRET not in "\n".join(problems)


@pytest.mark.parametrize("path, message", [
    ("/etc/passwd", "cooling_metrics_file: must be under /var/lib/ or under /run/ or under /srv/ or under /opt/; "
                    "/etc/passwd is outside"),
    ("gpufabric_cooling.prom", "cooling_metrics_file: must be an absolute file path of letters"),
    ("/var/lib/../../etc/shadow.prom", "cooling_metrics_file: must be written in normal form"),
    ("/var/lib/dpkg/status", "cooling_metrics_file: must end in .prom"),
])
def test_metrics_file_outside_the_textfile_directories_is_refused(path, message):
    """The controller runs as root and replaces this file every cycle."""
    problems = cooling(metrics_file=path)
    assert any(p.startswith(message) for p in problems), problems
    assert cooling(metrics_file="") == []


def test_cooling_stale_after_absurdly_large_is_refused():
    assert cooling(stale_after=86400) == [
        "cooling_stale_after: must be at most 120 seconds: fans would hold their duty on readings that old while the "
        "GPUs heat up, got 86400"]
    assert cooling(interval=60, stale_after=120) == []


@pytest.mark.parametrize("suite", [0, 1, 2, 6, 7, 11, 15, 16])
def test_ipmi_cipher_suites_without_authentication_integrity_or_encryption_are_refused(suite):
    problems = cooling(bmc=dict(GOOD["bmc"], ipmi=dict(GOOD["bmc"]["ipmi"], cipher_suite=suite)))
    assert len(problems) == 1 and problems[0].startswith("cooling_bmc.ipmi.cipher_suite: %d is refused (" % suite)
    assert "use 17 (HMAC-SHA256, AES-128) or 3" in problems[0]


@pytest.mark.parametrize("suite", [3, 17])
def test_ipmi_cipher_suites_3_and_17_are_accepted(suite):
    assert cooling(bmc=dict(GOOD["bmc"], ipmi=dict(GOOD["bmc"]["ipmi"], cipher_suite=suite))) == []


def test_ipmi_credentials_longer_than_ipmitool_keeps_are_refused():
    """ipmitool keeps 16 bytes of a user name and 20 of a password and drops the rest without a word."""
    long_password = "p" * 21
    problems = cooling(bmc=dict(GOOD["bmc"], ipmi=dict(GOOD["bmc"]["ipmi"], user="u" * 17, password=long_password)))
    assert problems == [
        "cooling_bmc.ipmi.user: must be one line of at most 16 bytes (ipmitool silently cuts longer ones), got '%s'"
        % ("u" * 17),
        "cooling_bmc.ipmi.password: must be one line of at most 20 bytes (ipmitool silently cuts longer ones); the "
        "value is not shown"]


@pytest.mark.parametrize("target", ["/redfish/v1/../../admin", "/redfish/v1/Chassis/%2e%2e/x"])
def test_redfish_targets_climbing_out_of_the_service_root_are_refused(target):
    groups = copy.deepcopy(GOOD["fan_groups"])
    groups["chassis"]["target"] = target
    problems = cooling(fan_groups=groups)
    assert any(p.startswith("cooling_fan_groups.chassis.target: must be a Redfish path on the BMC") for p in problems)


@pytest.mark.parametrize("host, address", [("192.0.2.010", "192.0.2.8"), ("192.0.2.0xa", "192.0.2.10"),
                                           ("192.0.522", "192.0.2.10")])
def test_a_bmc_address_the_resolver_reads_as_another_is_refused(host, address):
    """ipmitool and the Redfish client resolve with getaddrinfo: 192.0.2.010 reaches 192.0.2.8 (octal), not the BMC
    the inventory seems to name (issue 47)."""
    assert socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)[0][4][0] == address
    reading = "%r is read as %s by the resolver (a leading 0 is octal, 0x hex, a short form fills from the right); " \
              "write %s" % (host, address, address)
    bmc = copy.deepcopy(GOOD["bmc"])
    bmc["ipmi"]["host"] = host
    bmc["redfish"]["base_url"] = "https://%s" % host
    assert cooling(bmc=bmc) == ["cooling_bmc.ipmi.host: " + reading,
                                "cooling_bmc.redfish.base_url: the host " + reading]


# Two hosts claiming one thing (check_inventory.yml)

def hgx(storage, bmc, **extra):
    settings = {"bonding_bonds": [BOND], "bonding_vlans": [{"id": 110, "link": "bond0", "addresses": [storage]}],
                "cooling_bmc": {"redfish": {"base_url": "https://%s" % bmc, "password": SECRET}}}
    settings.update(extra)
    return settings


def test_same_storage_address_on_two_hosts_is_refused_naming_both():
    clashes = inventory_problems({"gpu-r01-n01": hgx("10.110.1.11/24", "10.99.1.11"),
                                  "gpu-r01-n02": hgx("10.110.1.12/24", "10.99.1.12"),
                                  "gpu-r01-n05": hgx("10.110.1.11/23", "10.99.1.15")})
    sentence = ("address '10.110.1.11/23' is claimed by two hosts: gpu-r01-n01 (bonding_vlans[0].addresses[0]) and "
                "gpu-r01-n05 (bonding_vlans[0].addresses[0]); each host needs its own")
    assert clashes == {"gpu-r01-n01": [sentence], "gpu-r01-n05": [sentence]}


def test_same_bmc_address_on_two_hosts_is_refused_naming_both():
    """Two cooling controllers would drive the same fans, each from its own host's sensors."""
    clashes = inventory_problems({"gpu-r01-n01": hgx("10.110.1.11/24", "10.99.1.11"),
                                  "inf-r03-n01": {"cooling_bmc": {"ipmi": {"host": "10.99.1.11", "password": SECRET}}}})
    assert clashes == {host: ["address '10.99.1.11' is claimed by two hosts: gpu-r01-n01 (cooling_bmc.redfish.base_url) "
                              "and inf-r03-n01 (cooling_bmc.ipmi.host); each host needs its own"]
                       for host in ("gpu-r01-n01", "inf-r03-n01")}
    assert SECRET not in repr(clashes)


@pytest.mark.parametrize("spelling", ["10.99.1.015", "10.99.1.0xd", "10.99.269", "::ffff:10.99.1.13"])
def test_one_bmc_written_two_ways_is_refused_naming_both(spelling):
    """ipmitool and Python's HTTP client resolve with getaddrinfo, which reads a leading 0 as octal, 0x as hex and
    fills a short address from the right (issue 47): the comparison reads each address as the resolver does."""
    resolved = socket.getaddrinfo(spelling, None, proto=socket.IPPROTO_TCP)[0][4][0]
    assert resolved in ("10.99.1.13", "::ffff:10.99.1.13")
    clashes = inventory_problems({"gpu-r01-n03": hgx("10.110.1.13/24", "10.99.1.13"),
                                  "inf-r03-n01": {"cooling_bmc": {"ipmi": {"host": spelling, "password": SECRET}}}})
    assert clashes["inf-r03-n01"] == [
        "address %r is claimed by two hosts: gpu-r01-n03 (cooling_bmc.redfish.base_url) and inf-r03-n01 "
        "(cooling_bmc.ipmi.host); each host needs its own ('10.99.1.13' and %r are one address, 10.99.1.13, as the "
        "resolver reads them)" % (spelling, spelling)]
    assert clashes["gpu-r01-n03"] == clashes["inf-r03-n01"] and SECRET not in repr(clashes)


def test_addresses_that_only_look_alike_are_not_a_clash():
    # 10.110.1.011 is 10.110.1.9 to the resolver (octal), not 10.110.1.11; a name with digits is a name.
    assert inventory_problems({"a": hgx("10.110.1.11/24", "10.99.1.11"),
                               "b": hgx("10.110.1.011/24", "10.99.1.11x")}) == {}


def test_same_router_id_or_loopback_on_two_hosts_is_refused():
    clashes = inventory_problems({"a": {"routing_router_id": "10.255.0.1", "routing_loopback_addresses": ["10.255.0.1/32"]},
                                  "b": {"routing_router_id": "10.255.0.1", "routing_loopback_addresses": ["10.255.0.2/32"]},
                                  "c": {"verify_address": "10.255.0.2"}})
    assert sorted(clashes) == ["a", "b", "c"]
    assert "router ID '10.255.0.1' is claimed by two hosts: a (routing_router_id) and b (routing_router_id)" in \
        clashes["a"][0]
    assert "a (routing_loopback_addresses[0])" not in "\n".join(clashes["c"])
    assert "b (routing_loopback_addresses[0]) and c (verify_address)" in clashes["c"][0]


def test_masked_hides_secrets_in_every_quoted_form():
    messages = ["got %r" % ({"password": SECRET},), 'got "%s"' % SECRET, "https://u:%s@h/" % SECRET]
    assert masked(messages, {"a": [{"Password": SECRET}]}) == [
        "got {'password': <secret>}", "got <secret>", "https://u:<secret>@h/"]


# Own probes beyond the list

@pytest.mark.parametrize("path", ["/etc/sudoers.d/nccl", "/etc/cron.d/nccl", "/etc/pam.d/nccl"])
def test_nccl_env_file_in_a_folder_other_programs_parse_is_refused(path):
    """sudo reads every file in /etc/sudoers.d and stops working on a NAME=value line: every become would fail."""
    problems = nccl_problems(dict(defaults("nccl"), nccl_env_file_path=path))
    assert any(p.startswith("nccl_env_file_path: must be under /etc/default/") for p in problems), problems


def routing(**changes):
    from ansible_collections.gpufabric.core.plugins.filter.routing_problems import routing_problems
    settings = {key[len("routing_"):]: value for key, value in defaults("routing").items()}
    settings.update(asn=4200000001, loopback_addresses=["10.255.0.1/32"],
                    uplinks=[{"interface": "ens1", "peer": "10.0.0.1", "remote_asn": 4200000100}])
    settings.update(changes)
    return routing_problems(settings, prefix="routing_")


def test_routing_frr_config_path_outside_etc_frr_is_refused():
    """The role replaces the whole file and reloads FRR with it, as root."""
    assert routing() == []
    assert routing(frr_config_path="/etc/passwd") == [
        "routing_frr_config_path: must be under /etc/frr/; /etc/passwd is outside"]


@pytest.mark.parametrize("uplink, message", [
    ({"interface": "ens1", "peer": "10.0.0.1", "remote_asn": 4200000100, "description": "leaf A\r  neighbor x"},
     "routing_uplinks[0] (ens1).description: "),
    ({"interface": "en*", "peer": "10.0.0.1", "remote_asn": 4200000100},
     "routing_uplinks[0] (en*).interface: 'en*' is a pattern"),
])
def test_routing_uplink_values_that_garble_frr_conf_are_refused(uplink, message):
    problems = routing(uplinks=[uplink])
    assert any(p.startswith(message) for p in problems), problems


def test_ipsec_bypass_of_every_address_is_refused():
    from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import ipsec_problems
    settings = dict(defaults("ipsec"), ipsec_bypass_networks=["10.99.0.0/16", "0.0.0.0/0"])
    assert ipsec_problems({"node1": settings}) == [
        "node1: ipsec_bypass_networks[1]: 0.0.0.0/0 would send every packet around every tunnel, so the mesh would "
        "protect nothing; list the monitoring or management networks only"]
