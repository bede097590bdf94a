"""The CRL builder and the swanctl_crl module, with real keys and certificates made here by cryptography."""

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec import crl as swanctl_crl

ROOT = Path(__file__).resolve().parents[3]
NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def make_ca(folder):
    key = ec.generate_private_key(ec.SECP384R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "unit CA")])
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(NOW - datetime.timedelta(days=1)).not_valid_after(NOW + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA384())
    )
    (folder / "ca.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                      serialization.NoEncryption()))
    (folder / "ca.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert, key


def issue(folder, ca_cert, ca_key, host, stamp, issued_days_ago, valid_days=365):
    key = ec.generate_private_key(ec.SECP256R1())
    start = NOW - datetime.timedelta(days=issued_days_ago)
    cert = (
        x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)]))
        .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(start + datetime.timedelta(days=valid_days))
        .sign(ca_key, hashes.SHA384())
    )
    target = folder / "issued" / host
    target.mkdir(parents=True, exist_ok=True)
    (target / ("%s.pem" % stamp)).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert


@pytest.fixture
def pki(tmp_path):
    ca_cert, ca_key = make_ca(tmp_path)
    certs = {
        "node1-old": issue(tmp_path, ca_cert, ca_key, "node1", "20260101T000000Z", 200),
        "node1": issue(tmp_path, ca_cert, ca_key, "node1", "20261101T000000Z", 29),
        "node2": issue(tmp_path, ca_cert, ca_key, "node2", "20261101T000000Z", 29),
        "node3-expired": issue(tmp_path, ca_cert, ca_key, "node3", "20240101T000000Z", 900),
        "node3": issue(tmp_path, ca_cert, ca_key, "node3", "20261101T000000Z", 29),
    }
    return tmp_path, ca_cert, ca_key, certs


def test_revocations_from_issued_record(pki):
    folder, certs = pki[0], pki[3]
    entries = swanctl_crl.collect_revocations(str(folder / "issued"), ["node3"], True, NOW)
    found = {(e["host"], e["serial"], e["reason"]) for e in entries}
    assert found == {
        ("node1", certs["node1-old"].serial_number, "superseded"),
        ("node3", certs["node3"].serial_number, "unspecified"),
    }
    # The expired certificate of node3 is left out; the newest certificates of node1 and node2 stay valid.
    assert swanctl_crl.collect_revocations(str(folder / "issued"), [], False, NOW) == []


def test_revoking_a_host_never_issued_is_an_error(pki):
    folder = pki[0]
    with pytest.raises(swanctl_crl.CrlError, match=r"no certificate was ever issued to them.*\['nodeX'\]|nodeX"):
        swanctl_crl.collect_revocations(str(folder / "issued"), ["nodeX"], True, NOW)


def test_crl_carries_the_authority_key_identifier_strongswan_needs(pki):
    folder, ca_cert, ca_key, certs = pki
    entries = swanctl_crl.collect_revocations(str(folder / "issued"), ["node3"], True, NOW)
    pem = swanctl_crl.build_crl(ca_cert, ca_key, entries, None, datetime.timedelta(days=30), "sha384", NOW)[1]
    parsed = x509.load_pem_x509_crl(pem)
    aki = parsed.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    assert aki == ski
    assert parsed.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number == 1
    assert parsed.is_signature_valid(ca_cert.public_key())
    assert parsed.get_revoked_certificate_by_serial_number(certs["node3"].serial_number) is not None
    assert parsed.get_revoked_certificate_by_serial_number(certs["node2"].serial_number) is None
    described = swanctl_crl.describe_crl(parsed)
    assert described["next_update"] == (NOW + datetime.timedelta(days=30)).isoformat()
    assert {r["reason"] for r in described["revoked"]} == {"superseded", "unspecified"}


