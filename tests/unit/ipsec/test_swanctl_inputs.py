"""Every value the ipsec role writes into swanctl.conf is checked on the controller, naming the host and variable.

Each test here reproduces an input that reached swanctl.conf (or the CA) unchecked before the ipsec_problems filter
existed: a peer's identity that fails its own check but is written by the others, a duration holding a newline, a
weak proposal, an empty CA subject, a CA under the home of a short-lived AWX execution environment.
"""

import re
from pathlib import Path

import pytest
import yaml

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.filter.ipsec_problems import FilterModule as ProblemsFilters
from ansible_collections.gpufabric.core.plugins.filter.swanctl_value import FilterModule as ValueFilters
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import (
    InputError,
    duration_seconds,
    identity_problem,
    ipsec_problems,
    proposal_problems,
    quote_value,
)
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.mesh import MeshError, build_mesh

ROOT = Path(__file__).resolve().parents[3]
DEFAULTS = yaml.safe_load((ROOT / "roles" / "ipsec" / "defaults" / "main.yml").read_text())
ipsec_problems_filter = ProblemsFilters().filters()["ipsec_problems"]
swanctl_value = ValueFilters().filters()["swanctl_value"]

# The identity regex of the role's preflight before this change, as it was written there.
OLD_IDENTITY_CHECK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:_@-]*$")

BAD_IDENTITIES = {
    "wildcard": "%any",
    "embedded quote": 'node3" remote_addrs = %any',
    "newline": "node3\n",
    "carriage return": "node3\r",
}


def settings(**overrides):
    values = dict(DEFAULTS)
    values.update(overrides)
    return values


def members(**identities):
    return [{"name": name, "id": identities.get(name, ""), "address": "", "selectors": []}
            for name in ("node1", "node2", "node3")]


def test_role_defaults_have_no_problem():
    assert ipsec_problems({"node1": settings()}, members=members()) == []


@pytest.mark.parametrize("kind", sorted(BAD_IDENTITIES))
def test_one_bad_member_identity_fails_every_host_naming_it(kind):
    """node3's identity, bad, fails the check of node1 and node2 too, which would write it into their swanctl.conf."""
    bad = BAD_IDENTITIES[kind]
    problems = ipsec_problems({"node1": settings(), "node2": settings()}, members=members(node3=bad))
    assert len(problems) == 1, problems
    assert problems[0].startswith("node3: ipsec_identity: ")


def test_trailing_newline_passed_the_old_identity_check():
    # `$` matches before a final newline: the old check let "node3\n" through.
    assert OLD_IDENTITY_CHECK.match("node3\n")
    assert identity_problem("node3\n") is not None
    assert identity_problem("node3\r") is not None


@pytest.mark.parametrize("identity", ["node1", "gpu-a01.dc1.example.net", "gpu_a01", "10.0.0.1", "fd00::1",
                                      "ops@example.net"])
def test_names_addresses_and_emails_are_identities(identity):
    assert identity_problem(identity) is None


@pytest.mark.parametrize("identity", ["keyid:0102", "fqdn:node1", "*.example.net", "node 1", " node1", ""])
def test_type_prefixes_wildcards_and_spaces_are_refused(identity):
    assert identity_problem(identity) is not None


def test_gateway_ids_may_be_distinguished_names_but_nothing_unquotable():
    assert identity_problem("C=DE, O=Example, CN=gw1.example.net", allow_dn=True) is None
    assert identity_problem("C=DE, O=Example, CN=gw1.example.net") is not None
    gateway = {"name": "dc-gw", "address": "10.0.9.1", "networks": ["10.200.0.0/16"]}
    problems = ipsec_problems({"node1": settings(ipsec_gateways=[
        dict(gateway, id="O=Example, CN=gw1"),
        dict(gateway, name="dc-gw2", id="gw2\n", address="10.0.9.2"),
        dict(gateway, name="gw\nmode", id="gw3", address="10.0.9.300", networks=[]),
    ])})
    assert problems == [
        "node1: ipsec_gateways[1].id: holds a control character (newline, carriage return, tab...): 'gw2\\n'",
        "node1: ipsec_gateways[2].name: 'gw\\nmode' is not a name of letters, digits, '.', '_' and '-'",
        "node1: ipsec_gateways[2].address: '10.0.9.300' is not an IP address",
        "node1: ipsec_gateways[2].networks: list the networks (CIDR) behind the gateway, got []",
    ]


def test_duration_holding_a_newline_is_refused_naming_the_variable():
    """The reported injection: a rekey time with a newline added `mode = pass` to the connection."""
    injected = "1h\n                mode = pass"
    problems = ipsec_problems({"node1": settings(ipsec_child_rekey_time=injected)})
    assert len(problems) == 1
    assert problems[0].startswith("node1: ipsec_child_rekey_time: must be a strongSwan time")


