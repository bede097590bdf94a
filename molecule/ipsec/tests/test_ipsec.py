"""The ipsec role on four lab nodes of three Debian releases: full mesh up, traffic through the tunnels, ML-KEM-768
hybrid between the two forky nodes and classical everywhere else (and reported so), impostor refused, rotation.

Per-node checks use testinfra hosts on the podman backend (the scenario's inventory reaches the nodes over SSH with
an address looked up at run time, which testinfra's ansible backend cannot template). Scenario-level checks run once,
in file order, and re-run the role with ansible-playbook against Molecule's inventory.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import testinfra
from cryptography.hazmat.primitives import serialization

SCENARIO = Path(__file__).resolve().parents[1]
ROOT = SCENARIO.parents[1]
sys.path.insert(0, str(ROOT / ".build" / "collections"))

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.swanctl import (  # noqa: E402
    evaluate_sas,
    parse_list_sas,
)

NODES = ["ipsec-node1", "ipsec-node2", "ipsec-node3", "ipsec-node4"]
TUNNEL_ADDRESS = {node: "10.77.0.%d" % (index + 1) for index, node in enumerate(NODES)}
# strongSwan 6.1.0 (Debian testing, forky) lists ML-KEM; node1 has 5.9.8 (Debian 12), node2 6.0.1 (Debian 13).
ML_KEM_NODES = {"ipsec-node3", "ipsec-node4"}
EPHEMERAL = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""))
PKI = EPHEMERAL / "pki"


def node_exec(node, command, check=True):
    result = subprocess.run(["podman", "exec", node, "bash", "-c", command], capture_output=True, text=True,
                            timeout=120, check=False)
    if check and result.returncode != 0:
        raise AssertionError("%s on %s failed (%d): %s" % (command, node, result.returncode, result.stderr))
    return result.stdout


def sas_of(node):
    return parse_list_sas(node_exec(node, "swanctl --list-sas --noblock 2>/dev/null"))


def expected_for(node):
    return [{"peer": peer, "ike": "gf-" + peer, "child": "gf-" + peer} for peer in NODES if peer != node]


def serial_of(node):
    return node_exec(node, "openssl x509 -noout -serial -in /etc/swanctl/x509/gpufabric.crt").strip()


def run_role(*extra, expect_success=True):
    env = dict(os.environ)
    env["ANSIBLE_COLLECTIONS_PATH"] = "%s:%s" % (ROOT / ".build" / "collections",
                                                 ROOT / ".venv" / "lib" / "python3.11" / "site-packages")
    env["ANSIBLE_ROLES_PATH"] = str(ROOT / "roles")
    env["ANSIBLE_CONFIG"] = str(EPHEMERAL / "ansible.cfg")
    env["ANSIBLE_FORCE_COLOR"] = "false"
    command = [str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(EPHEMERAL / "inventory")] + list(extra)
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900, check=False)
    output = result.stdout + result.stderr
    if expect_success:
        assert result.returncode == 0, output[-6000:]
    return result.returncode, output


def keep_capture(name, text):
    """Keep a real output in Molecule's ephemeral folder, for tests/fixtures/strongswan (each with its source line)."""
    folder = EPHEMERAL / "captures"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(text)


def key_body_lines(pem):
    """The base64 lines of a PEM private key: any of them in a log means key material leaked."""
    return [line for line in pem.splitlines() if line and not line.startswith("-----")]


# Per node


@pytest.fixture(params=NODES, scope="module")
def node(request):
    return testinfra.get_host("podman://%s" % request.param)


def test_strongswan_runs_from_swanctl_only(node):
    assert node.service("strongswan.service").is_running
    assert node.service("strongswan.service").is_enabled
    assert node.file("/etc/swanctl/conf.d/gpufabric.conf").contains("version = 2")
    assert not node.file("/etc/ipsec.conf").exists or not node.file("/etc/ipsec.conf").contains("conn ")


