# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.pki import HAS_CRYPTOGRAPHY, csr_problems

DOCUMENTATION = r"""
name: ipsec_csr_problems
short_description: Say why the ipsec role's CA must not sign a host's certificate signing request
version_added: "0.1.0"
description:
  - "The request is made on the host (its private key never leaves it) and comes back to the controller in a task
    result: a host could send anything. Before the CA signs, this filter checks the request against what the
    controller computed for that host from the inventory, and returns one sentence per reason to refuse it (empty
    when the CA may sign)."
  - "Refused: a request whose signature does not verify; a subject other than C(CN=<ipsec_identity>); names
    (subjectAltName) other than exactly the host's own (its identity, IKE address, C(ipsec_pki_cert_names),
    C(ipsec_pki_cert_addresses)), so that a host never obtains a certificate for a peer's name; any extension but
    subjectAltName, keyUsage and extendedKeyUsage (a CA basic constraint above all: the signer copies a request's
    extensions); a key usage other than digitalSignature; extended key usages beyond serverAuth and clientAuth."
  - The ipsec role runs it before every signature (C(roles/ipsec/tasks/issue.yml)).
options:
  _input:
    description: The certificate signing request (PEM) the host returned.
    type: str
    required: true
  common_name:
    description: The host's IKE identity, the subject's common name.
    type: str
    required: true
  subject_alt_names:
    description: The names the certificate must carry, in the role's notation (C(DNS:name), C(IP:address),
      C(email:user@domain)).
    type: list
    elements: str
    required: true
requirements:
  - cryptography (on the controller)
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Refuse a signing request that names anything but this host
  ansible.builtin.assert:
    that: __problems | length == 0
    fail_msg: "The CA does not sign this request: {{ __problems | join('; ') }}"
    quiet: true
  vars:
    __problems: >-
      {{ csr_pem | gpufabric.core.ipsec_csr_problems(common_name='node1',
           subject_alt_names=['DNS:node1', 'IP:10.0.0.1']) }}
"""

RETURN = r"""
_value:
  description: One sentence per reason to refuse the request; empty when the CA may sign it.
  type: list
  elements: str
  sample:
    - "it asks for the names DNS:node1, DNS:node2, IP:10.0.0.1, not this host's DNS:node1, IP:10.0.0.1 (...)"
"""


def ipsec_csr_problems(csr_pem, common_name, subject_alt_names):
    if not HAS_CRYPTOGRAPHY:
        raise AnsibleFilterError("gpufabric.core.ipsec_csr_problems needs the Python package cryptography on the "
                                 "controller")
    if not isinstance(subject_alt_names, list):
        raise AnsibleFilterError("gpufabric.core.ipsec_csr_problems: subject_alt_names must be a list, got %s"
                                 % type(subject_alt_names).__name__)
    return csr_problems(csr_pem, str(common_name), [str(name) for name in subject_alt_names])


class FilterModule:
    """The ipsec_csr_problems filter."""

    def filters(self):
        return {"ipsec_csr_problems": ipsec_csr_problems}
