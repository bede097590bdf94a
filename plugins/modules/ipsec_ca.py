#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ipsec_ca
short_description: Keep the ipsec role's CA on the controller - its key, its certificate and its CRL - in one step
version_added: 0.1.0
description:
  - Creates the CA's folders (mode 0700), the CA private key (ECDSA P-384, mode 0600, PKCS#8 encrypted with scrypt
    and AES-256 when O(passphrase) is set) and its self-signed certificate when they do not exist, checks that the CA
    can sign the role's host certificates, and keeps the CRL current as M(gpufabric.core.swanctl_crl) does.
  - An existing CA key is never replaced, even when it cannot be read, because a new CA key would invalidate every
    certificate of the mesh. The key is read on every run, so a wrong O(passphrase) stops the run at once. A key in
    the traditional PEM encryption of earlier releases (one MD5 round) is still read, with a warning saying how to
    re-encrypt it.
  - "Safe under concurrency: every run holds a lock (C(.ipsec_ca.lock), a POSIX record lock, in the key's folder)
    while it reads and writes the CA, so two runs at once (two AWX jobs, two operators) leave one CA whose key and
    certificate belong together. Files are written 0600 beside their target and renamed into place; a temporary file
    left by a run killed before its rename is removed by the next run, under the lock."
  - "Nothing is adopted blindly: the run stops, saying how to fix it, when a CA folder or file is a symbolic link, is
    owned by a user other than root or the one running Ansible, or can be written by others; when the key or its
    folder can be read by others; or when a folder above them can be written by another user (a sticky folder such as
    /tmp is accepted only where the next folder down belongs to root or that user)."
  - Messages name the ipsec role's variables, whose values the options take (O(passphrase) is
    C(ipsec_pki_ca_passphrase), O(must_outlive_days) is C(ipsec_pki_cert_valid_days), and so on).
  - "Runs where the CA lives, the controller (C(delegate_to: localhost), C(run_once))."
author:
  - gpufabric.core maintainers (@gpufabric)
requirements:
  - cryptography >= 3.1 (Python library) where the module runs.
  - A POSIX file system with record locks (a local file system, or NFS with its lock manager) for the CA's folder.
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    details: Reports what would be created or rewritten, without writing. Before the CA exists, no CRL is planned.
    support: full
  diff_mode:
    details: Names the files that would be created; for the CRL, the revoked serial numbers before and after.
    support: full
options:
  key_path:
    description: The CA private key (PEM). Its folder is created (0700) when missing.
    type: path
    required: true
  passphrase:
    description: Passphrase the CA key is (or is to be) encrypted with; empty for a key without one.
    type: str
    default: ""
  certificate_path:
    description: The CA certificate (PEM, mode 0644).
    type: path
    required: true
  common_name:
    description: Common name of a CA certificate created by this module.
    type: str
    default: gpufabric IPsec CA
  valid_days:
    description: Validity of a CA certificate created by this module, in days.
    type: int
    default: 3650
  must_outlive_days:
    description: The CA must stay valid this many more days (the validity of the host certificates it signs).
    type: int
    default: 365
  digest:
    description: Signature digest of the CA certificate and the CRL.
    type: str
    choices: [sha256, sha384, sha512]
    default: sha384
  crl_path:
    description: The CRL (PEM, mode 0644).
    type: path
    required: true
  issued_dir:
    description: >-
      Folder of the certificates the CA issued, one sub-folder per host (created, 0700); the CRL is built from it.
    type: path
    required: true
  revoked_hosts:
    description: Hosts all of whose certificates are revoked.
    type: list
    elements: str
    default: []
  revoke_superseded:
    description: Also revoke every certificate of a host that a newer one replaced (reason superseded).
    type: bool
    default: true
  crl_valid_days:
    description: Days until the CRL's nextUpdate.
    type: int
    default: 30
  crl_refresh_days:
    description: Rewrite the CRL when it expires within this many days. Must be less than O(crl_valid_days).
    type: int
    default: 10
seealso:
  - module: gpufabric.core.swanctl_crl
  - module: gpufabric.core.ipsec_host_pki
"""

EXAMPLES = r"""
- name: Keep the CA, its certificate and its CRL on the controller
  gpufabric.core.ipsec_ca:
    key_path: /srv/pki/ipsec/ca.key
    passphrase: "{{ ipsec_pki_ca_passphrase }}"
    certificate_path: /srv/pki/ipsec/ca.crt
    crl_path: /srv/pki/ipsec/crl.pem
    issued_dir: /srv/pki/ipsec/issued
    revoked_hosts: [gpu-node-17]
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
ca_certificate:
  description: The CA certificate (PEM); empty in check mode before the CA exists.
  returned: success
  type: str