@pytest.mark.parametrize("value, seconds", [("30s", 30), ("1h", 3600), ("90m", 5400), ("1d", 86400), (3600, 3600),
                                            ("3600", 3600), ("0", 0)])
def test_durations_are_numbers_with_units(value, seconds):
    assert duration_seconds(value) == seconds


@pytest.mark.parametrize("value", ["1h\n", "1h\r", "1 h", "1w", "-5s", "", True, 1.5, None, "1h30m"])
def test_malformed_durations(value):
    assert duration_seconds(value) is None


def test_rekey_times_must_be_positive_and_dpd_shorter():
    problems = ipsec_problems({"node1": settings(ipsec_ike_rekey_time="0", ipsec_dpd_delay="0")})
    assert [p.split(":")[1].strip() for p in problems] == ["ipsec_ike_rekey_time"]
    problems = ipsec_problems({"node1": settings(ipsec_child_rekey_time="20s", ipsec_dpd_delay="30s")})
    assert problems == ["node1: ipsec_dpd_delay: '30s' must be shorter than the rekey times ('4h', '20s')"]


@pytest.mark.parametrize("proposal, esp, refused", [
    ("null-sha256", True, "null is refused (no encryption)"),
    ("3des-sha256-modp2048", False, "3des is refused"),
    ("aes256-md5-ecp384", False, "md5 is refused (MD5 is broken)"),
    ("aes256-sha1", True, "sha1 is refused"),
    ("aes256gcm16-prfsha384-modp768", False, "modp768 is refused"),
    ("aes256gcm16-prfsha384-modp1024", False, "modp1024 is refused"),
    ("aes256gcm16-modp1024", True, "modp1024 is refused"),
    ("aes256gcm16-prfsha384-modp1536", False, "modp1536 is refused"),
    ("aes128gcm8", True, "aes128gcm8 is refused"),
    ("aes256gcm16-prfsha384-ke1_modp1024", False, "ke1_modp1024 is refused"),
    ("rot13-sha256", True, "'rot13' is not an algorithm this collection allows"),
])
def test_weak_or_unknown_algorithms_are_refused(proposal, esp, refused):
    problems = proposal_problems(proposal, "ipsec_esp_proposals[0]", esp)
    assert any(refused in p for p in problems), problems


@pytest.mark.parametrize("proposal, esp, problem", [
    ("aes256gcm16-ecp384", False, "an AEAD IKE proposal needs a PRF"),
    ("aes256-prfsha384-ecp384", False, "a classic cipher needs an integrity algorithm"),
    ("aes256gcm16-prfsha384", False, "an IKE proposal needs a key exchange"),
    ("aes256gcm16-sha256", True, "an AEAD cipher carries its own integrity"),
    ("aes256gcm16-prfsha384", True, "an ESP proposal takes no PRF"),
    ("aes256gcm16-aes256-sha256", True, "mixes AEAD"),
    ("sha256-ecp384", True, "names no encryption algorithm"),
    ("aes256gcm16-prfsha384-ecp384-esn", False, "belongs to ESP proposals only"),
    ("AES256GCM16-PRFSHA384", False, "is not a swanctl proposal"),
    ("aes256gcm16-prfsha384-ecp384\n", False, "is not a swanctl proposal"),
])
def test_incomplete_suites_are_refused(proposal, esp, problem):
    assert any(problem in p for p in proposal_problems(proposal, "p", esp))


@pytest.mark.parametrize("proposal, esp", [
    ("aes256gcm16-prfsha384-ecp384", False), ("aes256gcm16-prfsha384-x25519", False),
    ("aes256-sha384-ecp384", False), ("chacha20poly1305-prfsha256-x25519-ke1_mlkem768", False),
    ("aes256gcm16-ecp384", True), ("aes256gcm16", True), ("aes128-sha256-modp3072-esn", True),
])
def test_strong_suites_are_accepted(proposal, esp):
    assert proposal_problems(proposal, "p", esp) == []


def test_proposal_with_its_own_ml_kem_needs_pq_kex_none():
    proposals = ["aes256gcm16-prfsha384-ecp384-ke1_mlkem768"]
    assert ipsec_problems({"n": settings(ipsec_ike_proposals=proposals, ipsec_pq_kex="none")}) == []
    problems = ipsec_problems({"n": settings(ipsec_ike_proposals=proposals)})
    assert problems and "set ipsec_pq_kex to none" in problems[0]


