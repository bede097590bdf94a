#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: swanctl_crl
short_description: Keep a CRL that strongSwan applies, built from the certificates a CA issued
version_added: 0.1.0
description:
  - Writes a PEM certificate revocation list signed by the CA, with the authorityKeyIdentifier and CRL number
    strongSwan needs to use it. strongSwan 5.9 ignores a CRL without authorityKeyIdentifier, which is what
    M(community.crypto.x509_crl) writes, and then accepts revoked peers.
  - The revoked certificates are read from O(issued_dir), where the ipsec role records every certificate it
    issues as C(<issued_dir>/<host>/<time>.pem) - all certificates of the hosts in O(revoked_hosts) and, with
    O(revoke_superseded), every certificate of a host but its newest.
  - The CRL is rewritten only when the revoked set changes, when it was not signed by this CA, or when it expires
    within O(refresh_days); otherwise nothing changes.
  - "Runs where the CA key is, normally on the controller (C(delegate_to: localhost))."
author:
  - gpufabric.core maintainers (@gpufabric)
requirements:
  - cryptography >= 3.1 (Python library) where the module runs.
attributes:
  check_mode:
    details: Reports whether the CRL would be rewritten, without writing it.
    support: full
  diff_mode:
    details: The diff lists the revoked serial numbers before and after.
    support: full
options:
  path:
    description: The CRL file to keep (PEM).
    type: path
    required: true
  ca_certificate_path:
    description: The CA certificate (PEM).
    type: path
    required: true
  ca_privatekey_path:
    description: The CA private key (PEM). It is only read.
    type: path
    required: true
  ca_privatekey_passphrase:
    description: Passphrase of the CA private key, if it has one.
    type: str
  issued_dir:
    description: Folder holding one sub-folder per host with the certificates issued to it.
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
  valid_days:
    description: Days until the CRL's nextUpdate.
    type: int
    default: 30
  refresh_days:
    description: Rewrite the CRL when it expires within this many days. Must be less than O(valid_days).
    type: int
    default: 10
  digest:
    description: Signature digest (not used with Ed25519/Ed448 CA keys).
    type: str
    choices: [sha256, sha384, sha512]
    default: sha384
extends_documentation_fragment:
  - gpufabric.core.attributes
  - ansible.builtin.files
"""

EXAMPLES = r"""
- name: Keep the IPsec CRL on the controller
  gpufabric.core.swanctl_crl:
    path: /srv/pki/ipsec/crl.pem
    ca_certificate_path: /srv/pki/ipsec/ca.crt
    ca_privatekey_path: /srv/pki/ipsec/ca.key
    issued_dir: /srv/pki/ipsec/issued
    revoked_hosts: [gpu-node-17]
    mode: "0644"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
crl_number:
  description: CRL number of the CRL now in O(path) (in check mode, of the one that would be written).
  returned: success
  type: int
  sample: 3
next_update:
  description: nextUpdate of the CRL in O(path), ISO 8601 UTC.
  returned: success
  type: str
  sample: "2026-12-30T10:41:02+00:00"
revoked:
  description: The certificates the CRL revokes.
  returned: success
  type: list
  elements: dict
  sample:
    - host: gpu-node-17
      serial: 331584912395218791290217410893541873410
      reason: unspecified
      not_after: "2027-11-30T10:40:00+00:00"
      path: /srv/pki/ipsec/issued/gpu-node-17/20261130T104000.pem
update_reason:
  description: Why the CRL was (or would be) rewritten; null when it was current.
  returned: success
  type: str
  sample: the set of revoked certificates changed
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec import crl as swanctl_crl


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            ca_certificate_path=dict(type="path", required=True),
            ca_privatekey_path=dict(type="path", required=True),
            ca_privatekey_passphrase=dict(type="str", no_log=True),
            issued_dir=dict(type="path", required=True),
            revoked_hosts=dict(type="list", elements="str", default=[]),
            revoke_superseded=dict(type="bool", default=True),
            valid_days=dict(type="int", default=30),
            refresh_days=dict(type="int", default=10),
            digest=dict(type="str", choices=["sha256", "sha384", "sha512"], default="sha384"),
        ),
        supports_check_mode=True,
        add_file_common_args=True,
    )
    if not swanctl_crl.HAS_CRYPTOGRAPHY:
        module.fail_json(msg=missing_required_lib("cryptography"), exception=str(swanctl_crl.CRYPTOGRAPHY_IMPORT_ERROR))
    params = module.params
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    try:
        ca_cert = swanctl_crl.load_certificate(params["ca_certificate_path"])
        plan, pem = swanctl_crl.plan_crl(
            params["path"], ca_cert,
            lambda: swanctl_crl.load_private_key(params["ca_privatekey_path"], params["ca_privatekey_passphrase"]),
            params["issued_dir"], params["revoked_hosts"], params["revoke_superseded"], params["valid_days"],
            params["refresh_days"], params["digest"], now)
    except swanctl_crl.CrlError as exc:
        module.fail_json(msg=str(exc))
    diff = plan.pop("diff", None)
    result = dict(plan, changed=pem is not None)
    if diff and module._diff:
        result["diff"] = diff
    if pem is not None and not module.check_mode:
        file_transaction.write_atomically(params["path"], pem, 0o644)
    if not module.check_mode and os.path.exists(params["path"]):
        file_args = module.load_file_common_arguments(params)
        result["changed"] = module.set_fs_attributes_if_different(file_args, result["changed"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
