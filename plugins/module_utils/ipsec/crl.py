# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A certificate revocation list that strongSwan actually applies.

strongSwan (5.9 measured) finds a CRL for a CA by the CRL's authorityKeyIdentifier; a CRL without one is loaded but
never consulted, so a revoked peer is still accepted. community.crypto.x509_crl writes no authorityKeyIdentifier,
hence this small builder: same cryptography library, plus the authorityKeyIdentifier and an increasing CRL number.
(strongSwan 5.9 also keeps every CRL it was given and consults the first, so whoever loads a new one must clear the
old: the ipsec role reloads with `swanctl --load-all --clear`.)

The revoked set comes from the certificates the controller issued, kept as <issued_dir>/<host>/<anything>.pem:
every certificate of a revoked host, and (optionally) every certificate of a host except its newest (superseded).
"""

from __future__ import annotations

import datetime
import os

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ed448, ed25519
    from cryptography.x509.oid import ExtensionOID
    HAS_CRYPTOGRAPHY = True
    CRYPTOGRAPHY_IMPORT_ERROR = None
except ImportError as exc:  # the module reports it with missing_required_lib
    HAS_CRYPTOGRAPHY = False
    CRYPTOGRAPHY_IMPORT_ERROR = exc

DIGESTS = ("sha256", "sha384", "sha512")


class CrlError(ValueError):
    """Something the operator must fix (unreadable CA, wrong passphrase, bad issued certificate)."""


def _utc(value, name):
    """Timestamps as aware UTC datetimes, whatever the cryptography version offers."""
    aware = getattr(value, name + "_utc", None)
    if aware is not None:
        return aware
    naive = getattr(value, name)
    return naive.replace(tzinfo=datetime.timezone.utc) if naive is not None else None


def load_certificate(path):
    try:
        with open(path, "rb") as handle:
            return x509.load_pem_x509_certificate(handle.read())
    except (OSError, ValueError) as exc:
        raise CrlError("cannot read certificate %s: %s" % (path, exc))


def load_private_key(path, passphrase=None):
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        return serialization.load_pem_private_key(data, password=passphrase.encode() if passphrase else None)
    except (OSError, ValueError, TypeError) as exc:
        # The message of cryptography names the problem (bad passphrase, not a key) without key material.
        raise CrlError("cannot read the CA private key %s: %s" % (path, exc))


def collect_revocations(issued_dir, revoked_hosts, revoke_superseded, now):
    """Return the certificates to revoke: dicts with host, serial (int), reason, not_after, path.

    Certificates already expired are left out: a CRL need not list them and strongSwan refuses them anyway.
    """
    revoked_hosts = set(revoked_hosts or [])
    entries = []
    if not os.path.isdir(issued_dir):
        if revoked_hosts:
            raise CrlError("hosts %s are to be revoked but %s (the record of issued certificates) does not exist" % (
                sorted(revoked_hosts), issued_dir))
        return entries
    unknown = revoked_hosts - set(os.listdir(issued_dir))
    if unknown:
        raise CrlError("hosts %s are to be revoked but no certificate was ever issued to them by this CA (%s)" % (
            sorted(unknown), issued_dir))
    for host in sorted(os.listdir(issued_dir)):
        folder = os.path.join(issued_dir, host)
        if not os.path.isdir(folder):
            continue
        certs = []
        for name in sorted(os.listdir(folder)):
            if name.endswith(".pem"):
                path = os.path.join(folder, name)
                certs.append((load_certificate(path), path))
        certs.sort(key=lambda item: (_utc(item[0], "not_valid_before"), item[0].serial_number))
        for position, (cert, path) in enumerate(certs):
            newest = position == len(certs) - 1
            if host in revoked_hosts:
                reason = "unspecified"
            elif revoke_superseded and not newest:
                reason = "superseded"
            else:
                continue
            not_after = _utc(cert, "not_valid_after")
            if not_after <= now:
                continue
            entries.append({"host": host, "serial": cert.serial_number, "serial_hex": "%x" % cert.serial_number,
                            "reason": reason,
                            "not_after": not_after.isoformat(), "path": path})
    return entries


def _subject_key_identifier(ca_cert):
    try:
        return ca_cert.extensions.get_extension_for_oid(ExtensionOID.SUBJECT_KEY_IDENTIFIER).value.digest
    except x509.ExtensionNotFound:
        return x509.SubjectKeyIdentifier.from_public_key(ca_cert.public_key()).digest


def read_crl(path):
    if not os.path.exists(path):
        return None
    try:
        with open(path, "rb") as handle:
            return x509.load_pem_x509_crl(handle.read())
    except (OSError, ValueError):
        return None  # unreadable or not PEM: replaced by a fresh one


def describe_crl(crl):
    """Plain data about a CRL: number, next_update (ISO), revoked serials with reasons."""
    if crl is None:
        return None
    try:
        number = crl.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number
    except x509.ExtensionNotFound:
        number = None
    revoked = []
    for entry in crl:
        try:
            reason = entry.extensions.get_extension_for_class(x509.CRLReason).value.reason.name
        except x509.ExtensionNotFound:
            reason = "unspecified"
        revoked.append({"serial": entry.serial_number, "reason": reason,
                        "revoked_at": _utc(entry, "revocation_date").isoformat()})
    next_update = _utc(crl, "next_update")
    return {
        "crl_number": number,
        "next_update": next_update.isoformat() if next_update else None,
        "revoked": sorted(revoked, key=lambda r: r["serial"]),
    }


def why_update(crl, ca_cert, revocations, refresh_before, now):
    """Return why the CRL must be written again, or None when it is current."""
    if crl is None:
        return "no readable CRL yet"
    if crl.issuer != ca_cert.subject or not crl.is_signature_valid(ca_cert.public_key()):
        return "the CRL was not issued by this CA"
    try:
        aki = crl.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value.key_identifier
    except x509.ExtensionNotFound:
        aki = None
    if aki != _subject_key_identifier(ca_cert):
        return "the CRL has no authorityKeyIdentifier of this CA (strongSwan would ignore it)"
    current = {(r["serial"], r["reason"]) for r in describe_crl(crl)["revoked"]}
    wanted = {(r["serial"], r["reason"]) for r in revocations}
    if current != wanted:
        return "the set of revoked certificates changed"
    next_update = _utc(crl, "next_update")
    if next_update is None or next_update - now < refresh_before:
        return "the CRL expires within the refresh window"
    return None


def build_crl(ca_cert, ca_key, revocations, previous, valid_for, digest, now):
    """Sign a CRL listing revocations; keeps the revocation dates of entries already in previous."""
    if digest not in DIGESTS:
        raise CrlError("digest must be one of %s" % ", ".join(DIGESTS))
    dates = {}
    number = 0
    if previous is not None:
        for entry in previous:
            dates[entry.serial_number] = _utc(entry, "revocation_date")
        try:
            number = previous.extensions.get_extension_for_class(x509.CRLNumber).value.crl_number
        except x509.ExtensionNotFound:
            number = 0
    builder = (
        x509.CertificateRevocationListBuilder()
        .issuer_name(ca_cert.subject)
        .last_update(now)
        .next_update(now + valid_for)
        .add_extension(x509.AuthorityKeyIdentifier(_subject_key_identifier(ca_cert), None, None), critical=False)
        .add_extension(x509.CRLNumber(number + 1), critical=False)
    )
    for item in revocations:
        revoked = (
            x509.RevokedCertificateBuilder()
            .serial_number(item["serial"])
            .revocation_date(dates.get(item["serial"], now))
            .add_extension(x509.CRLReason(getattr(x509.ReasonFlags, item["reason"])), critical=False)
            .build()
        )
        builder = builder.add_revoked_certificate(revoked)
    algorithm = None if isinstance(ca_key, (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)) else \
        getattr(hashes, digest.upper())()
    crl = builder.sign(private_key=ca_key, algorithm=algorithm)
    return crl, crl.public_bytes(serialization.Encoding.PEM)


def plan_crl(path, ca_cert, load_ca_key, issued_dir, revoked_hosts, revoke_superseded, valid_days, refresh_days,
             digest, now):
    """Decide whether the CRL in path must be rewritten and, if so, build it.

    Returns (result, pem): result holds update_reason, revoked, crl_number, next_update and, on a change, the diff
    of revoked serials; pem is the new CRL to write, or None when the CRL is current. load_ca_key is called only
    when a CRL must be signed, so a run that changes nothing never decrypts the CA key.
    """
    if not 0 <= refresh_days < valid_days:
        raise CrlError("refresh_days (%d) must be at least 0 and less than valid_days (%d)"
                       % (refresh_days, valid_days))
    revocations = collect_revocations(issued_dir, revoked_hosts, revoke_superseded, now)
    previous = read_crl(path)
    reason = why_update(previous, ca_cert, revocations, datetime.timedelta(days=refresh_days), now)
    before = describe_crl(previous)
    result = {"update_reason": reason, "revoked": revocations}
    if reason is None:
        result.update(crl_number=before["crl_number"], next_update=before["next_update"])
        return result, None
    crl, pem = build_crl(ca_cert, load_ca_key(), revocations, previous, datetime.timedelta(days=valid_days), digest,
                         now)
    after = describe_crl(crl)
    result.update(crl_number=after["crl_number"], next_update=after["next_update"], diff={
        "before": "".join("%x %s\n" % (r["serial"], r["reason"]) for r in (before or {}).get("revoked", [])),
        "after": "".join("%x %s\n" % (r["serial"], r["reason"]) for r in after["revoked"]),
        "before_header": "%s (revoked serials)" % path,
        "after_header": "%s (revoked serials)" % path,
    })
    return result, pem
