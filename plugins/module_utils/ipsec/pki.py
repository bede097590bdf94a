# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's IPsec key and certificate: whether the key fits, whether the certificate must be reissued, its CSR, and
what the CA on the controller checks in that CSR before it signs it.

Used by gpufabric.core.ipsec_host_pki on the host, so that the private key never leaves it, and by the
ipsec_csr_problems filter on the controller. Functions take cryptography objects or plain data; nothing here reads
a file.
"""

from __future__ import annotations

import datetime
import ipaddress

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    HAS_CRYPTOGRAPHY = True
except ImportError:  # reported by the module
    HAS_CRYPTOGRAPHY = False

CURVES = {"secp256r1": "SECP256R1", "secp384r1": "SECP384R1", "secp521r1": "SECP521R1"}
DIGESTS = {"sha256": "SHA256", "sha384": "SHA384", "sha512": "SHA512"}
ASN1_TIME = "%Y%m%d%H%M%SZ"


def key_fits(key, key_type, curve, size):
    """Whether an existing private key is of the asked type (and curve or size)."""
    if key_type == "ECC":
        return isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == curve
    if key_type == "RSA":
        return isinstance(key, rsa.RSAPrivateKey) and key.key_size == size
    return isinstance(key, ed25519.Ed25519PrivateKey)


def generate_key(key_type, curve, size):
    if key_type == "ECC":
        return ec.generate_private_key(getattr(ec, CURVES[curve])())
    if key_type == "RSA":
        return rsa.generate_private_key(public_exponent=65537, key_size=size)
    return ed25519.Ed25519PrivateKey.generate()


def key_pem(key):
    """The key as the host stores it (unencrypted: it is readable by root only, mode 0600)."""
    form = (serialization.PrivateFormat.PKCS8 if isinstance(key, ed25519.Ed25519PrivateKey)
            else serialization.PrivateFormat.TraditionalOpenSSL)
    return key.private_bytes(serialization.Encoding.PEM, form, serialization.NoEncryption())


def _public_der(public_key):
    return public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def _extension(certificate, kind):
    try:
        return certificate.extensions.get_extension_for_class(kind).value
    except x509.ExtensionNotFound:
        return None


def _not_after(certificate):
    value = getattr(certificate, "not_valid_after_utc", None)
    return value if value is not None else certificate.not_valid_after.replace(tzinfo=datetime.timezone.utc)


def subject_alt_names(certificate):
    """The certificate's SANs as DNS:name, IP:address and email:address (the role's notation)."""
    names = _extension(certificate, x509.SubjectAlternativeName)
    found = []
    for name in names or []:
        if isinstance(name, x509.DNSName):
            found.append("DNS:%s" % name.value)
        elif isinstance(name, x509.IPAddress):
            found.append("IP:%s" % name.value)
        elif isinstance(name, x509.RFC822Name):
            found.append("email:%s" % name.value)
        else:
            found.append(str(name))
    return found


def _general_name(text):
    kind, unused_separator, value = text.partition(":")
    if kind == "DNS":
        return x509.DNSName(value)
    if kind == "IP":
        return x509.IPAddress(ipaddress.ip_address(value))
    if kind == "email":
        return x509.RFC822Name(value)
    raise ValueError("subject alternative name %r is not DNS:, IP: or email:" % text)


def certificate_facts(certificate, key, ca_certificate, now):
    """What the reissue decision reads from an installed certificate: plain data, for certificate_reasons."""
    ca_ski = _extension(ca_certificate, x509.SubjectKeyIdentifier) if ca_certificate is not None else None
    aki = _extension(certificate, x509.AuthorityKeyIdentifier)
    not_after = _not_after(certificate)
    return {
        "not_after": not_after.strftime(ASN1_TIME),
        "seconds_left": int((not_after - now).total_seconds()),
        "issued_by_ca": bool(ca_ski is not None and aki is not None and aki.key_identifier == ca_ski.digest),
        "sans": subject_alt_names(certificate),
        "matches_key": _public_der(certificate.public_key()) == _public_der(key.public_key()),
    }


def certificate_reasons(facts, key_changed, expected_sans, renew_days, force_renewal):
    """Why this host needs a new certificate ([] when it does not), in the words the role has always used.

    facts: certificate_facts() of the installed certificate, None when there is none (or it cannot be read).
    """
    reasons = []
    if force_renewal:
        reasons.append("renewal forced (ipsec_pki_force_renewal)")
    if facts is None:
        reasons.append("no certificate yet")
    if key_changed:
        reasons.append("the private key was regenerated")
    if facts is None or key_changed:
        return reasons
    if facts["seconds_left"] < renew_days * 86400:
        reasons.append("it expires within %d days (%s)" % (renew_days, facts["not_after"]))
    if not facts["issued_by_ca"]:
        reasons.append("it was not issued by this CA")
    if sorted(facts["sans"]) != sorted(expected_sans):
        reasons.append("its names/addresses differ from %s" % ",".join(expected_sans))
    if not facts["matches_key"]:
        reasons.append("it does not match the private key")
    return reasons


def build_csr(key, common_name, sans, digest):
    """The host's certificate signing request (PEM): an IKE end entity, digitalSignature, server and client auth."""
    builder = (x509.CertificateSigningRequestBuilder()
               .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
               .add_extension(x509.SubjectAlternativeName([_general_name(s) for s in sans]), critical=False)
               .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                            data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                            crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
               .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH,
                                                     ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False))
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else getattr(hashes, DIGESTS[digest])()
    return builder.sign(key, algorithm).public_bytes(serialization.Encoding.PEM).decode("ascii")


