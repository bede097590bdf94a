# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of every value the ipsec role writes into swanctl.conf, and the quoting it writes them with.

One controller-side pass (the ipsec_problems filter, run by the role's preflight and by check_inventory.yml) returns
every problem of every host with the variable's path, so that a bad value stops the run before any host, or the CA
on the controller, changes. The mesh builder (swanctl_mesh) calls the same identity and name checks again, and the
template writes every value through quote_value, which refuses what a swanctl.conf string cannot hold: a value that
slipped past a check still cannot add a line (such as ``mode = pass``) to a connection.
"""

from __future__ import annotations

import ipaddress
import os
import posixpath
import re
import stat

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import PATH_MAX, kind_of, masked
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.ca import ancestor_problems, entry_problems

# strongSwan time values: a number of seconds, or a number with s, m, h or d.
_DURATION = re.compile(r"(?P<number>[0-9]{1,9})(?P<unit>[smhd]?)")
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A label of a host name; underscores are allowed because inventory names (the default identity) often hold them.
_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?"
_HOSTNAME = re.compile(r"%s(?:\.%s)*" % (_LABEL, _LABEL))
_EMAIL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}@%s(?:\.%s)*" % (_LABEL, _LABEL))
# A distinguished name as strongSwan reads it: RDNs KEY=VALUE separated by commas (or slashes, OpenSSL style).
_DN_KEYS = ("C", "ST", "L", "O", "OU", "CN", "DC", "SN", "GN", "E", "emailAddress", "serialNumber", "UID", "title")
_DN_VALUE = r"[^\x00-\x1f\x7f\"\\,/=+<>#;]+"
_DN = re.compile(r"(?:%s)=%s(?:\s*[,/]\s*(?:%s)=%s)*" % ("|".join(_DN_KEYS), _DN_VALUE, "|".join(_DN_KEYS), _DN_VALUE))
_GROUP = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_INVENTORY_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_PROPOSAL = re.compile(r"[a-z0-9_]+(?:-[a-z0-9_]+)*")

# Algorithms (swanctl keywords) this collection allows: strongSwan accepts each, and none is broken or weak.
AEAD = frozenset(
    ["aes%dgcm16" % bits for bits in (128, 192, 256)] + ["aes%dgcm" % bits for bits in (128, 192, 256)]
    + ["aes%dccm16" % bits for bits in (128, 192, 256)] + ["chacha20poly1305"])
ENCRYPTION = frozenset(["aes128", "aes192", "aes256", "aes128ctr", "aes192ctr", "aes256ctr"])
INTEGRITY = frozenset(["sha256", "sha384", "sha512", "sha2_256", "sha2_384", "sha2_512"])
PRF = frozenset(["prfsha256", "prfsha384", "prfsha512"])
KEY_EXCHANGE = frozenset([
    "ecp256", "ecp384", "ecp521", "ecp256bp", "ecp384bp", "ecp512bp", "x25519", "curve25519", "x448", "curve448",
    "modp2048", "modp3072", "modp4096", "modp6144", "modp8192", "mlkem512", "mlkem768", "mlkem1024"])
ESP_ONLY = frozenset(["esn", "noesn"])
# Keywords strongSwan accepts that this collection refuses, and why (the message names the reason).
REFUSED = {
    "null": "no encryption",
    "des": "DES is broken",
    "3des": "3DES has a 64-bit block (Sweet32)",
    "cast128": "64-bit block cipher",
    "blowfish128": "64-bit block cipher",
    "blowfish192": "64-bit block cipher",
    "blowfish256": "64-bit block cipher",
    "md5": "MD5 is broken",
    "md5_128": "MD5 is broken",
    "prfmd5": "MD5 is broken",
    "sha1": "SHA-1 is deprecated for IPsec integrity here",
    "sha": "SHA-1 is deprecated for IPsec integrity here",
    "sha1_160": "SHA-1 is deprecated for IPsec integrity here",
    "prfsha1": "SHA-1 is deprecated for IPsec integrity here",
    "modp768": "a 768-bit group is broken",
    "modp1024": "a 1024-bit group is too weak (Logjam)",
    "modp1024s160": "a 1024-bit group is too weak",
    "modp1536": "a 1536-bit group is too weak",
    "modp2048s224": "a group with a small subgroup (RFC 8247 deprecates it)",
    "modp2048s256": "a group with a small subgroup (RFC 8247 deprecates it)",
    "ecp192": "a 192-bit curve is too weak",
    "ecp224": "a 224-bit curve is too weak",
    "ecp224bp": "a 224-bit curve is too weak",
    "aes128gcm8": "an 8-byte ICV is too short",
    "aes192gcm8": "an 8-byte ICV is too short",
    "aes256gcm8": "an 8-byte ICV is too short",
    "aes128gcm12": "this collection allows 16-byte ICVs only",
    "aes192gcm12": "this collection allows 16-byte ICVs only",
    "aes256gcm12": "this collection allows 16-byte ICVs only",
}
_KE_PREFIX = re.compile(r"ke[1-7]_(?P<name>.+)")

CHOICES = {
    "ipsec_mode": ("tunnel", "transport"),
    "ipsec_hw_offload": ("no", "yes", "auto"),
    "ipsec_revocation_policy": ("strict", "ifuri", "relaxed"),
    "ipsec_pq_kex": ("auto", "none", "mlkem512", "mlkem768", "mlkem1024"),
    "ipsec_pki_key_type": ("ECC", "RSA", "Ed25519"),
    "ipsec_pki_key_curve": ("secp256r1", "secp384r1", "secp521r1"),
    "ipsec_pki_digest": ("sha256", "sha384", "sha512"),
}
# Temporary folders: every local user may create entries there, systemd-tmpfiles empties them (10 and 30 days on
# Debian) and /dev/shm (often /tmp too) is a tmpfs lost at reboot. A CA there is lost or planted: never used.
TEMPORARY_ROOTS = ("/tmp", "/var/tmp", "/dev/shm")
# Folders that do not outlive an AWX job: its execution environment's home and scratch space.
EPHEMERAL_ROOTS = ("/runner", "/home/runner") + TEMPORARY_ROOTS[:2]


class InputError(ValueError):
    """A value cannot be written into swanctl.conf safely."""


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _text_problem(value):
    """Why a string cannot be written into swanctl.conf (None when it can)."""
    if not isinstance(value, str):
        return "must be a string, got %r" % (value,)
    if _CONTROL.search(value):
        return "holds a control character (newline, carriage return, tab...): %r" % (value,)
    if '"' in value or "\\" in value:
        return "holds a quote or a backslash: %r" % (value,)
    return None


def quote_value(value):
    """Return value as a double-quoted swanctl.conf string; refuse what such a string cannot hold.

    Numbers are written as they are. Every other value must be a string free of control characters, double quotes
    and backslashes: inside a quoted string, strongSwan's parser would read a newline as part of the value or end
    the string at a quote, and refusing is safer than relying on escape sequences across strongSwan versions.
    """
    if _is_int(value):
        return str(value)
    problem = _text_problem(value)
    if problem:
        raise InputError("value for swanctl.conf %s" % problem)
    return '"%s"' % value


def duration_seconds(value):
    """Seconds of a strongSwan time value (3600, '3600', '60m', '1h', '1d'); None when it is not one."""
    if _is_int(value):
        return value if value >= 0 else None
    if not isinstance(value, str):
        return None
    match = _DURATION.fullmatch(value)
    if not match:
        return None
    return int(match.group("number")) * _UNIT_SECONDS[match.group("unit")]


def identity_problem(value, allow_dn=False):
    """Why value is not an IKE identity this collection writes (None when it is).

    Accepted: an IP address, a host name (FQDN) or user@domain, and for gateways a distinguished name. Refused:
    wildcards (%any, *), type prefixes such as keyid: or fqdn: (a colon outside an IPv6 address), quotes,
    backslashes and control characters.
    """
    if not isinstance(value, str) or not value:
        return "must be a non-empty string, got %r" % (value,)
    problem = _text_problem(value)
    if problem:
        return problem
    if value.startswith("%") or "*" in value:
        return "%r is a wildcard: it would accept any peer" % value
    if value != value.strip():
        return "%r has leading or trailing spaces" % value
    try:
        ipaddress.ip_address(value)
        return None
    except ValueError:
        pass
    if len(value) <= 253 and (_HOSTNAME.fullmatch(value) or _EMAIL.fullmatch(value)):
        return None
    if allow_dn and len(value) <= 1024 and _DN.fullmatch(value):
        return None
    kinds = "an IP address, a host name, user@domain" + (" or a distinguished name (O=..., CN=...)" if allow_dn else "")
    return "%r is not %s" % (value, kinds)


def name_problem(value):
    """Why value cannot name a host or gateway in swanctl.conf (connection names, comments), None when it can."""
    if not isinstance(value, str) or not _INVENTORY_NAME.fullmatch(value):
        return "%r is not a name of letters, digits, '.', '_' and '-'" % (value,)
    return None


def _address_problem(value):
    try:
        ipaddress.ip_address(value if isinstance(value, str) else "")
        return None
    except ValueError:
        return "%r is not an IP address" % (value,)


def _network_problem(value):
    try:
        ipaddress.ip_network(value if isinstance(value, str) else "", strict=False)
        return None
    except ValueError:
        return "%r is not an IP address or CIDR network" % (value,)


def _token_kind(token):
    match = _KE_PREFIX.fullmatch(token)
    if match:
        return "ke" if match.group("name") in KEY_EXCHANGE else None
    for kind, names in (("aead", AEAD), ("encryption", ENCRYPTION), ("integrity", INTEGRITY), ("prf", PRF),
                        ("ke", KEY_EXCHANGE), ("esp_only", ESP_ONLY)):
        if token in names:
            return kind
    return None


def proposal_problems(proposal, path, esp):
    """Problems of one swanctl proposal (IKE when esp is False): every algorithm allowed, a complete suite."""
    if not isinstance(proposal, str) or not _PROPOSAL.fullmatch(proposal):
        return ["%s: %r is not a swanctl proposal (lower-case keywords joined by '-')" % (path, proposal)]
    problems = []
    kinds = {}
    for token in proposal.split("-"):
        base = _KE_PREFIX.fullmatch(token).group("name") if _KE_PREFIX.fullmatch(token) else token
        if base in REFUSED:
            problems.append("%s: %s is refused (%s)" % (path, token, REFUSED[base]))
            continue
        kind = _token_kind(token)
        if kind is None:
            problems.append("%s: %r is not an algorithm this collection allows (encryption %s; integrity %s; prf %s; "
                            "key exchange %s)" % (path, token, ", ".join(sorted(AEAD | ENCRYPTION)),
                                                  ", ".join(sorted(INTEGRITY)), ", ".join(sorted(PRF)),
                                                  ", ".join(sorted(KEY_EXCHANGE))))
            continue
        kinds.setdefault(kind, []).append(token)
    if problems:
        return problems
    where = "%s (%s)" % (path, proposal)
    if "aead" in kinds and "encryption" in kinds:
        problems.append("%s: mixes AEAD (%s) and classic ciphers (%s) in one proposal" % (
            where, ", ".join(kinds["aead"]), ", ".join(kinds["encryption"])))
    elif "aead" not in kinds and "encryption" not in kinds:
        problems.append("%s: names no encryption algorithm" % where)
    if "aead" in kinds and "integrity" in kinds:
        problems.append("%s: an AEAD cipher carries its own integrity; drop %s" % (where, ", ".join(kinds["integrity"])))
    if "encryption" in kinds and "integrity" not in kinds:
        problems.append("%s: a classic cipher needs an integrity algorithm (sha256, sha384, sha512)" % where)
    if esp:
        if "prf" in kinds:
            problems.append("%s: an ESP proposal takes no PRF (%s)" % (where, ", ".join(kinds["prf"])))
    else:
        if "esp_only" in kinds:
            problems.append("%s: %s belongs to ESP proposals only" % (where, ", ".join(kinds["esp_only"])))
        if "ke" not in kinds:
            problems.append("%s: an IKE proposal needs a key exchange (ecp384, x25519, ...)" % where)
        if "aead" in kinds and "prf" not in kinds:
            problems.append("%s: an AEAD IKE proposal needs a PRF (prfsha256, prfsha384, prfsha512)" % where)
    return problems


def _positive_int(settings, key, problems, path):
    value = settings.get(key)
    if not _is_int(value) or value < 1:
        problems.append("%s%s: must be a whole number of at least 1, got %r" % (path, key, value))
        return None
    return value


def _list_of(settings, key, problems, path):
    value = settings.get(key, [])
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append("%s%s: must be a list, got %r" % (path, key, value))
        return []
    return value


def _pki_problems(settings, path, awx_job):
    problems = []
    ca_days = _positive_int(settings, "ipsec_pki_ca_valid_days", problems, path)
    cert_days = _positive_int(settings, "ipsec_pki_cert_valid_days", problems, path)
    renew_days = _positive_int(settings, "ipsec_pki_renew_days", problems, path)
    crl_days = _positive_int(settings, "ipsec_crl_valid_days", problems, path)
    refresh_days = _positive_int(settings, "ipsec_crl_refresh_days", problems, path)
    if renew_days and cert_days and renew_days >= cert_days:
        problems.append("%sipsec_pki_renew_days: %d must be shorter than ipsec_pki_cert_valid_days (%d), or every run "
                        "renews every certificate" % (path, renew_days, cert_days))
    if cert_days and ca_days and cert_days >= ca_days:
        problems.append("%sipsec_pki_cert_valid_days: %d must be shorter than ipsec_pki_ca_valid_days (%d)" % (
            path, cert_days, ca_days))
    if refresh_days and crl_days and refresh_days >= crl_days:
        problems.append("%sipsec_crl_refresh_days: %d must be shorter than ipsec_crl_valid_days (%d)" % (
            path, refresh_days, crl_days))
    common_name = settings.get("ipsec_pki_ca_common_name")
    if not isinstance(common_name, str) or not common_name.strip():
        problems.append("%sipsec_pki_ca_common_name: the CA subject must not be empty, got %r" % (path, common_name))
    elif _CONTROL.search(common_name) or len(common_name) > 64:
        problems.append("%sipsec_pki_ca_common_name: must be at most 64 characters without control characters, "
                        "got %r" % (path, common_name))
    if settings.get("ipsec_pki_key_type") == "RSA":
        size = settings.get("ipsec_pki_key_size")
        if not _is_int(size) or size < 2048:
            problems.append("%sipsec_pki_key_size: RSA keys need at least 2048 bits, got %r" % (path, size))
    for index, name in enumerate(_list_of(settings, "ipsec_pki_cert_names", problems, path)):
        if not isinstance(name, str) or not _HOSTNAME.fullmatch(name) or len(name) > 253:
            problems.append("%sipsec_pki_cert_names[%d]: %r is not a DNS name" % (path, index, name))
    for index, address in enumerate(_list_of(settings, "ipsec_pki_cert_addresses", problems, path)):
        problem = _address_problem(address)
        if problem:
            problems.append("%sipsec_pki_cert_addresses[%d]: %s" % (path, index, problem))
    passphrase = settings.get("ipsec_pki_ca_passphrase", "")
    # The value is never repeated in a message: it is a secret.
    if passphrase and (not isinstance(passphrase, str) or len(passphrase) < 16 or _CONTROL.search(passphrase)):
        problems.append("%sipsec_pki_ca_passphrase: must be a string of at least 16 characters without control "
                        "characters (or empty for an unencrypted CA key)" % path)
    problems.extend(pki_dir_problems(settings.get("ipsec_pki_dir", ""), path, awx_job))
    return problems


def pki_dir_problems(pki_dir, path="", awx_job=""):
    """ipsec_pki_dir: a normalised absolute path, persistent when running from AWX, and, as far as it exists on the
    controller (where this runs and where the CA lives), trusted as the ipsec_ca module trusts it: no folder above
    writable by another user, no symbolic link, the right owner and mode. check_inventory.yml thus refuses a CA that
    another local user could plant, before the module would."""
    if not isinstance(pki_dir, str) or _CONTROL.search(pki_dir) or len(pki_dir) > PATH_MAX:
        return ["%sipsec_pki_dir: must be a path of at most %d characters without control characters, got %r"
                % (path, PATH_MAX, pki_dir[:80] if isinstance(pki_dir, str) else pki_dir)]
    if pki_dir and (not pki_dir.startswith("/") or posixpath.normpath(pki_dir) != pki_dir.rstrip("/")
                    or ".." in pki_dir.split("/")):
        return ["%sipsec_pki_dir: must be an absolute, normalised path on the controller (no '..'), got %r" % (
            path, pki_dir)]
    if awx_job and not pki_dir:
        return ["%sipsec_pki_dir: running from AWX (job %s), the default (~/.gpufabric/pki/ipsec) lies inside the "
                "job's short-lived execution environment, so each job would create its own CA and split the mesh. "
                "Set ipsec_pki_dir to a persistent folder mounted into the execution environment (AWX settings, "
                "paths to expose to isolated jobs)" % (path, awx_job)]
    if awx_job and any(pki_dir == root or pki_dir.startswith(root + "/") for root in EPHEMERAL_ROOTS):
        return ["%sipsec_pki_dir: %s is inside the AWX execution environment (%s), which is removed after job %s; "
                "use a persistent folder mounted into it" % (path, pki_dir, ", ".join(EPHEMERAL_ROOTS), awx_job)]
    if not pki_dir:
        return []
    found = (_temporary_dir_problems(pki_dir) + ancestor_problems(pki_dir)
             + entry_problems(pki_dir.rstrip("/") or "/", "directory", private=True))
    return ["%sipsec_pki_dir: %s" % (path, problem) for problem in found]


def _under(path, roots):
    return next((root for root in roots if path == root or path.startswith(root + "/")), None)


def _temporary_dir_problems(pki_dir):
    """Why pki_dir lies in a temporary or shared folder ([] when not): by its name, by where its existing part really
    is (a symbolic link into /tmp), or below a sticky folder every user can write (a 1777 scratch folder), which
    ancestor_problems accepts for its other callers."""
    real = os.path.realpath(pki_dir)
    root = _under(pki_dir, TEMPORARY_ROOTS) or _under(real, TEMPORARY_ROOTS)
    if root:
        return ["%s is under %s, a temporary folder: it is emptied by systemd-tmpfiles or at reboot (the mesh would "
                "get a new CA) and any local user can create the path first. Keep the CA on persistent storage "
                "that only the controller's user can write (/var/lib/gpufabric/pki/ipsec, or the default "
                "~/.gpufabric/pki/ipsec)" % (pki_dir, root)]
    folder = real
    while folder != "/":
        folder = os.path.dirname(folder)
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            continue
        if mode & stat.S_IWOTH and mode & stat.S_ISVTX:
            return ["%s (above %s) is a shared folder every user can write (mode %04o, like /tmp): any local user "
                    "can create the CA's path there first. Keep the CA on persistent storage that only the "
                    "controller's user can write" % (folder, pki_dir, stat.S_IMODE(mode))]
    return []


def _crypto_problems(settings, path):
    problems = []
    for key, esp in (("ipsec_ike_proposals", False), ("ipsec_esp_proposals", True)):
        proposals = _list_of(settings, key, problems, path)
        if not proposals and isinstance(settings.get(key, []), list):
            problems.append("%s%s: list at least one proposal" % (path, key))
        for index, proposal in enumerate(proposals):
            problems.extend(proposal_problems(proposal, "%s%s[%d]" % (path, key, index), esp))
            if (not esp and settings.get("ipsec_pq_kex", "none") != "none" and isinstance(proposal, str)
                    and any(_KE_PREFIX.fullmatch(token) for token in proposal.split("-"))):
                problems.append("%s%s[%d]: already holds an additional key exchange (ke1_...): set ipsec_pq_kex to "
                                "none, the role appends ke1_ML-KEM itself otherwise" % (path, key, index))
    for key, minimum in (("ipsec_ike_rekey_time", 1), ("ipsec_child_rekey_time", 1), ("ipsec_dpd_delay", 0)):
        seconds = duration_seconds(settings.get(key))
        if seconds is None or seconds < minimum:
            problems.append("%s%s: must be a strongSwan time, a number with an optional unit s, m, h or d (such as "
                            "30s, 1h)%s, got %r" % (path, key, "" if minimum == 0 else " greater than 0",
                                                    settings.get(key)))
    ike = duration_seconds(settings.get("ipsec_ike_rekey_time")) or 0
    child = duration_seconds(settings.get("ipsec_child_rekey_time")) or 0
    dpd = duration_seconds(settings.get("ipsec_dpd_delay")) or 0
    if ike and child and dpd and dpd >= min(ike, child):
        problems.append("%sipsec_dpd_delay: %r must be shorter than the rekey times (%r, %r)" % (
            path, settings.get("ipsec_dpd_delay"), settings.get("ipsec_ike_rekey_time"),
            settings.get("ipsec_child_rekey_time")))
    return problems


def _network_list_problems(settings, key, problems, path, check):
    for index, value in enumerate(_list_of(settings, key, problems, path)):
        problem = check(value)
        if problem:
            problems.append("%s%s[%d]: %s" % (path, key, index, problem))


def _gateway_problems(settings, path):
    problems = []
    for index, gateway in enumerate(_list_of(settings, "ipsec_gateways", problems, path)):
        where = "%sipsec_gateways[%d]" % (path, index)
        if not isinstance(gateway, dict):
            problems.append("%s: must be a mapping {name, address, id, networks}, got %r" % (where, gateway))
            continue
        problem = name_problem(gateway.get("name"))
        if problem:
            problems.append("%s.name: %s" % (where, problem))
        problem = _address_problem(gateway.get("address"))
        if problem:
            problems.append("%s.address: %s" % (where, problem))
        problem = identity_problem(gateway.get("id"), allow_dn=True)
        if problem:
            problems.append("%s.id: %s" % (where, problem))
        networks = gateway.get("networks")
        if not isinstance(networks, list) or not networks:
            problems.append("%s.networks: list the networks (CIDR) behind the gateway, got %r" % (where, networks))
            continue
        for position, network in enumerate(networks):
            problem = _network_problem(network)
            if problem:
                problems.append("%s.networks[%d]: %s" % (where, position, problem))
    return problems


def host_problems(settings, host, mesh_hosts=None, awx_job="", path=None):
    """Every problem of one host's ipsec_* settings, each prefixed with the variable's path.

    settings: the role's variables for that host (defaults overlaid with the inventory). mesh_hosts: the members of
    ipsec_mesh_group (for ipsec_revoked_hosts). awx_job: the AWX or Tower job id when running from one.
    """
    path = "%s: " % host if path is None else path
    problems = []
    group = settings.get("ipsec_mesh_group")
    if not isinstance(group, str) or not _GROUP.fullmatch(group):
        problems.append("%sipsec_mesh_group: %r is not an inventory group name" % (path, group))
    problem = name_problem(host)
    if problem:
        problems.append("%sinventory name: %s (it names connections in swanctl.conf)" % (path, problem))
    identity = settings.get("ipsec_identity") or host
    problem = identity_problem(identity)
    if problem:
        source = "ipsec_identity" if settings.get("ipsec_identity") else "ipsec_identity (empty: the inventory name)"
        problems.append("%s%s: %s" % (path, source, problem))
    address = settings.get("ipsec_address")
    if address:
        problem = _address_problem(address)
        if problem:
            problems.append("%sipsec_address: %s" % (path, problem))
    for key, value in CHOICES.items():
        if key in settings and settings[key] not in value:
            problems.append("%s%s: must be one of %s, got %r" % (path, key, ", ".join(value), settings[key]))
    for key in ("ipsec_traffic_selectors", "ipsec_vlan_subnets", "ipsec_bypass_networks"):
        _network_list_problems(settings, key, problems, path, _network_problem)
    _network_list_problems(settings, "ipsec_controller_addresses", problems, path, _address_problem)
    for index, network in enumerate(_list_of(settings, "ipsec_bypass_networks", [], path)):
        if _network_problem(network) is None and ipaddress.ip_network(network, strict=False).prefixlen == 0:
            problems.append("%sipsec_bypass_networks[%d]: %s would send every packet around every tunnel, so the "
                            "mesh would protect nothing; list the monitoring or management networks only"
                            % (path, index, network))
    problems.extend(_gateway_problems(settings, path))
    problems.extend(_crypto_problems(settings, path))
    problems.extend(_pki_problems(settings, path, awx_job))
    timeout = settings.get("ipsec_verify_timeout", 1)
    if not _is_int(timeout) or timeout < 1:
        problems.append("%sipsec_verify_timeout: must be a whole number of seconds of at least 1, got %r" % (path, timeout))
    revoked = _list_of(settings, "ipsec_revoked_hosts", problems, path)
    if mesh_hosts is not None:
        outside = [h for h in revoked if h not in mesh_hosts]
        if outside:
            names = ", ".join(map(str, outside))
            problems.append("%sipsec_revoked_hosts: %s not in the mesh group %s" % (path, names, group))
    mode = settings.get("ipsec_mode", "tunnel")
    if mode == "transport":
        if settings.get("ipsec_kernel_libipsec"):
            problems.append("%sipsec_mode: transport mode is not supported with ipsec_kernel_libipsec" % path)
        if not settings.get("ipsec_protect_address", True):
            problems.append("%sipsec_mode: transport mode protects the IKE addresses; ipsec_protect_address must be "
                            "true" % path)
        for key in ("ipsec_traffic_selectors", "ipsec_vlan_subnets", "ipsec_gateways"):
            if settings.get(key):
                problems.append("%s%s: transport mode protects only the hosts' IKE addresses; leave it empty" % (
                    path, key))
    return problems


def _claim_key(value):
    """The form a name, identity or address is compared in: strongSwan compares host names, user@domain and
    distinguished names without regard to case (and a trailing dot changes nothing), addresses by value."""
    text = str(value).strip()
    try:
        return "address %s" % ipaddress.ip_address(text)
    except ValueError:
        return re.sub(r"\s*([,/=])\s*", r"\1", text.lower().rstrip("."))


def member_claims(member, gateway=False):
    """What a mesh member (or a gateway) is known as, (value, variable) pairs: its inventory name, its IKE identity,
    the names and addresses its certificate carries and its IKE address. No two members may share one: a peer
    accepts whoever proves one of them as that member (strongSwan matches remote_id against the certificate's
    names), so a shared one lets one host authenticate as the other."""
    if not isinstance(member, dict) or not member.get("name"):
        return []
    name = member["name"]
    claims = [(name, "gateway name" if gateway else "inventory name"),
              (member.get("id") or name, "id" if gateway else "ipsec_identity")]
    for key in ("cert_names", "cert_addresses"):
        values = member.get(key)
        for index, value in enumerate(values if isinstance(values, list) else []):
            claims.append((value, "ipsec_pki_%s[%d]" % (key, index)))
    if member.get("address"):
        claims.append((member["address"], "address" if gateway else "ipsec_address"))
    return [(value, what) for value, what in claims if isinstance(value, str) and value]


def claim_conflicts(members, gateways=()):
    """Every pair of members (and gateways) that claim one name, identity or address, as (first, second, sentence,
    with_gateway): first and second are the members' names ("gateway <name>" for a gateway), the sentence names both
    and both variables, with_gateway says whether one of them is a gateway."""
    owners = {}
    conflicts = []
    for entry, gateway in [(m, False) for m in members] + [(g, True) for g in gateways]:
        claims = member_claims(entry, gateway)
        label = ("gateway %s" if gateway else "%s") % entry["name"] if claims else None
        for value, what in claims:
            owner = owners.setdefault(_claim_key(value), (label, what, gateway))
            if owner[0] != label:
                conflicts.append((owner[0], label, (
                    "%s's %s %r is also %s's %s: a certificate or identity naming it would let one of them "
                    "authenticate as the other in the mesh; give each host names and addresses of its own "
                    "(hosts %s and %s)" % (label, what, value, owner[0], owner[1], owner[0], label)),
                    gateway or owner[2]))
    return conflicts


def _gateway_conflict_problems(settings, members, path):
    """The host's gateways against each other and against the mesh members (names, identities, addresses)."""
    gateways = settings.get("ipsec_gateways")
    if not isinstance(gateways, list):
        return []
    gateways = [g for g in gateways if isinstance(g, dict)]
    problems = []
    names = {}
    for index, gateway in enumerate(gateways):
        name = gateway.get("name")
        if isinstance(name, str) and name in names:
            problems.append("%sipsec_gateways[%d].name: %r is also the name of ipsec_gateways[%d]; each gateway needs "
                            "a name of its own (it names the connection in swanctl.conf)" % (
                                path, index, name, names[name]))
        names.setdefault(name, index)
    problems.extend("%s%s" % (path, sentence)
                    for unused_first, unused_second, sentence, with_gateway in claim_conflicts(members, gateways)
                    if with_gateway)
    return problems


def member_problems(member):
    """Problems of a mesh member as its peers see it (name, identity, address, selectors), with the variable path.

    These values reach every other host's swanctl.conf, so they are checked for every member, in the play or not.
    """
    name = member.get("name") if isinstance(member, dict) else member
    path = "%s: " % (name,)
    if not isinstance(member, dict):
        return ["%smesh member must be a mapping, got %r" % (path, member)]
    problems = []
    problem = name_problem(name)
    if problem:
        problems.append("%sinventory name: %s (it names connections in swanctl.conf)" % (path, problem))
    identity = member.get("id") or name
    problem = identity_problem(identity)
    if problem:
        source = "ipsec_identity" if member.get("id") else "ipsec_identity (empty: the inventory name)"
        problems.append("%s%s: %s" % (path, source, problem))
    if member.get("address"):
        problem = _address_problem(member.get("address"))
        if problem:
            problems.append("%sipsec_address: %s" % (path, problem))
    selectors = member.get("selectors") or []
    if not isinstance(selectors, list):
        problems.append("%sipsec_traffic_selectors: must be a list, got %r" % (path, selectors))
    else:
        for index, selector in enumerate(selectors):
            problem = _network_problem(selector)
            if problem:
                problems.append("%sipsec_traffic_selectors[%d]: %s" % (path, index, problem))
    return problems


def ipsec_problems(hosts, members=None, awx_job="", mesh_hosts=None):
    """Every problem of every host's settings and of every mesh member, in one list (empty when all is usable).

    hosts: {inventory name: settings} of the hosts the role is about to configure. members: the mesh members as
    their peers see them ({name, id, address, selectors}), including hosts outside the play. The problems of all
    hosts come together so that one run fails naming all of them, before any host is changed.
    """
    if not isinstance(hosts, dict):
        raise InputError("the hosts to check must be a mapping of inventory name to settings, got %r" % (hosts,))
    member_list = list(members or [])
    if mesh_hosts is None and members is not None:
        mesh_hosts = [m.get("name") for m in member_list if isinstance(m, dict)]
    problems = []
    mesh_members = [m for m in member_list if isinstance(m, dict)]
    for host in sorted(hosts, key=str):
        settings = hosts[host]
        if not isinstance(settings, dict):
            problems.append("%s: settings must be a mapping, got a %s" % (host, kind_of(settings)))
            continue
        problems.extend(host_problems(settings, host, mesh_hosts=mesh_hosts, awx_job=awx_job))
        problems.extend(_gateway_conflict_problems(settings, mesh_members, "%s: " % host))
    for member in member_list:
        problems.extend(member_problems(member))
    # Two members claiming one name, identity or address, named on the hosts checked here: check_inventory.yml asks
    # for one host at a time and fails both members of the pair; the role's preflight asks for its whole batch.
    for first, second, sentence, unused_with_gateway in claim_conflicts(mesh_members):
        for host in (first, second):
            if host in hosts:
                problems.append("%s: %s" % (host, sentence))
    unique = []
    for problem in problems:
        if problem not in unique:
            unique.append(problem)
    return masked(unique, hosts)


# The first strongSwan whose Debian packages list ML-KEM (6.1.0 in Debian testing, through its openssl plugin;
# Debian 13's 6.0.1 lists none). Only the estimate for a host whose charon cannot be asked yet (not installed).
PQ_MIN_VERSION = "6.1"


def required_kem(pq_kex):
    """The ML-KEM a required ipsec_pq_kex names, as swanctl --list-algs calls it (mlkem768: ML_KEM_768), else ''."""
    match = re.fullmatch(r"mlkem([0-9]+)", str(pq_kex or ""))
    return "ML_KEM_%s" % match.group(1) if match else ""


def _version_tuple(version):
    return tuple(int(part) for part in re.findall(r"[0-9]+", str(version)))


def pq_kex_problem(pq_kex, host, version, listed_kems=None):
    """Why this host cannot do the ML-KEM that ipsec_pq_kex requires, naming the variable; '' when it can.

    A running charon is judged by what its own swanctl --list-algs lists (listed_kems, the ML_KEM_* names; None when
    charon could not be asked), whatever its version: Debian 13's 6.0.1 parses ke1_mlkem768 but lists no ML-KEM.
    Only where charon cannot be asked yet is the version (installed, or the one apt would install) compared with
    PQ_MIN_VERSION. Nothing is refused when nothing is required or no version is known (apt knew no strongSwan: the
    role refuses that host for it elsewhere).
    """
    kem = required_kem(pq_kex)
    if not kem or not version:
        return ""
    if listed_kems is not None:
        if kem in listed_kems:
            return ""
        return ("ipsec_pq_kex is %s (ML-KEM post-quantum key exchange, required) but the strongSwan %s running on %s"
                " lists no %s in swanctl --list-algs (it lists %s; Debian 12's 5.9 and Debian 13's 6.0.1 packages"
                " offer none, Debian testing's 6.1 does in its openssl plugin). Set ipsec_pq_kex to auto (ML-KEM"
                " where both peers offer it) or none, or upgrade strongSwan."
                % (pq_kex, version, host, kem, ", ".join(listed_kems) or "no ML-KEM"))
    if _version_tuple(version) >= _version_tuple(PQ_MIN_VERSION):
        return ""
    return ("ipsec_pq_kex is %s (ML-KEM post-quantum key exchange, required), which needs strongSwan %s or later as"
            " Debian packages it; %s has (or would install) %s and no running charon to ask. Set ipsec_pq_kex to"
            " auto (ML-KEM where both peers offer it) or none, or upgrade strongSwan (Debian testing, forky)."
            % (pq_kex, PQ_MIN_VERSION, host, version))
