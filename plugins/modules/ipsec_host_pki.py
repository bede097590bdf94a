#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ipsec_host_pki
short_description: Keep a host's IPsec private key on the host and tell whether its certificate must be reissued
version_added: "0.1.0"
description:
  - Creates the host's private key when it is missing, cannot be read or is not of the asked type (or always, with
    O(regenerate)), on the host, owned by root with mode 0600, written to a temporary file and renamed.
  - Reads the installed certificate and says why it must be reissued, if it must, in RV(reasons) (renewal forced,
    no certificate yet, key regenerated, expiring within O(renew_days), not issued by O(ca_certificate), other
    names or addresses than O(subject_alt_names), not matching the key).
  - When it must, returns a certificate signing request made with the key on the host (RV(csr)); only this request
    travels to the controller's CA. The private key is never returned.
  - One task for the whole host side of a run in which nothing changes.
author:
  - gpufabric.core contributors (@gpufabric)
options:
  key_path:
    description: The private key.
    type: path
    default: /etc/swanctl/private/gpufabric.key
  key_type:
    description: Type of the private key.
    type: str
    choices: [ECC, RSA, Ed25519]
    default: ECC
  key_curve:
    description: Curve of an ECC key.
    type: str
    choices: [secp256r1, secp384r1, secp521r1]
    default: secp384r1
  key_size:
    description: Size in bits of an RSA key.
    type: int
    default: 3072
  regenerate:
    description: Replace the key on every run (and so reissue the certificate).
    type: bool
    default: false
  certificate_path:
    description: The host's installed certificate.
    type: path
    default: /etc/swanctl/x509/gpufabric.crt
  ca_certificate:
    description: The CA certificate (PEM) the host's certificate must be issued by; empty when there is none yet.
    type: str
    default: ""
  common_name:
    description: Subject common name of the request (the host's IKE identity).
    type: str
    required: true
  subject_alt_names:
    description: The names and addresses the certificate must hold, as C(DNS:name), C(IP:address), C(email:address).
    type: list
    elements: str
    required: true
  renew_days:
    description: Reissue a certificate that expires within this many days.
    type: int
    default: 30
  force_renewal:
    description: Reissue the certificate whatever its state.
    type: bool
    default: false
  digest:
    description: Digest the request is signed with (not used for Ed25519).
    type: str
    choices: [sha256, sha384, sha512]
    default: sha384
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Says whether the key would be created and why a certificate would be issued; writes nothing.
  diff_mode:
    support: none
    details: No diff; the key is never shown.
requirements:
  - python3-cryptography on the host
"""

EXAMPLES = r"""
- name: Check this host's key and certificate
  gpufabric.core.ipsec_host_pki:
    common_name: node1
    subject_alt_names: [DNS:node1, IP:10.0.0.1]
    ca_certificate: "{{ lookup('ansible.builtin.file', '/srv/pki/ca.crt') }}"
  register: host_pki
"""

RETURN = r"""
key_changed:
  description: Whether the private key was (or, in check mode, would be) created or replaced.
  type: bool
  returned: always
reasons:
  description: Why the certificate must be reissued; empty when it need not be.
  type: list
  elements: str
  returned: always
  sample: ["it expires within 30 days (20270101000000Z)"]
not_after:
  description: End of validity of the installed certificate (ASN.1 time), empty when there is none.
  type: str
  returned: always
csr:
  description: The signing request (PEM) when RV(reasons) is not empty and not in check mode.
  type: str
  returned: when a certificate must be issued
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.hostio.file_transaction import set_attributes, write_atomically
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.pki import (
    HAS_CRYPTOGRAPHY,
    build_csr,
    certificate_facts,
    certificate_reasons,
    generate_key,
    key_fits,
    key_pem,
)

if HAS_CRYPTOGRAPHY:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

_KEY_MODE = 0o600


def _load_key(path):
    """The key, or None when there is none or it cannot be read as an unencrypted key."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    try:
        return serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        return None


def _write_key(path, data):
    # The temporary file is 0600 from its creation: the key is never readable by anyone else, even briefly.
    write_atomically(path, data, _KEY_MODE, (0, 0))


def _load_certificate(path):
    try:
        with open(path, "rb") as handle:
            return x509.load_pem_x509_certificate(handle.read())
    except (OSError, ValueError):
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            key_path=dict(type="path", default="/etc/swanctl/private/gpufabric.key"),
            key_type=dict(type="str", default="ECC", choices=["ECC", "RSA", "Ed25519"]),
            key_curve=dict(type="str", default="secp384r1", choices=["secp256r1", "secp384r1", "secp521r1"]),
            key_size=dict(type="int", default=3072),
            regenerate=dict(type="bool", default=False),
            certificate_path=dict(type="path", default="/etc/swanctl/x509/gpufabric.crt"),
            ca_certificate=dict(type="str", default=""),
            common_name=dict(type="str", required=True),
            subject_alt_names=dict(type="list", elements="str", required=True),
            renew_days=dict(type="int", default=30),
            force_renewal=dict(type="bool", default=False),
            digest=dict(type="str", default="sha384", choices=["sha256", "sha384", "sha512"]),
        ),
        supports_check_mode=True,
    )
    if not HAS_CRYPTOGRAPHY:
        module.fail_json(msg="python3-cryptography is needed on the host (the ipsec role installs it)")
    params = module.params
    path = params["key_path"]

    key = None if params["regenerate"] else _load_key(path)
    if key is not None and not key_fits(key, params["key_type"], params["key_curve"], params["key_size"]):
        key = None
    key_replaced = key is None
    key_changed = key_replaced
    try:
        if key_replaced:
            key = generate_key(params["key_type"], params["key_curve"], params["key_size"])
            if not module.check_mode:
                _write_key(path, key_pem(key))
        else:
            status = os.stat(path)
            if status.st_mode & 0o7777 != _KEY_MODE or (status.st_uid, status.st_gid) != (0, 0):
                key_changed = True
                if not module.check_mode:
                    set_attributes(path, _KEY_MODE, (0, 0))
    except OSError as error:
        # The message names the file and the system's reason; it never holds key material.
        module.fail_json(msg="creating %s failed: %s" % (path, error.strerror or error))

    certificate = _load_certificate(params["certificate_path"])
    ca_certificate = None
    if params["ca_certificate"].strip():
        try:
            ca_certificate = x509.load_pem_x509_certificate(params["ca_certificate"].encode("ascii"))
        except ValueError as error:
            module.fail_json(msg="ca_certificate is not a PEM certificate: %s" % error)
    facts = (certificate_facts(certificate, key, ca_certificate, datetime.datetime.now(datetime.timezone.utc))
             if certificate is not None else None)
    reasons = certificate_reasons(facts, key_replaced, params["subject_alt_names"], params["renew_days"],
                                  params["force_renewal"])
    result = dict(changed=key_changed, key_changed=key_changed, reasons=reasons,
                  not_after=facts["not_after"] if facts else "")
    if reasons and not module.check_mode:
        try:
            result["csr"] = build_csr(key, params["common_name"], params["subject_alt_names"], params["digest"])
        except ValueError as error:
            module.fail_json(msg="creating the signing request failed: %s" % error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