def test_certificate_periods_positive_renewal_shorter_and_ca_subject_set():
    problems = ipsec_problems({"n": settings(ipsec_pki_cert_valid_days=0, ipsec_pki_renew_days=-1,
                                             ipsec_crl_valid_days=10, ipsec_crl_refresh_days=10,
                                             ipsec_pki_ca_common_name="")})
    assert problems == [
        "n: ipsec_pki_cert_valid_days: must be a whole number of at least 1, got 0",
        "n: ipsec_pki_renew_days: must be a whole number of at least 1, got -1",
        "n: ipsec_crl_refresh_days: 10 must be shorter than ipsec_crl_valid_days (10)",
        "n: ipsec_pki_ca_common_name: the CA subject must not be empty, got ''",
    ]
    problems = ipsec_problems({"n": settings(ipsec_pki_renew_days=365, ipsec_pki_ca_valid_days=365)})
    assert problems == [
        "n: ipsec_pki_renew_days: 365 must be shorter than ipsec_pki_cert_valid_days (365), or every run renews "
        "every certificate",
        "n: ipsec_pki_cert_valid_days: 365 must be shorter than ipsec_pki_ca_valid_days (365)",
    ]
    assert ipsec_problems({"n": settings(ipsec_pki_ca_valid_days=True)})[0].startswith(
        "n: ipsec_pki_ca_valid_days: must be a whole number")


def test_pki_dir_is_absolute_and_normalised():
    for bad in ("relative/pki", "/srv/pki/../../etc", "/srv/pki\n"):
        problems = ipsec_problems({"n": settings(ipsec_pki_dir=bad)})
        assert len(problems) == 1 and problems[0].startswith("n: ipsec_pki_dir: "), problems
    assert ipsec_problems({"n": settings(ipsec_pki_dir="/srv/gpufabric/pki/")}) == []


@pytest.mark.parametrize("pki_dir, root", [("/tmp/gpufabric-pki", "/tmp"), ("/var/tmp/pki/ipsec", "/var/tmp"),
                                           ("/dev/shm/ca", "/dev/shm"), ("/tmp", "/tmp")])
def test_pki_dir_in_a_temporary_folder_is_refused_outside_awx_too(pki_dir, root):
    problems = ipsec_problems({"n": settings(ipsec_pki_dir=pki_dir)})
    assert any(p.startswith("n: ipsec_pki_dir: %s is under %s, a temporary folder" % (pki_dir, root))
               for p in problems), problems


def test_pki_dir_reaching_a_temporary_folder_through_a_symbolic_link_is_refused(tmp_path):
    # tmp_path lies under /tmp: the link's own name is outside it, where it leads is not.
    link = Path("/var/lib/gpufabric-unit-tests-%s" % tmp_path.name)
    link.symlink_to(tmp_path)
    try:
        problems = ipsec_problems({"n": settings(ipsec_pki_dir=str(link / "pki"))})
    finally:
        link.unlink()
    assert any("%s is under /tmp, a temporary folder" % (link / "pki") in p for p in problems), problems


def test_pki_dir_below_a_sticky_folder_everyone_can_write_is_refused(tmp_path):
    # A scratch folder such as /scratch (1777): ancestor_problems accepts sticky folders; a CA must not live there.
    scratch = Path("/var/lib/gpufabric-unit-tests-%s" % tmp_path.name)
    scratch.mkdir()
    try:
        scratch.chmod(0o1777)
        problems = ipsec_problems({"n": settings(ipsec_pki_dir=str(scratch / "pki"))})
    finally:
        scratch.rmdir()
    assert problems == ["n: ipsec_pki_dir: %s (above %s) is a shared folder every user can write (mode 1777, like "
                        "/tmp): any local user can create the CA's path there first. Keep the CA on persistent "
                        "storage that only the controller's user can write" % (scratch, scratch / "pki")]


def test_awx_needs_a_persistent_pki_dir():
    assert ipsec_problems({"n": settings()}) == []
    problems = ipsec_problems({"n": settings()}, awx_job="1207")
    assert len(problems) == 1
    assert "running from AWX (job 1207)" in problems[0] and problems[0].startswith("n: ipsec_pki_dir: ")
    problems = ipsec_problems({"n": settings(ipsec_pki_dir="/runner/pki")}, awx_job="1207")
    assert "is inside the AWX execution environment" in problems[0]
    assert ipsec_problems({"n": settings(ipsec_pki_dir="/srv/gpufabric/pki")}, awx_job="1207") == []


