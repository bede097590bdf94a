#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: swanctl_verify
short_description: Check that the expected strongSwan IKE and CHILD SAs are established, naming each failing peer
version_added: 0.1.0
description:
  - Reads C(swanctl --list-sas) and compares it with the SAs this host should have, one per peer.
  - With O(enforce=true), initiates the missing SAs of the pairs this host initiates (C(swanctl --initiate)) and
    terminates SAs with peers that must be refused (revoked), then waits up to O(timeout) seconds for the peers that
    initiate towards this host.
  - Fails with one line per peer that is not right, including the reason strongSwan logged when this host's
    initiation was refused (untrusted CA, revoked certificate, no proposal chosen, timeout...).
  - Reports each peer's key exchanges (the classical group and, on strongSwan 6, the RFC 9370 additional ones such
    as ML-KEM-768) and whether its SAs are post-quantum; with O(require_post_quantum) (or
    O(expected[].post_quantum)) a peer whose SAs are classical is a problem, named in the failure.
  - The parsing is the same code as the P(gpufabric.core.swanctl_sas#filter) filter.
author:
  - gpufabric.core maintainers (@gpufabric)
requirements:
  - strongSwan with swanctl and a running charon (charon-systemd) on the host.
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    details: In check mode nothing is initiated or terminated; the report shows what would be.
    support: full
  diff_mode:
    details: Nothing is written, so there is no diff.
    support: none
options:
  expected:
    description:
      - The SAs this host must (or must not) have, one entry per peer.
    type: list
    elements: dict
    required: true
    suboptions:
      peer:
        description: Name of the peer, as people know it (inventory name).
        type: str
        required: true
      ike:
        description: swanctl connection (IKE SA) name.
        type: str
        required: true
      child:
        description: CHILD SA name.
        type: str
        required: true
      remote_host:
        description: IKE address of the peer; an SA with another address does not count.
        type: str
      initiator:
        description: Whether this host initiates the pair (and so may start it when it is missing).
        type: bool
        default: false
      absent:
        description: The peer must have no SA (its certificate is revoked).
        type: bool
        default: false
      post_quantum:
        description:
          - Whether this peer's SAs must include a post-quantum key exchange (ML-KEM); unset means
            O(require_post_quantum).
          - Set it to V(false) for a peer known to run strongSwan 5.9 in a mesh that otherwise requires it.
        type: bool
  require_post_quantum:
    description:
      - Fail every peer whose IKE SA has no post-quantum key exchange (a classical SA), for meshes whose
        C(ipsec_pq_kex) requires ML-KEM. Without it, classical SAs are only listed in RV(classical).
      - A CHILD SA counts as post-quantum when its IKE SA does, since its keys derive from the IKE SA's.
    type: bool
    default: false
  esp_proposals:
    description:
      - The configured ESP proposals; a CHILD SA using another encryption algorithm is reported.
      - Proposals whose encryption keyword this module does not know are not checked (a warning says so).
    type: list
    elements: str
    default: []
  enforce:
    description:
      - Initiate missing SAs this host initiates and terminate SAs with peers marked O(expected[].absent).
    type: bool
    default: true
  timeout:
    description: Seconds to wait for all expected SAs (each initiation uses the same limit).
    type: int
    default: 30
  fail_on_problems:
    description: Fail when any peer is not as expected; otherwise only report.
    type: bool
    default: true
  traffic_selectors:
    description:
      - This host's traffic selectors (the mesh's C(local_ts)). Every RDMA rail with an address inside them is
        reported in RV(roce_unencrypted) and warned about, because RoCE traffic bypasses the kernel's IPsec.
    type: list
    elements: str
    default: []
  sysfs_root:
    description: Where sysfs is mounted (the RDMA devices are read from its class/infiniband).
    type: path
    default: /sys
"""

EXAMPLES = r"""
- name: Verify the IPsec mesh of this host
  gpufabric.core.swanctl_verify:
    expected:
      - peer: node2
        ike: gf-node2
        child: gf-node2
        remote_host: 10.0.0.2
        initiator: true
      - peer: node3
        ike: gf-node3
        child: gf-node3
        remote_host: 10.0.0.3
    esp_proposals: [aes256gcm16-ecp384]
    timeout: 30