created:
  description: The files created (in check mode, that would be).
  returned: success
  type: list
  elements: str
  sample: [/srv/pki/ipsec/ca.key, /srv/pki/ipsec/ca.crt]
removed:
  description: Temporary files an interrupted run left in the CA's folders, removed (in check mode, that would be).
  returned: success
  type: list
  elements: str
  sample: [/srv/pki/ipsec/.gpufabric-k2j3x9]
crl_number:
  description: CRL number of the CRL now in O(crl_path) (in check mode, of the one that would be written).
  returned: when the CA exists
  type: int
  sample: 3
next_update:
  description: nextUpdate of the CRL, ISO 8601 UTC.
  returned: when the CA exists
  type: str
revoked:
  description: The certificates the CRL revokes (host, serial, reason, not_after, path).
  returned: when the CA exists
  type: list
  elements: dict
update_reason:
  description: Why the CRL was (or would be) rewritten; null when it was current.
  returned: when the CA exists
  type: str
msg:
  description: One line on the CRL, for the log.
  returned: success
  type: str
  sample: CRL 3 revokes 1 certificate(s) (gpu-node-17 unspecified); next update 2027-01-02T10:00:00+00:00
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec import ca as ipsec_ca, crl as swanctl_crl

_PRIVATE_DIR_MODE = 0o700
_KEY_MODE = 0o600
_PUBLIC_MODE = 0o644


def _folders(params):
    """The CA's folders, the key's first (it holds the lock)."""
    folders = []
    for folder in (os.path.dirname(params["key_path"]), params["issued_dir"], os.path.dirname(params["certificate_path"]),
                   os.path.dirname(params["crl_path"])):
        if folder not in folders:
            folders.append(folder)
    return folders


def _make_folder(folder):
    """Create folder (0700) and its missing parents; another run creating one of them at the same moment is no
    error (the checks under the lock then judge what it made)."""
    for unused_attempt in range(3):
        try:
            file_transaction.make_directory(folder, _PRIVATE_DIR_MODE)
            return
        except FileExistsError:
            if os.path.isdir(folder):
                return
    file_transaction.make_directory(folder, _PRIVATE_DIR_MODE)


def _trust_problems(params, folders):
    """Why the CA's folders and files cannot be trusted (see ipsec_ca.entry_problems), [] when they can."""
    problems = []
    for folder in folders:
        problems.extend(problem for problem in ipsec_ca.ancestor_problems(folder) if problem not in problems)
        problems.extend(ipsec_ca.entry_problems(folder, "directory", private=folder == folders[0]))
    for path in (params["key_path"], params["certificate_path"], params["crl_path"]):
        problems.extend(ipsec_ca.entry_problems(path, "file", private=path == params["key_path"]))
    return problems


def _crl_summary(plan):
    revoked = plan["revoked"]
    listed = ", ".join("%s %s" % (entry["host"], entry["reason"]) for entry in revoked)
    return "CRL %s revokes %d certificate(s)%s; next update %s" % (
        plan.get("crl_number"), len(revoked), " (%s)" % listed if listed else "", plan.get("next_update"))


