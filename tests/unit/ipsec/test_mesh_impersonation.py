"""No member of the IPsec mesh can pass for another, and the CA on the controller never signs another host's name.

strongSwan accepts a peer whose certificate carries the connection's remote_id among its names. Before these checks,
a member could take a peer's inventory name as its ipsec_identity, two members could share one identity, a member
could list a peer's name in ipsec_pki_cert_names (or its address in ipsec_pki_cert_addresses), and the CA signed
whatever names the host's request carried: that member could then authenticate as its peer. Each case is refused by
the problems filter (check_inventory.yml and the role's preflight), by the mesh builder, and, for the request, by
the check the role runs before the CA signs.
"""

from pathlib import Path

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.gpufabric.core.plugins.filter.ipsec_csr_problems import FilterModule as CsrFilters
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.pki import build_csr, csr_problems
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import ipsec_problems
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.mesh import MeshError, build_mesh

ROOT = Path(__file__).resolve().parents[3]
DEFAULTS = yaml.safe_load((ROOT / "roles" / "ipsec" / "defaults" / "main.yml").read_text())


def member(name, **extra):
    data = {"name": name, "id": "", "address": "", "selectors": [], "cert_names": [], "cert_addresses": []}
    data.update(extra)
    return data


def node(name, address, **extra):
    data = {"name": name, "address": address, "id": name, "addresses": [address], "selectors": [],
            "protect_address": True}
    data.update(extra)
    return data


def settings(**overrides):
    return dict(DEFAULTS, **overrides)


def problems_of(host, members, **overrides):
    return ipsec_problems({host: settings(**overrides)}, members=members)


def test_mesh_refuses_member_claiming_peer_identity():
    members = [member("node1"), member("node2", id="node1"), member("node3")]
    for host in ("node1", "node2"):
        problems = problems_of(host, members, ipsec_identity="node1" if host == "node2" else "")
        assert any(p.startswith("%s: " % host) and "(hosts node1 and node2)" in p and "authenticate as" in p
                   for p in problems), problems
    # The third member, not part of the pair, is not failed for it (check_inventory.yml asks one host at a time).
    assert problems_of("node3", members) == []
    with pytest.raises(MeshError, match=r"node2's ipsec_identity 'node1' is also node1's inventory name.*"
                                        r"\(hosts node1 and node2\)"):
        build_mesh("node3", [node("node1", "10.0.0.1"), node("node2", "10.0.0.2", id="node1"),
                             node("node3", "10.0.0.3")])


def test_mesh_refuses_duplicate_ipsec_identity():
    members = [member("node1", id="gpu.example.net"), member("node2", id="gpu.example.net"), member("node3")]
    problems = ipsec_problems({"node1": settings(ipsec_identity="gpu.example.net"),
                               "node2": settings(ipsec_identity="gpu.example.net")}, members=members)
    assert [p.split(":")[0] for p in problems] == ["node1", "node2"], problems
    assert all("'gpu.example.net'" in p and "(hosts node1 and node2)" in p for p in problems)
    with pytest.raises(MeshError, match="node2's ipsec_identity 'gpu.example.net' is also node1's ipsec_identity"):
        build_mesh("node3", [node("node1", "10.0.0.1", id="gpu.example.net"),
                             node("node2", "10.0.0.2", id="gpu.example.net"), node("node3", "10.0.0.3")])


def test_mesh_refuses_peer_name_in_cert_names():
    members = [member("node1"), member("node2", cert_names=["node2.example.net", "node1"])]
    problems = problems_of("node2", members, ipsec_pki_cert_names=["node2.example.net", "node1"])
    assert any("node2's ipsec_pki_cert_names[1] 'node1' is also node1's" in p for p in problems), problems
    with pytest.raises(MeshError, match=r"ipsec_pki_cert_names\[0\] 'node1'"):
        build_mesh("node1", [node("node1", "10.0.0.1"), node("node2", "10.0.0.2", cert_names=["node1"])])


def test_mesh_refuses_peer_address_in_cert_addresses():
    """A certificate address is a name too: a peer whose identity is its address would be impersonated."""
    members = [member("node1", address="10.0.0.1", id="10.0.0.1"), member("node2", cert_addresses=["10.0.0.1"])]
    problems = problems_of("node2", members, ipsec_pki_cert_addresses=["10.0.0.1"])
    assert any("node2's ipsec_pki_cert_addresses[0] '10.0.0.1' is also node1's" in p for p in problems), problems
    with pytest.raises(MeshError, match=r"ipsec_pki_cert_addresses\[0\] '10.0.0.1' is also node1's ipsec_address"):
        build_mesh("node1", [node("node1", "10.0.0.1"), node("node2", "10.0.0.2", cert_addresses=["10.0.0.1"])])


@pytest.mark.parametrize("claimed", ["NODE1", "Node1"])
def test_identity_comparison_ignores_case(claimed):
    """strongSwan matches FQDN identities without case: NODE1 is node1 (a trailing dot is refused as no identity)."""
    with pytest.raises(MeshError, match="(hosts node1 and node2)"):
        build_mesh("node1", [node("node1", "10.0.0.1"), node("node2", "10.0.0.2", id=claimed)])