def test_update_only_when_needed_and_dates_kept(pki):
    folder, ca_cert, ca_key, certs = pki
    entries = swanctl_crl.collect_revocations(str(folder / "issued"), [], True, NOW)
    crl = swanctl_crl.build_crl(ca_cert, ca_key, entries, None, datetime.timedelta(days=30), "sha384", NOW)[0]
    window = datetime.timedelta(days=10)
    assert swanctl_crl.why_update(crl, ca_cert, entries, window, NOW) is None
    assert swanctl_crl.why_update(crl, ca_cert, entries, window, NOW + datetime.timedelta(days=21)) == \
        "the CRL expires within the refresh window"
    more = swanctl_crl.collect_revocations(str(folder / "issued"), ["node2"], True, NOW)
    assert swanctl_crl.why_update(crl, ca_cert, more, window, NOW) == "the set of revoked certificates changed"
    later = NOW + datetime.timedelta(days=2)
    second = swanctl_crl.build_crl(ca_cert, ca_key, more, crl, datetime.timedelta(days=30), "sha384", later)[0]
    assert second.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number == 2
    old = second.get_revoked_certificate_by_serial_number(certs["node1-old"].serial_number)
    new = second.get_revoked_certificate_by_serial_number(certs["node2"].serial_number)
    assert swanctl_crl._utc(old, "revocation_date") == NOW
    assert swanctl_crl._utc(new, "revocation_date") == later


def test_crl_of_another_ca_or_without_aki_is_replaced(pki, tmp_path_factory):
    ca_cert, ca_key = pki[1], pki[2]
    other_cert, other_key = make_ca(tmp_path_factory.mktemp("other"))
    foreign = swanctl_crl.build_crl(other_cert, other_key, [], None, datetime.timedelta(days=30), "sha384", NOW)[0]
    assert swanctl_crl.why_update(foreign, ca_cert, [], datetime.timedelta(days=1), NOW) == \
        "the CRL was not issued by this CA"
    # What community.crypto.x509_crl writes: right issuer and signature, no authorityKeyIdentifier.
    bare = (x509.CertificateRevocationListBuilder().issuer_name(ca_cert.subject).last_update(NOW)
            .next_update(NOW + datetime.timedelta(days=30)).sign(ca_key, hashes.SHA256()))
    assert "authorityKeyIdentifier" in swanctl_crl.why_update(bare, ca_cert, [], datetime.timedelta(days=1), NOW)


def test_wrong_passphrase_is_reported_without_key_material(pki):
    folder = pki[0]
    with pytest.raises(swanctl_crl.CrlError, match="cannot read the CA private key") as error:
        swanctl_crl.load_private_key(str(folder / "ca.key"), "not-the-passphrase")
    assert "BEGIN" not in str(error.value)


def _run_module(args, check=False):
    env = dict(os.environ)
    env["ANSIBLE_COLLECTIONS_PATH"] = str(ROOT / ".build" / "collections")
    env["ANSIBLE_FORCE_COLOR"] = "false"
    command = [str(Path(sys.executable).parent / "ansible"), "localhost", "-m", "gpufabric.core.swanctl_crl",
               "-a", json.dumps(args), "-o"] + (["--check"] if check else [])
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd=str(ROOT),
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.split("=>", 1)[1])


def test_module_check_apply_then_nothing_to_do(pki):
    folder = pki[0]
    args = {"path": str(folder / "crl.pem"), "ca_certificate_path": str(folder / "ca.crt"),
            "ca_privatekey_path": str(folder / "ca.key"), "issued_dir": str(folder / "issued"),
            "revoked_hosts": ["node3"], "mode": "0644"}
    first = _run_module(args, check=True)
    assert first["changed"] is True and not (folder / "crl.pem").exists()
    applied = _run_module(args)
    assert applied["changed"] is True and applied["crl_number"] == 1
    assert oct((folder / "crl.pem").stat().st_mode & 0o777) == "0o644"
    assert _run_module(args, check=True)["changed"] is False
    again = _run_module(args)
    assert again["changed"] is False and again["update_reason"] is None
    assert {r["host"] for r in again["revoked"]} == {"node1", "node3"}