def _keep_ca(module, params, folders, check, now):
    """Everything the module does once it holds the lock (or, in check mode, reads without one)."""
    key_path, cert_path = params["key_path"], params["certificate_path"]
    problems = _trust_problems(params, folders)
    if problems:
        module.fail_json(msg="The CA on the controller cannot be trusted, nothing was changed: %s" % "; ".join(problems))
    removed = []
    for folder in folders:
        removed.extend(file_transaction.remove_stale_temporaries(folder, check_mode=check))
    created = []
    if os.path.exists(key_path):
        try:
            key = swanctl_crl.load_private_key(key_path, params["passphrase"])
        except swanctl_crl.CrlError as error:
            module.fail_json(msg="Creating or reading the CA key %s on the controller failed: %s. If the key exists, "
                                 "ipsec_pki_ca_passphrase must be the passphrase it is encrypted with (empty for a "
                                 "key without one); the role never replaces an existing CA key." % (key_path, error))
        with open(key_path, "rb") as handle:
            if ipsec_ca.LEGACY_ENCRYPTION in handle.read():
                module.warn("The CA key %s uses the traditional PEM encryption (its key is derived with one MD5 "
                            "round). Re-encrypt it as PKCS#8 with scrypt, with the same passphrase: (umask 077; "
                            "openssl pkcs8 -topk8 -scrypt -in %s -out %s.new) && mv %s.new %s" % ((key_path,) * 5))
    else:
        key = ipsec_ca.new_key()
        created.append(key_path)
        if not check:
            file_transaction.write_atomically(key_path, ipsec_ca.key_pem(key, params["passphrase"]), _KEY_MODE)

    if os.path.exists(cert_path):
        try:
            certificate = swanctl_crl.load_certificate(cert_path)
        except swanctl_crl.CrlError as error:
            module.fail_json(msg=str(error))
    else:
        certificate = ipsec_ca.self_signed(key, params["common_name"], params["valid_days"], params["digest"], now)
        created.append(cert_path)
        if not check:
            file_transaction.write_atomically(cert_path, ipsec_ca.certificate_pem(certificate), _PUBLIC_MODE)

    problems = ipsec_ca.usability_problems(certificate, key, params["must_outlive_days"], now)
    if problems:
        module.fail_json(msg="%s on the controller is not a usable CA: %s. Roll the CA over as README.md describes "
                             "(new ipsec_pki_dir, both CAs trusted during the change)."
                             % (cert_path, "; ".join(problems)))
    diff = [dict(before="", after="created\n", before_header=path, after_header=path) for path in created]
    result = dict(created=created, removed=removed)
    changed = bool(created or removed)
    if created and check:
        # Nothing exists to sign a CRL with yet: the real run creates the CA and the CRL together.
        result.update(changed=True, ca_certificate="", msg="the CA would be created")
    else:
        try:
            plan, pem = swanctl_crl.plan_crl(
                params["crl_path"], certificate, lambda: key, params["issued_dir"], params["revoked_hosts"],
                params["revoke_superseded"], params["crl_valid_days"], params["crl_refresh_days"], params["digest"],
                now)
        except swanctl_crl.CrlError as error:
            module.fail_json(msg="Updating the CRL %s failed: %s" % (params["crl_path"], error))
        if pem is not None:
            diff.append(plan.pop("diff"))
            changed = True
            if not check:
                file_transaction.write_atomically(params["crl_path"], pem, _PUBLIC_MODE)
        elif os.path.exists(params["crl_path"]) and os.stat(params["crl_path"]).st_mode & 0o7777 != _PUBLIC_MODE:
            changed = True
            if not check:
                file_transaction.set_attributes(params["crl_path"], _PUBLIC_MODE)
        result.update(plan, changed=changed, msg=_crl_summary(plan),
                      ca_certificate=ipsec_ca.certificate_pem(certificate).decode("ascii"))
    if module._diff and diff:
        result["diff"] = diff
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            key_path=dict(type="path", required=True),
            passphrase=dict(type="str", default="", no_log=True),
            certificate_path=dict(type="path", required=True),
            common_name=dict(type="str", default="gpufabric IPsec CA"),
            valid_days=dict(type="int", default=3650),
            must_outlive_days=dict(type="int", default=365),
            digest=dict(type="str", choices=list(ipsec_ca.DIGESTS), default="sha384"),
            crl_path=dict(type="path", required=True),
            issued_dir=dict(type="path", required=True),
            revoked_hosts=dict(type="list", elements="str", default=[]),
            revoke_superseded=dict(type="bool", default=True),
            crl_valid_days=dict(type="int", default=30),
            crl_refresh_days=dict(type="int", default=10),
        ),
        supports_check_mode=True,
    )
    if not swanctl_crl.HAS_CRYPTOGRAPHY:
        module.fail_json(msg=missing_required_lib("cryptography"), exception=str(swanctl_crl.CRYPTOGRAPHY_IMPORT_ERROR))
    params = module.params
    check = module.check_mode
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    folders = _folders(params)
    # The folders above first, before anything is created below them; then the folders themselves, created 0700.
    problems = _trust_problems(params, folders)
    if problems:
        module.fail_json(msg="The CA on the controller cannot be trusted, nothing was changed: %s" % "; ".join(problems))
    created_folders = []
    try:
        for folder in folders:
            if not os.path.isdir(folder):
                created_folders.append(folder)
                if not check:
                    _make_folder(folder)
    except OSError as error:
        module.fail_json(msg="creating the CA folders on the controller failed: %s" % error)
    try:
        # In check mode the lock is taken when it exists, and nothing is created (not even the lock file).
        with ipsec_ca.locked(folders[0], create=not check):
            result = _keep_ca(module, params, folders, check, now)
    except ipsec_ca.CaLockTimeout as error:
        module.fail_json(msg="The CA on the controller is busy: %s. Another ansible-playbook run or AWX job is "
                             "keeping it; let it finish, or stop a run that hangs." % error)
    result["changed"] = bool(result["changed"] or created_folders)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