- name: Only report, never initiate
  gpufabric.core.swanctl_verify:
    expected: "{{ mesh.expected }}"
    enforce: false
    fail_on_problems: false
  register: ipsec_status
"""

RETURN = r"""
peers:
  description: One entry per expected peer.
  returned: always
  type: list
  elements: dict
  sample:
    - peer: node2
      ike: gf-node2
      child: gf-node2
      ok: true
      problem: null
      ike_state: ESTABLISHED
      child_state: INSTALLED
      encryption: AES_GCM_16-256
      key_exchanges: [ECP_384, ML_KEM_768]
      child_key_exchanges: []
      post_quantum: true
      packets_in: 3
      packets_out: 3
      reasons: []
    - peer: node3
      ike: gf-node3
      child: gf-node3
      ok: false
      problem: no IKE SA with peer node3 (connection gf-node3)
      ike_state: null
      child_state: null
      encryption: null
      key_exchanges: []
      child_key_exchanges: []
      post_quantum: null
      packets_in: null
      packets_out: null
      reasons:
        - no issuer certificate found for "CN=node3"
        - issuer is "CN=other CA"
        - "initiate failed: establishing CHILD_SA 'gf-node3' failed"
problems:
  description: One line per peer that is not as expected.
  returned: always
  type: list
  elements: str
  sample: ["peer node3: no IKE SA with peer node3 (connection gf-node3); strongSwan said: issuer is \"CN=other CA\""]
classical:
  description:
    - Peers whose SAs are established without a post-quantum key exchange, whether or not that is required (a
      strongSwan 5.9 peer under C(ipsec_pq_kex=preferred)).
  returned: always
  type: list
  elements: str
  sample: [node4]
initiated:
  description: CHILD SAs this run initiated.
  returned: always
  type: list
  elements: str
  sample: [gf-node2]
terminated:
  description: IKE SAs this run terminated because their peer must be refused.
  returned: always
  type: list
  elements: str
  sample: []
sas:
  description: The IKE SAs as parsed from the last C(swanctl --list-sas).
  returned: success
  type: list
  elements: dict
  sample:
    - name: gf-node2
      state: ESTABLISHED
      initiator: true
      local: {id: node1, host: 10.0.0.1, port: 4500}
      remote: {id: node2, host: 10.0.0.2, port: 4500}
      algorithms: [AES_GCM_16-256, PRF_HMAC_SHA2_384, ECP_384, KE1_ML_KEM_768]
      key_exchanges: [ECP_384, ML_KEM_768]
      post_quantum: true
      children:
        - name: gf-node2
          state: INSTALLED
          encryption: AES_GCM_16-256
          key_exchanges: []
          post_quantum: true
          local_ts: [10.77.0.1/32]
          remote_ts: [10.77.0.2/32]
roce_unencrypted:
  description:
    - RDMA rails whose address the traffic selectors cover. RDMA NICs and rxe put RoCE packets (UDP 4791) on the wire
      without the kernel's xfrm stack, so this traffic is not encrypted although a policy covers the address.
  returned: success
  type: list
  elements: dict
  sample: [{device: rxe0, port: 1, netdev: bond0.100, address: 10.100.0.1, selectors: [10.100.0.0/24],
            gid_indexes: [1]}]
roce_warnings:
  description: One line per entry of RV(roce_unencrypted), as also issued as a warning.
  type: list
  elements: str
  returned: always
  sample: ["RoCE on rxe0 (bond0.100, 10.100.0.1) bypasses kernel IPsec: not encrypted"]
rdma_devices:
  description: The RDMA devices found under sysfs (none in a container).
  returned: success
  type: list
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.config import roce_bypass, roce_warning
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.swanctl import (
    encryption_names,
    evaluate_sas,
    parse_list_sas,
    summarize_initiate,
)
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.sysfs import live_rdma_devices

_POLL_SECONDS = 1