def test_userspace_esp_only_because_the_scenario_asks(node):
    assert node.file("/etc/strongswan.d/gpufabric.conf").contains("load = yes")
    assert node.interface("ipsec0").exists


def test_private_key_is_the_hosts_own_and_private(node):
    key = node.file("/etc/swanctl/private/gpufabric.key")
    assert key.mode == 0o600
    assert key.user == "root"
    ca_key = (PKI / "ca.key").read_text()
    # The CA key never reaches a node.
    assert not any(line in node.check_output("cat /etc/swanctl/*/* 2>/dev/null || true")
                   for line in key_body_lines(ca_key))


def test_certificate_names_and_issuer(node):
    name = node.backend.get_hostname()
    text = node.check_output("openssl x509 -noout -text -in /etc/swanctl/x509/gpufabric.crt")
    assert "DNS:%s" % name in text
    assert re.search(r"IP Address:\d+\.\d+\.\d+\.\d+", text)
    # OpenSSL 3.6 (forky) prints the issuer without the spaces 3.0 and 3.5 put around "=".
    assert re.search(r"Issuer: CN ?= ?gpufabric IPsec CA\n", text)
    assert node.file("/etc/swanctl/x509crl/gpufabric.crl").exists


def test_every_peer_established_with_aes_gcm_256(node):
    name = node.backend.get_hostname()
    sas = parse_list_sas(node.check_output("swanctl --list-sas --noblock 2>/dev/null"))
    results = evaluate_sas(sas, expected_for(name), ["AES_GCM_16-256"])
    assert [r["problem"] for r in results if not r["ok"]] == []
    for sa in sas:
        assert sa["state"] == "ESTABLISHED"
        assert sa["algorithms"][0] == "AES_GCM_16-256"
        assert sa["algorithms"][1] == "PRF_HMAC_SHA2_384"
        assert all(c["state"] == "INSTALLED" and c["encryption"] == "AES_GCM_16-256" for c in sa["children"])


def test_traffic_to_every_peer_goes_through_its_sa(node):
    name = node.backend.get_hostname()
    for peer in NODES:
        if peer == name:
            continue
        route = node.check_output("ip route get %s from %s" % (TUNNEL_ADDRESS[peer], TUNNEL_ADDRESS[name]))
        assert "dev ipsec0" in route
        before = [c for sa in sas_of(name) if sa["name"] == "gf-" + peer for c in sa["children"]
                  if c["state"] == "INSTALLED"][0]
        node.run_expect([0], "ping -c 3 -W 2 -I %s %s" % (TUNNEL_ADDRESS[name], TUNNEL_ADDRESS[peer]))
        after = [c for sa in sas_of(name) if sa["name"] == "gf-" + peer for c in sa["children"]
                 if c["state"] == "INSTALLED"][0]
        assert after["spi_out"] == before["spi_out"]
        assert after["packets_out"] >= before["packets_out"] + 3
        assert after["packets_in"] >= before["packets_in"] + 3


# Scenario level, once and in this order


def test_ca_stays_on_the_controller():
    assert oct((PKI / "ca.key").stat().st_mode & 0o777) == "0o600"
    assert oct(PKI.stat().st_mode & 0o777) == "0o700"
    # One certificate per host so far: the idempotence run issued none.
    assert sorted(len(list((PKI / "issued" / node).glob("*.pem"))) for node in NODES) == [1] * len(NODES)


