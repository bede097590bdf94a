"""gpufabric.core.ipsec_ca run as Ansible runs it, on real keys and certificates made by cryptography here."""

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec import ca as ipsec_ca

ROOT = Path(__file__).resolve().parents[3]
NOW = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
PASSPHRASE = "unit CA passphrase 0123456789"


def run_module(args, check=False, diff=False, expect_failure=False):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"), ANSIBLE_FORCE_COLOR="false")
    command = [str(Path(sys.executable).parent / "ansible"), "localhost", "-m", "gpufabric.core.ipsec_ca",
               "-a", json.dumps(args), "-o"] + (["--check"] if check else []) + (["--diff"] if diff else [])
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd=str(ROOT),
                            check=False)
    assert (result.returncode != 0) == expect_failure, result.stdout + result.stderr
    return json.loads(result.stdout.split("=>", 1)[1]), result.stdout + result.stderr


def arguments(folder, **extra):
    args = {"key_path": str(folder / "pki" / "ca.key"), "certificate_path": str(folder / "pki" / "ca.crt"),
            "crl_path": str(folder / "pki" / "crl.pem"), "issued_dir": str(folder / "pki" / "issued"),
            "passphrase": PASSPHRASE}
    args.update(extra)
    return args


def test_creates_the_ca_once_then_changes_nothing(tmp_path):
    args = arguments(tmp_path)
    planned, unused_output = run_module(args, check=True, diff=True)
    assert planned["changed"] is True and planned["ca_certificate"] == ""
    assert planned["created"] == [args["key_path"], args["certificate_path"]]
    assert not (tmp_path / "pki").exists()

    created, output = run_module(args)
    assert created["changed"] is True and created["crl_number"] == 1 and created["revoked"] == []
    pki = tmp_path / "pki"
    files = [pki, pki / "issued", pki / "ca.key", pki / "ca.crt", pki / "crl.pem"]
    assert {path.name: oct(path.stat().st_mode & 0o777) for path in files} == {
        "pki": "0o700", "issued": "0o700", "ca.key": "0o600", "ca.crt": "0o644", "crl.pem": "0o644"}
    key_text = (pki / "ca.key").read_text()
    assert key_text.startswith("-----BEGIN ENCRYPTED PRIVATE KEY-----")
    with pytest.raises(TypeError, match="encrypted"):
        serialization.load_pem_private_key(key_text.encode(), password=None)
    key = serialization.load_pem_private_key(key_text.encode(), password=PASSPHRASE.encode())
    assert isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == "secp384r1"
    assert PASSPHRASE not in output
    certificate = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    assert created["ca_certificate"] == (pki / "ca.crt").read_text()
    assert certificate.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    usage = certificate.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value.key_cert_sign and usage.value.crl_sign
    assert certificate.subject.rfc4514_string() == "CN=gpufabric IPsec CA"

    before = {name: (pki / name).read_bytes() for name in ("ca.key", "ca.crt", "crl.pem")}
    assert run_module(args, check=True)[0]["changed"] is False
    again, unused_output = run_module(args)
    assert again["changed"] is False and again["created"] == [] and again["update_reason"] is None
    assert {name: (pki / name).read_bytes() for name in before} == before


def test_a_wrong_passphrase_stops_and_keeps_the_key(tmp_path):
    run_module(arguments(tmp_path))
    key_before = (tmp_path / "pki" / "ca.key").read_bytes()
    failed, output = run_module(arguments(tmp_path, passphrase="not the passphrase 0123"), expect_failure=True)
    assert "ipsec_pki_ca_passphrase must be the passphrase it is encrypted with" in failed["msg"]
    assert "not the passphrase" not in output
    assert (tmp_path / "pki" / "ca.key").read_bytes() == key_before


def test_refuses_a_ca_that_ends_before_the_certificates_it_would_sign(tmp_path):
    run_module(arguments(tmp_path, valid_days=30, must_outlive_days=10))
    failed, unused_output = run_module(arguments(tmp_path, must_outlive_days=365), expect_failure=True)
    assert "is not a usable CA" in failed["msg"] and "ipsec_pki_cert_valid_days (365 days)" in failed["msg"]


def test_refuses_a_certificate_that_is_not_a_ca_or_not_of_the_key(tmp_path):
    run_module(arguments(tmp_path))
    other = ec.generate_private_key(ec.SECP384R1())
    foreign = ipsec_ca.self_signed(other, "another CA", 3650, "sha384", NOW)
    key = serialization.load_pem_private_key((tmp_path / "pki" / "ca.key").read_bytes(), PASSPHRASE.encode())
    assert ipsec_ca.usability_problems(foreign, other, 365, NOW) == []
    assert ipsec_ca.usability_problems(foreign, key, 365, NOW) == ["it does not belong to the CA key beside it"]
    end_entity = (x509.CertificateBuilder().subject_name(foreign.subject).issuer_name(foreign.subject)
                  .public_key(other.public_key()).serial_number(x509.random_serial_number())
                  .not_valid_before(NOW).not_valid_after(NOW + datetime.timedelta(days=3650))
                  .sign(other, ipsec_ca.hashes.SHA384()))
    assert ipsec_ca.usability_problems(end_entity, other, 365, NOW) == [
        "it is not a CA certificate (no basic constraint CA:TRUE)"]
    (tmp_path / "pki" / "ca.crt").write_bytes(ipsec_ca.certificate_pem(foreign))
    failed, unused_output = run_module(arguments(tmp_path), expect_failure=True)
    assert "it does not belong to the CA key beside it" in failed["msg"]


def test_revokes_the_certificates_of_a_revoked_host(tmp_path):
    first, unused_output = run_module(arguments(tmp_path))
    key = serialization.load_pem_private_key((tmp_path / "pki" / "ca.key").read_bytes(), PASSPHRASE.encode())
    ca_cert = x509.load_pem_x509_certificate((tmp_path / "pki" / "ca.crt").read_bytes())
    host_key = ec.generate_private_key(ec.SECP256R1())
    host = (x509.CertificateBuilder().subject_name(x509.Name([])).issuer_name(ca_cert.subject)
            .public_key(host_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(NOW).not_valid_after(NOW + datetime.timedelta(days=365))
            .sign(key, ipsec_ca.hashes.SHA384()))
    (tmp_path / "pki" / "issued" / "node3").mkdir()
    (tmp_path / "pki" / "issued" / "node3" / "20261201T000000Z.pem").write_bytes(ipsec_ca.certificate_pem(host))
    revoked, unused_output = run_module(arguments(tmp_path, revoked_hosts=["node3"]), diff=True)
    assert revoked["changed"] is True and revoked["crl_number"] == first["crl_number"] + 1
    assert [(entry["host"], entry["serial"]) for entry in revoked["revoked"]] == [("node3", host.serial_number)]
    assert revoked["msg"].startswith("CRL 2 revokes 1 certificate(s) (node3 unspecified)")
    crl = x509.load_pem_x509_crl((tmp_path / "pki" / "crl.pem").read_bytes())
    assert crl.get_revoked_certificate_by_serial_number(host.serial_number) is not None
