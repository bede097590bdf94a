# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ipsec role's CA on the controller: its key, its self-signed certificate and the checks a usable CA passes.

Used by gpufabric.core.ipsec_ca. Functions take cryptography objects or plain data; nothing here writes a file.
The CRL is swanctl_crl's; the hosts' keys and certificates are ipsec_pki's.
"""

from __future__ import annotations

import datetime

from ansible_collections.gpufabric.core.plugins.module_utils.swanctl_crl import DIGESTS, _utc

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
except ImportError:  # the module reports it (swanctl_crl.HAS_CRYPTOGRAPHY)
    pass


def new_key():
    """A new CA key: ECDSA on P-384, as the role has always made it."""
    return ec.generate_private_key(ec.SECP384R1())


def key_pem(key, passphrase):
    """The CA key as stored: traditional PEM (Proc-Type 4,ENCRYPTED with the best cipher when a passphrase is set)."""
    encryption = (serialization.BestAvailableEncryption(passphrase.encode()) if passphrase
                  else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, encryption)


def self_signed(key, common_name, valid_days, digest, now):
    """The CA certificate: CA:TRUE with pathlen 0, keyCertSign and cRLSign, both critical, and key identifiers."""
    if digest not in DIGESTS:
        raise ValueError("digest must be one of %s" % ", ".join(DIGESTS))
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    public = key.public_key()
    builder = (x509.CertificateBuilder()
               .subject_name(name).issuer_name(name).public_key(public)
               .serial_number(x509.random_serial_number())
               .not_valid_before(now).not_valid_after(now + datetime.timedelta(days=valid_days))
               .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
               .add_extension(x509.KeyUsage(digital_signature=False, content_commitment=False,
                                            key_encipherment=False, data_encipherment=False, key_agreement=False,
                                            key_cert_sign=True, crl_sign=True, encipher_only=False,
                                            decipher_only=False), critical=True)
               .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
               .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False))
    return builder.sign(key, getattr(hashes, digest.upper())())


def certificate_pem(certificate):
    return certificate.public_bytes(serialization.Encoding.PEM)


def usability_problems(certificate, key, must_outlive_days, now):
    """Why a CA certificate cannot sign the role's host certificates ([] when it can)."""
    problems = []
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints).value
        is_ca = constraints.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        problems.append("it is not a CA certificate (no basic constraint CA:TRUE)")
    not_after = _utc(certificate, "not_valid_after")
    if not_after < now + datetime.timedelta(days=must_outlive_days):
        problems.append("it ends %s, before a certificate issued now for ipsec_pki_cert_valid_days (%d days) would"
                        % (not_after.isoformat(), must_outlive_days))
    public_der = serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    if key is not None and certificate.public_key().public_bytes(*public_der) != key.public_key().public_bytes(
            *public_der):
        problems.append("it does not belong to the CA key beside it")
    return problems
