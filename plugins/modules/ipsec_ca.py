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
  - Creates the CA's folders (mode 0700), the CA private key (ECDSA P-384, mode 0600, encrypted when
    O(passphrase) is set) and its self-signed certificate when they do not exist, checks that the CA can sign the
    role's host certificates, and keeps the CRL current as M(gpufabric.core.swanctl_crl) does.
  - An existing CA key is never replaced, even when it cannot be read, because a new CA key would invalidate every
    certificate of the mesh. The key is read on every run, so a wrong O(passphrase) stops the run at once.
  - Messages name the ipsec role's variables, whose values the options take (O(passphrase) is
    C(ipsec_pki_ca_passphrase), O(must_outlive_days) is C(ipsec_pki_cert_valid_days), and so on).
  - "Runs where the CA lives, the controller (C(delegate_to: localhost), C(run_once))."
author:
  - gpufabric.core maintainers (@gpufabric)
requirements:
  - cryptography >= 3.1 (Python library) where the module runs.
attributes:
  check_mode:
    description: Reports what would be created or rewritten, without writing. Before the CA exists, no CRL is planned.
    support: full
  diff_mode:
    description: Names the files that would be created; for the CRL, the revoked serial numbers before and after.
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

from ansible_collections.gpufabric.core.plugins.module_utils import file_transaction, ipsec_ca, swanctl_crl

_PRIVATE_DIR_MODE = 0o700
_KEY_MODE = 0o600
_PUBLIC_MODE = 0o644


def _ensure_private_directory(path, check_mode):
    """Create path (0700) or tighten its mode; returns whether it changed."""
    if not os.path.isdir(path):
        if not check_mode:
            os.makedirs(path, mode=_PRIVATE_DIR_MODE)
            os.chmod(path, _PRIVATE_DIR_MODE)
        return True
    if os.stat(path).st_mode & 0o7777 != _PRIVATE_DIR_MODE:
        if not check_mode:
            os.chmod(path, _PRIVATE_DIR_MODE)
        return True
    return False


def _crl_summary(plan):
    revoked = plan["revoked"]
    listed = ", ".join("%s %s" % (entry["host"], entry["reason"]) for entry in revoked)
    return "CRL %s revokes %d certificate(s)%s; next update %s" % (
        plan.get("crl_number"), len(revoked), " (%s)" % listed if listed else "", plan.get("next_update"))


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
    key_path, cert_path = params["key_path"], params["certificate_path"]
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    changed = False
    created = []

    try:
        for folder in (os.path.dirname(key_path), params["issued_dir"]):
            changed |= _ensure_private_directory(folder, check)
    except OSError as error:
        module.fail_json(msg="creating the CA folders on the controller failed: %s" % error)

    key = None
    if os.path.exists(key_path):
        try:
            key = swanctl_crl.load_private_key(key_path, params["passphrase"])
        except swanctl_crl.CrlError as error:
            module.fail_json(msg="Creating or reading the CA key %s on the controller failed: %s. If the key exists, "
                                 "ipsec_pki_ca_passphrase must be the passphrase it is encrypted with (empty for a "
                                 "key without one); the role never replaces an existing CA key." % (key_path, error))
        if os.stat(key_path).st_mode & 0o7777 != _KEY_MODE:
            changed = True
            if not check:
                os.chmod(key_path, _KEY_MODE)
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
    result = dict(created=created)
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
            if not check:
                file_transaction.write_atomically(params["crl_path"], pem, _PUBLIC_MODE)
        elif os.path.exists(params["crl_path"]) and os.stat(params["crl_path"]).st_mode & 0o7777 != _PUBLIC_MODE:
            changed = True
            if not check:
                os.chmod(params["crl_path"], _PUBLIC_MODE)
        result.update(plan, changed=bool(changed or created or pem is not None), msg=_crl_summary(plan),
                      ca_certificate=ipsec_ca.certificate_pem(certificate).decode("ascii"))
    if module._diff and diff:
        result["diff"] = diff
    module.exit_json(**result)


if __name__ == "__main__":
    main()