def test_same_ipsec_address_on_two_mesh_members_is_refused_by_the_problems_filter():
    """Before, only the mesh builder on the host refused it; check_inventory.yml accepted it."""
    members = [member("node1", address="10.0.0.5"), member("node2", address="10.0.0.5")]
    problems = problems_of("node1", members, ipsec_address="10.0.0.5")
    assert any(p.startswith("node1: ") and "ipsec_address '10.0.0.5'" in p and "(hosts node1 and node2)" in p
               for p in problems), problems
    other_side = ipsec_problems({"node2": settings(ipsec_address="10.0.0.5")}, members=members)
    assert any(p.startswith("node2: ") for p in other_side), other_side


def test_duplicate_gateway_names_are_refused_by_the_problems_filter():
    gateway = {"name": "dc-gw", "address": "10.0.9.1", "id": "gw1.example.net", "networks": ["10.200.0.0/16"]}
    problems = problems_of("node1", [member("node1")], ipsec_gateways=[
        gateway, dict(gateway, address="10.0.9.2", id="gw2.example.net", networks=["10.201.0.0/16"])])
    assert problems == ["node1: ipsec_gateways[1].name: 'dc-gw' is also the name of ipsec_gateways[0]; each gateway "
                        "needs a name of its own (it names the connection in swanctl.conf)"]


def test_gateway_claiming_a_member_identity_is_refused():
    gateway = {"name": "dc-gw", "address": "10.0.9.1", "id": "node2", "networks": ["10.200.0.0/16"]}
    problems = problems_of("node1", [member("node1"), member("node2")], ipsec_gateways=[gateway])
    assert any("gateway dc-gw's id 'node2' is also node2's" in p for p in problems), problems


# The request the host returns, checked on the controller before the CA signs it.

SANS = ["DNS:node2", "IP:10.0.0.2"]


def forged_request(key, names, ca=False, common_name="node2"):
    """A request made with the host's own key, as a compromised host could send it instead of the module's."""
    builder = (x509.CertificateSigningRequestBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
               .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in names]), critical=False)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=ca,
                                            crl_sign=False, encipher_only=False, decipher_only=False), critical=True))
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM).decode("ascii")


def test_ca_signs_the_request_the_module_makes_for_the_host():
    key = ec.generate_private_key(ec.SECP256R1())
    assert csr_problems(build_csr(key, "node2", SANS, "sha256"), "node2", SANS) == []
    # Addresses compare by value: the inventory's FD00::2 is the request's fd00::2.
    assert csr_problems(build_csr(key, "node2", ["DNS:node2", "IP:fd00::2"], "sha256"), "node2",
                        ["DNS:node2", "IP:FD00::2"]) == []


def test_ca_refuses_to_sign_a_request_for_a_peers_name():
    key = ec.generate_private_key(ec.SECP256R1())
    problems = csr_problems(build_csr(key, "node2", SANS + ["DNS:node1"], "sha256"), "node2", SANS)
    assert problems == ["it asks for the names DNS:node1, DNS:node2, IP:10.0.0.2, not this host's DNS:node2, "
                        "IP:10.0.0.2 (ipsec_identity, ipsec_address, ipsec_pki_cert_names, ipsec_pki_cert_addresses)"]
    assert csr_problems(build_csr(key, "node1", SANS, "sha256"), "node2", SANS) == [
        "its subject is CN=node1, not CN=node2 (this host's ipsec_identity)"]


def test_ca_refuses_a_request_asking_to_be_a_ca():
    """The signer copies a request's extensions: a CA:TRUE request would have made the host a sub-CA."""
    key = ec.generate_private_key(ec.SECP256R1())
    problems = csr_problems(forged_request(key, ["node2"], ca=True), "node2", ["DNS:node2"])
    assert "it asks for extensions the role never requests: basicConstraints" in problems
    assert any("key usage is not digitalSignature alone" in p for p in problems)


def test_ca_refuses_what_is_not_a_request():
    assert csr_problems("-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n", "node2",
                        SANS)[0].startswith("the signing request is not a PEM certificate signing request")


def test_the_role_checks_the_request_before_the_ca_signs_it():
    tasks = yaml.safe_load((ROOT / "roles" / "ipsec" / "tasks" / "issue.yml").read_text())
    names = [task["name"] for task in tasks]
    check = names.index("Refuse a signing request that names anything but this host")
    assert check < names.index("Sign the request with the CA on the controller")
    assert "gpufabric.core.ipsec_csr_problems" in tasks[check]["vars"]["__ipsec_csr_problems"]
    csr_filter = CsrFilters().filters()["ipsec_csr_problems"]
    key = ec.generate_private_key(ec.SECP256R1())
    assert csr_filter(build_csr(key, "node2", SANS, "sha256"), common_name="node2", subject_alt_names=SANS) == []
