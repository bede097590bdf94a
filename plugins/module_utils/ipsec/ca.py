# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ipsec role's CA on the controller: its key, its self-signed certificate and the checks a usable CA passes;
whether its folders and files can be trusted; the lock every run holds while it reads or writes them.

Used by gpufabric.core.ipsec_ca (and, for ipsec_pki_dir, by the ipsec_problems filter). Nothing here writes a CA
file: the module writes through file_transaction under ``locked``. The CRL is swanctl_crl's; the hosts' keys and
certificates are ipsec_pki's.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import errno
import fcntl
import os
import stat
import time

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.crl import DIGESTS, _utc

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, padding, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
    from cryptography.x509.oid import NameOID
except ImportError:  # the module reports it (swanctl_crl.HAS_CRYPTOGRAPHY)
    pass

# The lock every run of the module holds in the CA's folder: POSIX record locks (lockf), which NFS carries too, so
# that two runs at once (two AWX jobs, two operators) make one CA, never a key and a certificate of two.
LOCK_NAME = ".ipsec_ca.lock"
LOCK_WAIT_SECONDS = 300
# scrypt of a new encrypted CA key: N=2**14, r=8, p=1 (16 MiB per guess), the most OpenSSL 3 reads back (its scrypt
# memory limit is 32 MiB; `openssl pkcs8 -topk8 -scrypt` writes these). The traditional PEM encryption derives the
# key with one MD5 round, and cryptography's BestAvailableEncryption (50.0) writes PKCS#8 with 2048 PBKDF2 rounds.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2 ** 14, 8, 1
_OID_PBES2 = "1.2.840.113549.1.5.13"
_OID_SCRYPT = "1.3.6.1.4.1.11591.4.11"
_OID_AES256_CBC = "2.16.840.1.101.3.4.1.42"
LEGACY_ENCRYPTION = b"Proc-Type: 4,ENCRYPTED"


class CaLockTimeout(Exception):
    """Another run held the CA's lock for LOCK_WAIT_SECONDS."""


def new_key():
    """A new CA key: ECDSA on P-384, as the role has always made it."""
    return ec.generate_private_key(ec.SECP384R1())


def _der(tag, content):
    """One DER element: tag, definite length (short form below 128 bytes, long form above), content."""
    if len(content) < 0x80:
        length = bytes([len(content)])
    else:
        size = len(content).to_bytes((len(content).bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(size)]) + size
    return bytes([tag]) + length + content


def _der_sequence(*items):
    return _der(0x30, b"".join(items))