def test_forky_pair_is_hybrid_ml_kem_768_and_every_other_pair_classical():
    """ipsec_pq_kex auto: ECP-384 then ML-KEM-768 (RFC 9370 KE1) between the two 6.1 nodes, on the IKE SA and, after
    a CHILD SA rekey (PFS), on the CHILD SA too; every pair with the 5.9 or the 6.0.1 node is ECP-384 alone."""
    for node in NODES:
        for sa in sas_of(node):
            peer = sa["name"][len("gf-"):]
            if {node, peer} <= ML_KEM_NODES:
                assert sa["algorithms"] == ["AES_GCM_16-256", "PRF_HMAC_SHA2_384", "ECP_384", "KE1_ML_KEM_768"], sa
                assert sa["key_exchanges"] == ["ECP_384", "ML_KEM_768"] and sa["post_quantum"] is True
            else:
                assert sa["key_exchanges"] == ["ECP_384"] and sa["post_quantum"] is False, (node, sa)
    for node in ("ipsec-node1", "ipsec-node2", "ipsec-node3"):
        keep_capture("%s-list-sas.txt" % node, node_exec(node, "swanctl --list-sas --noblock 2>/dev/null"))
        keep_capture("%s-versions.txt" % node, node_exec(
            node, "dpkg-query -W charon-systemd 'libssl3*' systemd; uname -r; date -u +%F"))
    keep_capture("ipsec-node3-list-algs.txt", node_exec("ipsec-node3", "swanctl --list-algs 2>/dev/null"))
    keep_capture("ipsec-node3-conf.txt", node_exec("ipsec-node3", "cat /etc/swanctl/conf.d/gpufabric.conf"))
    before = [c for sa in sas_of("ipsec-node3") if sa["name"] == "gf-ipsec-node4" for c in sa["children"]
              if c["state"] == "INSTALLED"][0]
    node_exec("ipsec-node3", "swanctl --rekey --child gf-ipsec-node4")
    for _attempt in range(40):
        children = [c for sa in sas_of("ipsec-node3") if sa["name"] == "gf-ipsec-node4" for c in sa["children"]
                    if c["state"] == "INSTALLED" and c["spi_in"] != before["spi_in"]]
        if children:
            break
        subprocess.run(["sleep", "0.5"], check=True)
    assert children, sas_of("ipsec-node3")
    keep_capture("ipsec-node3-list-sas-node4-child-rekeyed.txt",
                 node_exec("ipsec-node3", "swanctl --list-sas --ike gf-ipsec-node4 --noblock 2>/dev/null"))
    # The rekeyed CHILD SA lists its own exchanges: the PFS group of the ESP proposal and ML-KEM-768 on top.
    assert children[0]["algorithms"] == ["AES_GCM_16-256", "ECP_384", "KE1_ML_KEM_768"], children[0]
    assert children[0]["key_exchanges"] == ["ECP_384", "ML_KEM_768"]


def test_verify_reports_classical_sas_and_no_roce_rail_in_a_container():
    """Each host's verify output names its classical SAs and each SA's key exchanges. RoCE bypasses kernel IPsec;
    containers have no RDMA device, so the role reports none (and says why)."""
    rc, output = run_role(str(SCENARIO / "converge.yml"), "--tags", "ipsec_verify")
    words = " ".join(output.replace("\\", " ").split())
    for node in NODES:
        assert "none: RoCE bypasses kernel IPsec on no rail of %s (no RDMA device)" % node in words, output[-3000:]
        classical = [peer for peer in NODES if peer != node and not {node, peer} <= ML_KEM_NODES]
        assert "%s: classical key exchange only (no ML-KEM)" % ", ".join(classical) in words, output[-3000:]
        for peer in classical:
            assert "%s INSTALLED AES_GCM_16-256 ECP_384" % peer in words
    assert "ipsec-node4 INSTALLED AES_GCM_16-256 ECP_384+ML_KEM_768" in words, output[-3000:]
    assert "ipsec-node3 INSTALLED AES_GCM_16-256 ECP_384+ML_KEM_768" in words
    assert "bypasses kernel IPsec: not encrypted" not in words


