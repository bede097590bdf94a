"""The host side of the ipsec PKI: key fit, the reasons for a new certificate, the CSR, on real keys and certificates
made here with cryptography (a CA, a host certificate it signs, another CA)."""

import datetime
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.pki import (
    build_csr,
    certificate_facts,
    certificate_reasons,
    generate_key,
    key_fits,
    key_pem,
    subject_alt_names,
)

ROOT = Path(__file__).resolve().parents[3]
NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.timezone.utc)
SANS = ["DNS:node1", "IP:10.0.0.1"]


def make_ca(name):
    key = ec.generate_private_key(ec.SECP384R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(1).not_valid_before(NOW - datetime.timedelta(days=1))
            .not_valid_after(NOW + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA384()))
    return key, cert


def sign(csr_pem, ca_key, ca_cert, days=365):
    csr = x509.load_pem_x509_csr(csr_pem.encode())
    builder = (x509.CertificateBuilder().subject_name(csr.subject).issuer_name(ca_cert.subject)
               .public_key(csr.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(NOW - datetime.timedelta(days=1)).not_valid_after(NOW + datetime.timedelta(days=days))
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False))
    for extension in csr.extensions:
        builder = builder.add_extension(extension.value, extension.critical)
    return builder.sign(ca_key, hashes.SHA384())


@pytest.fixture(scope="module")
def pki():
    ca_key, ca_cert = make_ca("gpufabric IPsec CA")
    host_key = generate_key("ECC", "secp384r1", 3072)
    cert = sign(build_csr(host_key, "node1", SANS, "sha384"), ca_key, ca_cert)
    return {"ca_key": ca_key, "ca": ca_cert, "key": host_key, "cert": cert}


def test_key_fit_by_type_curve_and_size():
    ecc = generate_key("ECC", "secp384r1", 0)
    assert key_fits(ecc, "ECC", "secp384r1", 3072)
    assert not key_fits(ecc, "ECC", "secp256r1", 3072)
    assert not key_fits(ecc, "RSA", "secp384r1", 3072)
    small = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    assert not key_fits(small, "RSA", "secp384r1", 3072)
    assert key_fits(generate_key("Ed25519", "", 0), "Ed25519", "", 0)


def test_key_pem_is_unencrypted_and_reloads():
    key = generate_key("ECC", "secp384r1", 0)
    pem = key_pem(key)
    assert pem.startswith(b"-----BEGIN EC PRIVATE KEY-----")
    assert serialization.load_pem_private_key(pem, password=None).public_key().public_numbers() == \
        key.public_key().public_numbers()


def test_csr_is_an_ike_end_entity_request(pki):
    csr = x509.load_pem_x509_csr(build_csr(pki["key"], "node1", SANS, "sha384").encode())
    assert csr.is_signature_valid
    assert csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "node1"
    usage = csr.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value.digital_signature and not usage.value.key_cert_sign
    assert list(csr.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value) == [
        ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    assert isinstance(csr.signature_hash_algorithm, hashes.SHA384)


def test_fresh_certificate_of_this_ca_needs_nothing(pki):
    facts = certificate_facts(pki["cert"], pki["key"], pki["ca"], NOW)
    assert facts["issued_by_ca"] and facts["matches_key"]
    assert sorted(subject_alt_names(pki["cert"])) == sorted(SANS)
    assert certificate_reasons(facts, False, SANS, 30, False) == []


def test_every_reason_in_the_roles_words(pki):
    _other_key, other_ca = make_ca("molecule other CA")
    facts = certificate_facts(pki["cert"], generate_key("ECC", "secp384r1", 0), other_ca,
                              NOW + datetime.timedelta(days=340))
    reasons = certificate_reasons(facts, False, SANS + ["DNS:node1.example"], 30, True)
    assert reasons[0] == "renewal forced (ipsec_pki_force_renewal)"
    assert reasons[1].startswith("it expires within 30 days (20271201")
    assert reasons[2:] == ["it was not issued by this CA",
                           "its names/addresses differ from DNS:node1,IP:10.0.0.1,DNS:node1.example",
                           "it does not match the private key"]


def test_no_certificate_or_new_key_skips_the_details():
    assert certificate_reasons(None, False, SANS, 30, False) == ["no certificate yet"]
    assert certificate_reasons(None, True, SANS, 30, False) == ["no certificate yet",
                                                                "the private key was regenerated"]


def test_no_ca_yet_means_not_issued_by_it(pki):
    assert not certificate_facts(pki["cert"], pki["key"], None, NOW)["issued_by_ca"]


def test_bad_subject_alt_name_is_refused(pki):
    with pytest.raises(ValueError, match="URI:x"):
        build_csr(pki["key"], "node1", ["URI:x"], "sha384")


@pytest.mark.skipif(os.geteuid() != 0, reason="the module gives the key to root")
def test_the_module_narrows_a_key_whose_mode_drifted_and_keeps_it(tmp_path):
    """ipsec_host_pki as Ansible's module runner starts it (python MODULE ARGS_FILE): a key left readable by others
    is narrowed to 0600, owner root, through file_transaction.set_attributes; the key itself is kept."""
    args_file = tmp_path / "args.json"
    key = tmp_path / "private" / "host.key"
    key.parent.mkdir()
    args_file.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {
        "key_path": str(key), "certificate_path": str(tmp_path / "host.crt"), "common_name": "node1",
        "subject_alt_names": SANS}}))

    def run():
        process = subprocess.run([sys.executable, str(ROOT / "plugins" / "modules" / "ipsec_host_pki.py"),
                                  str(args_file)], capture_output=True, text=True, timeout=120, check=False,
                                 env=dict(os.environ, PYTHONPATH=str(ROOT / ".build" / "collections")))
        assert process.returncode == 0, process.stderr + process.stdout
        return json.loads(process.stdout)

    run()
    material = key.read_bytes()
    key.chmod(0o644)
    second = run()
    assert second["changed"] and stat.S_IMODE(key.stat().st_mode) == 0o600
    assert (key.stat().st_uid, key.stat().st_gid) == (0, 0) and key.read_bytes() == material