def _list_sas(module, swanctl):
    rc, out, err = module.run_command([swanctl, "--list-sas", "--noblock"])
    if rc != 0:
        module.fail_json(msg="`swanctl --list-sas` failed (rc=%d): %s. Is strongswan.service (charon-systemd) "
                             "running?" % (rc, (err or out).strip()))
    try:
        return parse_list_sas(out)
    except ParseError as exc:
        module.fail_json(msg=str(exc), stdout=out)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            expected=dict(type="list", elements="dict", required=True, options=dict(
                peer=dict(type="str", required=True),
                ike=dict(type="str", required=True),
                child=dict(type="str", required=True),
                remote_host=dict(type="str"),
                initiator=dict(type="bool", default=False),
                absent=dict(type="bool", default=False),
                post_quantum=dict(type="bool"),
            )),
            require_post_quantum=dict(type="bool", default=False),
            esp_proposals=dict(type="list", elements="str", default=[]),
            enforce=dict(type="bool", default=True),
            timeout=dict(type="int", default=30),
            fail_on_problems=dict(type="bool", default=True),
            traffic_selectors=dict(type="list", elements="str", default=[]),
            sysfs_root=dict(type="path", default="/sys"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["timeout"] < 1:
        module.fail_json(msg="timeout must be at least 1 second, got %d" % params["timeout"])
    swanctl = module.get_bin_path("swanctl", required=True)
    encryption = encryption_names(params["esp_proposals"])
    if params["esp_proposals"] and not encryption:
        module.warn("none of the ESP proposals %s has an encryption keyword this module knows; the negotiated "
                    "algorithm is not checked" % params["esp_proposals"])
    acting = params["enforce"] and not module.check_mode

    sas = _list_sas(module, swanctl)
    results = evaluate_sas(sas, params["expected"], encryption, params["require_post_quantum"])
    wanted = {w["peer"]: w for w in params["expected"]}
    reasons = {}
    initiated = []
    terminated = []
    for result in results:
        want = wanted[result["peer"]]
        if result["ok"] or not acting:
            continue
        if want["absent"]:
            rc, out, err = module.run_command([swanctl, "--terminate", "--ike", want["ike"], "--force",
                                               "--timeout", str(params["timeout"])])
            terminated.append(want["ike"])
        elif want["initiator"] and result["ike_state"] in (None, "ESTABLISHED"):
            # Initiating while an IKE SA is CONNECTING would race strongSwan's own retransmissions.
            rc, out, err = module.run_command([swanctl, "--initiate", "--child", want["child"],
                                               "--timeout", str(params["timeout"])])
            initiated.append(want["child"])
            if rc != 0:
                reasons[result["peer"]] = summarize_initiate((out or "") + "\n" + (err or ""))

    deadline = time.monotonic() + params["timeout"]
    while acting and any(not r["ok"] for r in results) and time.monotonic() < deadline:
        # Responders wait here for the peers that initiate towards them.
        time.sleep(_POLL_SECONDS)
        sas = _list_sas(module, swanctl)
        results = evaluate_sas(sas, params["expected"], encryption, params["require_post_quantum"])

    problems = []
    for result in results:
        result["reasons"] = reasons.get(result["peer"], []) if not result["ok"] else []
        if result["ok"]:
            continue
        line = "peer %s: %s" % (result["peer"], result["problem"])
        if result["reasons"]:
            line += "; strongSwan said: " + "; ".join(result["reasons"])
        elif not wanted[result["peer"]]["initiator"] and not wanted[result["peer"]]["absent"]:
            line += " (%s initiates this pair: its own report says why)" % result["peer"]
        problems.append(line)

    classical = [r["peer"] for r in results if r["post_quantum"] is False]
    # RoCE leaves in clear whatever the policies say: name every rail the selectors seem to protect.
    devices = live_rdma_devices(params["sysfs_root"])
    unencrypted = roce_bypass(devices, params["traffic_selectors"])
    for entry in unencrypted:
        module.warn(roce_warning(entry))
    report = dict(changed=bool(initiated or terminated), peers=results, problems=problems, classical=classical,
                  initiated=initiated, terminated=terminated, roce_unencrypted=unencrypted,
                  roce_warnings=[roce_warning(entry) for entry in unencrypted], rdma_devices=sorted(devices))
    if problems and params["fail_on_problems"]:
        module.fail_json(msg="IPsec SAs are not as expected: " + " | ".join(problems), **report)
    module.exit_json(sas=sas, **report)


if __name__ == "__main__":
    main()