def test_addresses_selectors_and_choices_are_checked():
    problems = ipsec_problems({"n": settings(ipsec_address="10.0.0.1\n", ipsec_vlan_subnets=["10.77.0.0/33"],
                                             ipsec_controller_addresses=["10.0.0.0/24"], ipsec_mode="pass",
                                             ipsec_mesh_group="ipsec\nmode = pass",
                                             ipsec_revoked_hosts=["node9"])},
                              members=members())
    assert problems == [
        "n: ipsec_mesh_group: 'ipsec\\nmode = pass' is not an inventory group name",
        "n: ipsec_address: '10.0.0.1\\n' is not an IP address",
        "n: ipsec_mode: must be one of tunnel, transport, got 'pass'",
        "n: ipsec_vlan_subnets[0]: '10.77.0.0/33' is not an IP address or CIDR network",
        "n: ipsec_controller_addresses[0]: '10.0.0.0/24' is not an IP address",
        "n: ipsec_revoked_hosts: node9 not in the mesh group ipsec\nmode = pass",
    ]


def test_transport_mode_rules():
    problems = ipsec_problems({"n": settings(ipsec_mode="transport", ipsec_kernel_libipsec=True,
                                             ipsec_vlan_subnets=["10.77.0.0/24"])})
    assert problems == [
        "n: ipsec_mode: transport mode is not supported with ipsec_kernel_libipsec",
        "n: ipsec_vlan_subnets: transport mode protects only the hosts' IKE addresses; leave it empty",
    ]


def test_every_problem_of_every_host_at_once():
    problems = ipsec_problems({"node1": settings(ipsec_dpd_delay="soon"), "node2": settings(ipsec_esp_proposals=[])},
                              members=members(node3="%any"))
    assert [p.split(":")[0] for p in problems] == ["node1", "node2", "node3"]


def test_filter_errors_name_the_filter():
    assert ipsec_problems_filter({"n": settings()}, members=members()) == []
    with pytest.raises(AnsibleFilterError, match="gpufabric.core.ipsec_problems: the hosts to check must be"):
        ipsec_problems_filter(["n"])


# The template's last line of defence


def test_swanctl_value_quotes_and_refuses_line_breaks():
    assert swanctl_value("1h") == '"1h"'
    assert swanctl_value(3600) == "3600"
    assert swanctl_value(["10.0.0.1/32", "10.0.0.2/32[tcp/22]"]) == '"10.0.0.1/32,10.0.0.2/32[tcp/22]"'
    for bad in ("1h\n mode = pass", "1h\r", 'node1" mode = pass', "a\\b", ["ok", "x\ny"], None):
        with pytest.raises(AnsibleFilterError, match="gpufabric.core.swanctl_value: value for swanctl.conf"):
            swanctl_value(bad)
    with pytest.raises(InputError):
        quote_value("x\n")


# The mesh builder refuses a bad peer for every host


@pytest.mark.parametrize("kind", sorted(BAD_IDENTITIES))
def test_mesh_of_a_good_host_is_not_built_with_a_bad_peer_identity(kind):
    nodes = [{"name": n, "address": "10.0.0.%d" % i, "id": n, "addresses": [], "selectors": []}
             for i, n in enumerate(("node1", "node2", "node3"), start=1)]
    nodes[2]["id"] = BAD_IDENTITIES[kind]
    for local in ("node1", "node2"):
        with pytest.raises(MeshError, match="host 'node3' ipsec_identity: "):
            build_mesh(local, nodes)


def test_mesh_refuses_a_gateway_id_or_name_that_cannot_be_written():
    nodes = [{"name": n, "address": "10.0.0.%d" % i, "id": n} for i, n in enumerate(("node1", "node2"), start=1)]
    gateway = {"name": "gw", "address": "10.0.9.1", "id": "O=Example, CN=gw", "networks": ["10.200.0.0/16"]}
    connections = build_mesh("node1", nodes, gateways=[gateway])["connections"]
    assert [c["remote_id"] for c in connections if c["peer"] == "gw"] == ["O=Example, CN=gw"]
    with pytest.raises(MeshError, match="gateway 'gw' ipsec_gateways id: "):
        build_mesh("node1", nodes, gateways=[dict(gateway, id="gw\n")])
    with pytest.raises(MeshError, match="name: "):
        build_mesh("node1", nodes, gateways=[dict(gateway, name="gw\nx")])


def test_ca_passphrase_long_enough_and_never_repeated():
    assert ipsec_problems({"n": settings(ipsec_pki_ca_passphrase="correct horse battery staple")}) == []
    problems = ipsec_problems({"n": settings(ipsec_pki_ca_passphrase="hunter2")})
    assert problems == ["n: ipsec_pki_ca_passphrase: must be a string of at least 16 characters without control "
                        "characters (or empty for an unencrypted CA key)"]
    assert "hunter2" not in problems[0]