def test_required_ml_kem_refuses_the_5_9_and_6_0_1_hosts_and_stops_every_node_before_anything_changes():
    """A required ML-KEM-768: the running 5.9.8 (Debian 12) and 6.0.1 (Debian 13) are refused by what their own
    swanctl --list-algs lists (no ML_KEM_768; 6.0.1 parses ke1_mlkem768 but has no algorithm), each named with the
    variable; the forky nodes, which can do it, stop too, naming both, since their pairs with those hosts could not
    come up. Nothing changes on any node or on the CA."""
    before = {node: node_exec(node, "sha256sum /etc/swanctl/conf.d/gpufabric.conf") for node in NODES}
    issued = sorted((PKI / "issued").rglob("*.pem"))
    rc, output = run_role(str(SCENARIO / "converge.yml"), "-e", "ipsec_pq_kex=mlkem768", expect_success=False)
    assert rc != 0
    words = " ".join(output.replace("\\", " ").split())
    for node, version in (("ipsec-node1", "5.9.8"), ("ipsec-node2", "6.0.1")):
        assert ("ipsec_pq_kex is mlkem768 (ML-KEM post-quantum key exchange, required) but the strongSwan %s "
                "running on %s lists no ML_KEM_768 in swanctl --list-algs (it lists no ML-KEM;" % (version, node)
                in words), output[-4000:]
    assert ("ipsec_pq_kex is mlkem768 (ML-KEM required on every pair) but ipsec-node1, ipsec-node2 in mesh group "
            "ipsec cannot do it (the reason is in each one's own failure); nothing was changed.") in words
    for node in sorted(ML_KEM_NODES):
        assert [line for line in output.splitlines() if line.startswith("fatal: [%s]" % node)], output[-4000:]
    for node in NODES:
        assert re.search(r"%s\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1" % node, output), output[-3000:]
    assert "Keep the CA, its certificate and its CRL on the controller" not in output
    assert {node: node_exec(node, "sha256sum /etc/swanctl/conf.d/gpufabric.conf") for node in NODES} == before
    assert sorted((PKI / "issued").rglob("*.pem")) == issued


@pytest.mark.parametrize("identity", ["%any", "ipsec-node3\\n"], ids=["wildcard", "newline"])
def test_one_bad_identity_stops_every_node_before_anything_changes(identity):
    """node3's identity is bad: node1 and node2 must not write it into their swanctl.conf either; nothing changes."""
    def state():
        return {node: node_exec(node, "sha256sum /etc/swanctl/conf.d/gpufabric.conf /etc/swanctl/x509/gpufabric.crt")
                for node in NODES}

    before = state()
    issued = sorted((PKI / "issued").rglob("*.pem"))
    untouched = [sa for sa in sas_of("ipsec-node1") if sa["name"] == "gf-ipsec-node2"][0]
    bad = json.dumps({"ipsec_identity": "{{ '%s' if inventory_hostname == 'ipsec-node3' else '' }}" % identity})
    rc, output = run_role(str(SCENARIO / "converge.yml"), "-e", bad, expect_success=False)
    assert rc != 0
    for node in NODES:
        # Each node fails in the check, naming the host and variable (the fatal line is the task's JSON result).
        fatal = [line for line in output.splitlines() if line.startswith("fatal: [%s]" % node)]
        assert fatal, output[-4000:]
        assert "nothing was changed. ipsec-node3: ipsec_identity: " in fatal[0]
        assert re.search(r"%s\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1" % node, output), output[-3000:]
    assert state() == before
    assert sorted((PKI / "issued").rglob("*.pem")) == issued
    still = [sa for sa in sas_of("ipsec-node1") if sa["name"] == "gf-ipsec-node2"][0]
    assert still["uniqueid"] == untouched["uniqueid"]


def test_node_with_certificate_from_other_ca_is_refused_and_named():
    run_role(str(SCENARIO / "other_ca.yml"))
    rc, output = run_role(str(SCENARIO / "converge.yml"), "--tags", "ipsec_verify", expect_success=False)
    assert rc != 0
    for peer in ("ipsec-node1", "ipsec-node2"):
        # Each honest peer fails naming the impostor and strongSwan's reason.
        fatal = [line for line in output.splitlines() if line.startswith("fatal: [%s]" % peer)]
        assert fatal, output[-4000:]
        assert "peer ipsec-node3: no IKE SA with peer ipsec-node3" in fatal[0]
        assert 'issuer is \\"CN=molecule other CA\\"' in fatal[0]
    # The tunnel between the two honest nodes is untouched.
    assert not [r for r in evaluate_sas(sas_of("ipsec-node1"), expected_for("ipsec-node1")[:1]) if not r["ok"]]