# What the role's CSR carries (build_csr): the names, the key usage and the extended key usage; nothing else.
_CSR_EXTENSIONS = ("subjectAltName", "keyUsage", "extendedKeyUsage")
_CSR_EXTENDED_USAGES = ("serverAuth", "clientAuth")


def csr_problems(csr_pem, common_name, expected_sans):
    """Why the CA must not sign a host's CSR ([] when it may): the request came back from the host, which could
    send anything. It must be signed by its own key and name exactly the subject and the names the controller
    computed for that host from the inventory (common_name, expected_sans in the role's DNS:/IP:/email:
    notation), and ask for nothing else: no CA basic constraint, no other usage, no other extension (the CA's
    signer copies a CSR's extensions into the certificate)."""
    try:
        csr = x509.load_pem_x509_csr(csr_pem.encode("ascii") if isinstance(csr_pem, str) else csr_pem)
    except (ValueError, TypeError, UnicodeEncodeError) as exc:
        return ["the signing request is not a PEM certificate signing request: %s" % exc]
    if not csr.is_signature_valid:
        return ["the signing request's signature does not verify: it was not made with the key it carries"]
    problems = []
    names = csr.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    others = [attribute for attribute in csr.subject if attribute.oid != NameOID.COMMON_NAME]
    if [name.value for name in names] != [common_name] or others:
        problems.append("its subject is %s, not CN=%s (this host's ipsec_identity)" % (
            csr.subject.rfc4514_string() or "empty", common_name))
    requested = sorted(subject_alt_names(csr))
    if sorted(map(_san_key, requested)) != sorted(map(_san_key, expected_sans)):
        problems.append("it asks for the names %s, not this host's %s (ipsec_identity, ipsec_address, "
                        "ipsec_pki_cert_names, ipsec_pki_cert_addresses)" % (
                            ", ".join(requested) or "none", ", ".join(sorted(expected_sans))))
    extra = sorted(_oid_name(extension.oid) for extension in csr.extensions
                   if _oid_name(extension.oid) not in _CSR_EXTENSIONS)
    if extra:
        problems.append("it asks for extensions the role never requests: %s" % ", ".join(extra))
    usage = _extension(csr, x509.KeyUsage)
    if usage is None or not usage.digital_signature or usage.key_cert_sign or usage.crl_sign:
        problems.append("its key usage is not digitalSignature alone (a host certificate must not sign "
                        "certificates or CRLs)")
    extended = _extension(csr, x509.ExtendedKeyUsage)
    unexpected = sorted(_oid_name(oid) for oid in extended or [] if _oid_name(oid) not in _CSR_EXTENDED_USAGES)
    if unexpected:
        problems.append("it asks for extended key usages beyond serverAuth and clientAuth: %s" % ", ".join(unexpected))
    return problems


def _san_key(text):
    """A SAN as compared: addresses by value (FD00::1 is fd00::1), names and e-mail addresses without case."""
    kind, unused_separator, value = str(text).partition(":")
    if kind == "IP":
        try:
            return "IP:%s" % ipaddress.ip_address(value)
        except ValueError:
            pass
    return "%s:%s" % (kind, value.lower())


def _oid_name(oid):
    """The OID's short name where cryptography knows one (keyUsage, serverAuth), else its dotted form."""
    return getattr(oid, "_name", None) or oid.dotted_string