def _der_integer(number):
    return _der(0x02, number.to_bytes(number.bit_length() // 8 + 1, "big"))


def _der_oid(dotted):
    numbers = [int(part) for part in dotted.split(".")]
    encoded = bytes([40 * numbers[0] + numbers[1]])
    for number in numbers[2:]:
        chunk = [number & 0x7F]
        number >>= 7
        while number:
            chunk.insert(0, 0x80 | (number & 0x7F))
            number >>= 7
        encoded += bytes(chunk)
    return _der(0x06, encoded)


def encrypted_pkcs8(key, passphrase):
    """key as PKCS#8 EncryptedPrivateKeyInfo (PEM): PBES2 with scrypt (SCRYPT_N, _R, _P) and AES-256-CBC, the form
    `openssl pkcs8 -topk8 -scrypt` writes, read by cryptography, community.crypto and OpenSSL alike (RFC 8018,
    RFC 7914 section 7). Encoded here because cryptography cannot: its PKCS#8 BestAvailableEncryption writes PBKDF2
    with 2,048 iterations, and its encryption_builder() refuses PKCS#8 (50.0.2: "only supported with
    PrivateFormat.OpenSSH and PrivateFormat.PKCS12")."""
    plain = key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption())
    salt, iv = os.urandom(16), os.urandom(16)
    secret = Scrypt(salt=salt, length=32, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P).derive(passphrase.encode("utf-8"))
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(algorithms.AES(secret), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padder.update(plain) + padder.finalize()) + encryptor.finalize()
    scrypt_parameters = _der_sequence(_der(0x04, salt), _der_integer(SCRYPT_N), _der_integer(SCRYPT_R),
                                      _der_integer(SCRYPT_P))
    algorithm = _der_sequence(_der_oid(_OID_PBES2), _der_sequence(
        _der_sequence(_der_oid(_OID_SCRYPT), scrypt_parameters),
        _der_sequence(_der_oid(_OID_AES256_CBC), _der(0x04, iv))))
    body = base64.b64encode(_der_sequence(algorithm, _der(0x04, ciphertext))).decode("ascii")
    lines = [body[start:start + 64] for start in range(0, len(body), 64)]
    return ("-----BEGIN ENCRYPTED PRIVATE KEY-----\n%s\n-----END ENCRYPTED PRIVATE KEY-----\n"
            % "\n".join(lines)).encode("ascii")


def key_pem(key, passphrase):
    """A new CA key as stored: PKCS#8, encrypted with scrypt and AES-256 when a passphrase is set. Keys written by
    earlier releases (traditional PEM, Proc-Type 4,ENCRYPTED) are still read; the module warns about them."""
    if passphrase:
        return encrypted_pkcs8(key, passphrase)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _owner_problem(path, info, uid):
    if info.st_uid in (0, uid):
        return None
    return ("%s is owned by uid %d, neither root nor the user running Ansible (uid %d): another local user could "
            "have planted it. If it is yours, chown it to the user running Ansible; otherwise move it away and trust "
            "no CA found there" % (path, info.st_uid, uid))


def ancestor_problems(path, uid=None):
    """Why the folders above path (symbolic links resolved) let someone else replace what lies below, [] when none
    does: each existing one must be owned by root or uid and writable by no one else, unless it is sticky (/tmp),
    where only the owner of an entry may rename or remove it and the next folder down must be root's or uid's."""
    uid = os.geteuid() if uid is None else uid
    problems = []
    current = "/"
    for part in [""] + os.path.realpath(os.path.dirname(path.rstrip("/")) or "/").split("/")[1:]:
        current = os.path.join(current, part) if part else "/"
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            break
        problem = _owner_problem(current, info, uid)
        if problem:
            problems.append(problem)
        elif info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            problems.append("%s (above %s) is writable by %s: they could replace the folders below it. Make it "
                            "writable by its owner only (chmod go-w %s), or keep the CA elsewhere"
                            % (current, path, "every user" if info.st_mode & 0o002 else "its group", current))
    return problems


def entry_problems(path, kind, private, uid=None):
    """Why an existing CA folder (kind "directory") or file ("file") cannot be trusted, [] when it can (or does not
    exist yet): a symbolic link, another owner, writable by others, or, when private (the key and its folder),
    readable by others. Each sentence says how to fix it."""
    uid = os.geteuid() if uid is None else uid
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return []
    if stat.S_ISLNK(info.st_mode):
        return ["%s is a symbolic link: the CA must be where ipsec_pki_dir says, so that nobody can point it "
                "elsewhere. Give its real location (%s) instead" % (path, os.path.realpath(path))]
    wanted = stat.S_ISDIR if kind == "directory" else stat.S_ISREG
    if not wanted(info.st_mode):
        return ["%s is not a %s" % (path, "folder" if kind == "directory" else "regular file")]
    problem = _owner_problem(path, info, uid)
    if problem:
        return [problem]
    mode = stat.S_IMODE(info.st_mode)
    if private and mode & 0o077:
        fix = "chmod 700" if kind == "directory" else "chmod 600"
        exposed = ("Others could read the key: treat it as disclosed and roll the CA over as the role's README "
                   "describes. " if kind == "file" and mode & 0o044 else "")
        return ["%s has mode %04o: others can %s it. %s%s %s" % (
            path, mode, "read or write" if mode & 0o066 else "enter", exposed, fix, path)]
    if mode & 0o022:
        return ["%s has mode %04o: others can write it. chmod go-w %s, and check its content before trusting it"
                % (path, mode, path)]
    return []


@contextlib.contextmanager
def locked(directory, wait=LOCK_WAIT_SECONDS, create=True):
    """Hold the CA's lock (LOCK_NAME in directory) while the block runs; created 0600 when missing (with create
    False, a missing lock file means no lock: check mode writes nothing, not even the lock). Raises CaLockTimeout
    after `wait` seconds of another run holding it."""
    flags = os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
    try:
        fd = os.open(os.path.join(directory, LOCK_NAME), flags, 0o600)
    except FileNotFoundError:
        if create:
            raise
        yield
        return
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as error:
                if error.errno not in (errno.EACCES, errno.EAGAIN):
                    raise
                if time.monotonic() >= deadline:
                    raise CaLockTimeout("another run has held %s for %d seconds" % (
                        os.path.join(directory, LOCK_NAME), wait))
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


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