def test_forced_rotation_keeps_other_tunnels_and_leaks_no_key():
    """Re-run with -vvv, forcing renewal on node3 (which also holds the other CA's certificate now)."""
    serials = {node: serial_of(node) for node in NODES}
    untouched = [sa for sa in sas_of("ipsec-node1") if sa["name"] == "gf-ipsec-node2"][0]
    force_node3 = json.dumps({"ipsec_pki_force_renewal": "{{ inventory_hostname == 'ipsec-node3' }}"})
    rc, output = run_role(str(SCENARIO / "converge.yml"), "-vvv", "-e", force_node3)
    # The YAML callback folds long messages (and may escape the line breaks): compare the words only.
    words = " ".join(output.replace("\\", " ").split())
    assert "ipsec-node3 gets a new certificate: renewal forced (ipsec_pki_force_renewal);" in words
    assert "it was not issued by this CA" in words
    assert serial_of("ipsec-node3") != serials["ipsec-node3"]
    assert serial_of("ipsec-node1") == serials["ipsec-node1"]
    assert serial_of("ipsec-node2") == serials["ipsec-node2"]
    still = [sa for sa in sas_of("ipsec-node1") if sa["name"] == "gf-ipsec-node2"][0]
    assert still["uniqueid"] == untouched["uniqueid"]
    assert still["established_seconds"] >= untouched["established_seconds"]
    for node in NODES:
        assert not [r for r in evaluate_sas(sas_of(node), expected_for(node), ["AES_GCM_16-256"]) if not r["ok"]]
    # No line of any private key (hosts, CA, other CA) in the -vvv output.
    leaked = []
    for node in NODES:
        leaked += [line for line in key_body_lines(node_exec(node, "cat /etc/swanctl/private/gpufabric.key"))
                   if line in output]
    for key in (PKI / "ca.key", EPHEMERAL / "other-ca" / "ca.key"):
        leaked += [line for line in key_body_lines(key.read_text()) if line in output]
    assert leaked == []
    assert "PRIVATE KEY-----" not in output
    # node3's certificates before this one are revoked as superseded, in the CRL every node holds.
    assert len(list((PKI / "issued" / "ipsec-node3").glob("*.pem"))) == 2
    crl = node_exec("ipsec-node2", "swanctl --list-certs --type x509crl 2>/dev/null")
    assert "superseded" in crl


def test_revoked_host_is_refused_by_its_peers():
    revoke_node3 = json.dumps({"ipsec_revoked_hosts": ["ipsec-node3"]})
    rc, output = run_role(str(SCENARIO / "converge.yml"), "-e", revoke_node3, expect_success=False)
    # The role refuses to configure the revoked host itself and completes on the others.
    assert "ipsec-node3 is in ipsec_revoked_hosts" in " ".join(output.replace("\\", " ").split())
    for peer in ("ipsec-node1", "ipsec-node2"):
        assert re.search(r"%s\s+: ok=\d+\s+changed=\d+\s+unreachable=0\s+failed=0" % peer, output), output[-3000:]
        assert not [sa for sa in sas_of(peer) if sa["name"] == "gf-ipsec-node3"]
    # node3 still holds its key and certificate; its peers refuse it because the CRL revokes that certificate.
    attempt = node_exec("ipsec-node3", "swanctl --initiate --child gf-ipsec-node1 --timeout 10 2>&1", check=False)
    assert "AUTHENTICATION_FAILED" in attempt
    journal = node_exec("ipsec-node1", "journalctl -u strongswan.service --since -3min --no-pager")
    assert "certificate was revoked" in journal
    assert not [sa for sa in sas_of("ipsec-node1") if sa["name"] == "gf-ipsec-node3"]


def test_ca_key_encrypted_with_a_passphrase_from_vault():
    """A new CA whose key is encrypted with a passphrase from Ansible Vault; a wrong passphrase leaves it untouched."""
    encrypted = EPHEMERAL / "pki-encrypted"
    secret = "molecule vault passphrase 0123456789"
    password_file = EPHEMERAL / "vault-password"
    password_file.write_text("molecule vault password\n")
    password_file.chmod(0o600)
    vault = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-vault"), "encrypt_string", "--vault-password-file",
                            str(password_file), "--name", "ipsec_pki_ca_passphrase", secret],
                           capture_output=True, text=True, timeout=120, check=True)
    vars_file = EPHEMERAL / "vault-vars.yml"
    vars_file.write_text(vault.stdout + "ipsec_pki_dir: %s\n" % encrypted)
    rc, output = run_role(str(SCENARIO / "converge.yml"), "-vvv", "-e", "@%s" % vars_file,
                          "--vault-password-file", str(password_file))
    key = (encrypted / "ca.key").read_text()
    # PKCS#8 encrypted with scrypt and AES-256 (gpufabric.core.ipsec_ca): unreadable without it.
    with pytest.raises(TypeError, match="encrypted"):
        serialization.load_pem_private_key(key.encode(), password=None)
    assert serialization.load_pem_private_key(key.encode(), password=secret.encode())
    assert oct((encrypted / "ca.key").stat().st_mode & 0o777) == "0o600"
    assert secret not in output
    assert not [line for line in key_body_lines(key) if line in output]
    ca = (encrypted / "ca.crt").read_text().strip()
    for node in NODES:
        # Every node trusts the new CA and holds a certificate it signed (the CRL too is signed with the key).
        assert node_exec(node, "cat /etc/swanctl/x509ca/gpufabric-ca.crt").strip() == ca
        node_exec(node, "openssl verify -CAfile /etc/swanctl/x509ca/gpufabric-ca.crt /etc/swanctl/x509/gpufabric.crt")
        assert not [r for r in evaluate_sas(sas_of(node), expected_for(node), ["AES_GCM_16-256"]) if not r["ok"]]
    before = (encrypted / "ca.key").read_bytes()
    wrong = json.dumps({"ipsec_pki_dir": str(encrypted), "ipsec_pki_ca_passphrase": "not the vault passphrase"})
    rc, output = run_role(str(SCENARIO / "converge.yml"), "-e", wrong, expect_success=False)
    assert rc != 0
    assert "ipsec_pki_ca_passphrase must be the passphrase it is encrypted with" in " ".join(output.split())
    assert (encrypted / "ca.key").read_bytes() == before


def test_required_ml_kem_is_refused_on_debian13_before_strongswan_is_installed():
    """Last (it removes charon there): on a Debian 13 host without charon the version apt would install (6.0.1) is
    the estimate, and a required ML-KEM is refused on it, naming the variable, before anything is installed."""
    node_exec("ipsec-node2", "DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq charon-systemd >/dev/null 2>&1")
    assert "installed" != node_exec("ipsec-node2", "dpkg-query -W -f='${db:Status-Status}' charon-systemd")
    rc, output = run_role(str(SCENARIO / "converge.yml"), "-e", "ipsec_pq_kex=mlkem768", expect_success=False)
    assert rc != 0
    words = " ".join(output.replace("\\", " ").split())
    assert ("ipsec_pq_kex is mlkem768 (ML-KEM post-quantum key exchange, required), which needs strongSwan 6.1 or "
            "later as Debian packages it; ipsec-node2 has (or would install) 6.0.1 and no running charon to ask."
            in words), output[-4000:]
    assert re.search(r"ipsec-node2\s+: ok=\d+\s+changed=0\s+unreachable=0\s+failed=1", output), output[-3000:]
    # Nothing was installed: the role stopped in its preflight.
    assert "installed" != node_exec("ipsec-node2", "dpkg-query -W -f='${db:Status-Status}' charon-systemd")
