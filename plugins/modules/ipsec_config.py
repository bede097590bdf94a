#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: ipsec_config
short_description: Write a host's strongSwan configuration, CA certificate, CRL and certificate as one transaction
version_added: "0.1.0"
description:
  - Renders the swanctl connections of one host of an IKEv2 mesh (from the result of the
    C(gpufabric.core.swanctl_mesh) filter) and the charon settings of the ESP data path, and writes them together
    with the CA certificate, the CRL and, when one was just issued, the host's certificate.
  - Every changed file is written through the collection's file_transaction (a temporary file in its folder,
    fsync, rename over the old one); when one write fails, the files already written are put back, so the host never
    holds half a change. Every file is root's.
  - Returns what the change needs, so that the caller reloads only on change. C(restart) when the data path
    settings changed (charon reads them only when it starts; with O(service) this module restarts it), and
    C(load) (C(swanctl --load-all --clear)) for any change.
  - Handles public material only. The host's private key is never read or written by this module.
  - Also reports the RDMA rails that the traffic selectors cover but which RoCE bypasses (RDMA NICs and rxe put
    their packets on the wire without the kernel's xfrm stack), from C(/sys/class/infiniband).
author:
  - gpufabric.core contributors (@gpufabric)
options:
  mesh:
    description: This host's result of the C(gpufabric.core.swanctl_mesh) filter (connections, shunts, local_ts).
    type: dict
    required: true
  settings:
    description:
      - C(mesh_group), C(ike_proposals) (the classical ones; O(pq_kex) adds ML-KEM), C(esp_proposals), C(ike_rekey_time),
        C(child_rekey_time), C(dpd_delay), C(mode), C(hw_offload), C(revocation_policy), C(conn_prefix).
    type: dict
    required: true
  pq_kex:
    description:
      - Post-quantum ML-KEM additional key exchange appended to every IKE proposal (RFC 9370), and to every ESP
        proposal that has a classical key exchange (CHILD SA rekeys). C(auto) uses ML-KEM-768 when
        C(swanctl --list-algs) offers it and keeps the classical proposals as the fallback; an explicit one that
        strongSwan does not offer fails before any file is written.
    type: str
    choices: [none, auto, mlkem512, mlkem768, mlkem1024]
    default: none
  kernel_libipsec:
    description: Load strongSwan's userspace ESP plugin (only for kernels without ESP).
    type: bool
    default: false
  swanctl_conf_path:
    description: The swanctl connections file.
    type: path
    default: /etc/swanctl/conf.d/gpufabric.conf
  charon_conf_path:
    description: The charon settings file.
    type: path
    default: /etc/strongswan.d/gpufabric.conf
  certificate_path:
    description: This host's certificate (its base name is written into the connections).
    type: path
    default: /etc/swanctl/x509/gpufabric.crt
  certificate:
    description: A certificate just issued for this host (PEM); omitted, the installed one is left as it is.
    type: str
  ca_certificate_path:
    description: The CA certificate on the host (its base name is written into the connections).
    type: path
    default: /etc/swanctl/x509ca/gpufabric-ca.crt
  ca_certificate:
    description: The CA certificate (PEM); omitted, the file is left as it is.
    type: str
  crl_path:
    description: The CRL on the host.
    type: path
    default: /etc/swanctl/x509crl/gpufabric.crl
  crl:
    description: The CRL (PEM); omitted, the file is left as it is.
    type: str
  sysfs_root:
    description: Where sysfs is mounted (the RDMA devices are read from its class/infiniband).
    type: path
    default: /sys
  service:
    description:
      - strongSwan's systemd unit, enabled and started (when not running) after the files are written, so that a new
        host loads its configuration, and restarted when RV(restart) says the data path settings changed (a restart
        drops every SA). A running one is otherwise left to the caller, which reloads it as RV(load) says. Empty
        leaves the unit alone.
    type: str
    default: ""
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports the files that would change, with a diff, and what that would reload; touches nothing.
  diff_mode:
    support: full
    details: Returns the before and after text of every changed file (all public material).
notes:
  - Files are owned by root with mode 0644 (public material); the private key stays with the PKI tasks (0600).
"""

EXAMPLES = r"""
- name: Write the swanctl configuration, CA certificate and CRL
  gpufabric.core.ipsec_config:
    mesh: "{{ __ipsec_mesh }}"
    settings:
      mesh_group: ipsec
      ike_proposals: [aes256gcm16-prfsha384-ecp384]
      esp_proposals: [aes256gcm16-ecp384]
      ike_rekey_time: 4h
      child_rekey_time: 1h
      dpd_delay: 30s
      mode: tunnel
      hw_offload: "no"
      revocation_policy: relaxed
      conn_prefix: gf
    ca_certificate: "{{ lookup('ansible.builtin.file', '/srv/pki/ca.crt') }}"
    crl: "{{ lookup('ansible.builtin.file', '/srv/pki/crl.pem') }}"
  register: ipsec_config
"""

RETURN = r"""
changed_files:
  description: The files written (or, in check mode, that would be).
  type: list
  elements: str
  returned: always
restart:
  description: Whether strongSwan must be restarted (the data path settings changed); with O(service), it was.
  type: bool
  returned: always
load:
  description: Whether C(swanctl --load-all --clear) must run (any file changed).
  type: bool
  returned: always
roce_unencrypted:
  description: RDMA rails whose address the traffic selectors cover; RoCE traffic from them is not encrypted.
  type: list
  elements: dict
  returned: always
  sample: [{device: rxe0, port: 1, netdev: bond0.100, address: 10.100.0.1, selectors: [10.100.0.0/24],
            gid_indexes: [1]}]
ike_proposals:
  description: The IKE proposals written (with ML-KEM where O(pq_kex) added it).
  type: list
  elements: str
  returned: always
esp_proposals:
  description: The ESP proposals written (with ML-KEM where O(pq_kex) added it to a proposal with PFS).
  type: list
  elements: str
  returned: always
  sample: [aes256gcm16-ecp384-ke1_mlkem768, aes256gcm16-ecp384]
roce_warnings:
  description: One line per entry of RV(roce_unencrypted), as also issued as a warning.
  type: list
  elements: str
  returned: always
  sample: ["RoCE on rxe0 (bond0.100, 10.100.0.1) bypasses kernel IPsec: not encrypted"]
rdma_devices:
  description: The RDMA devices found under sysfs (none in a container).
  type: list
  elements: str
  returned: always
service_actions:
  description: What was done to O(service) (or would be, in check mode).
  type: list
  elements: str
  returned: always
  sample: [enabled strongswan.service, started strongswan.service]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.config import (
    LOAD,
    RESTART,
    effective_esp_proposals,
    effective_ike_proposals,
    file_entries,
    reloads,
    render_charon_conf,
    render_swanctl_conf,
    roce_bypass,
    roce_warning,
)
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import InputError
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.systemd_units import UnitError, ensure_running
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.sysfs import live_rdma_devices

_PUBLIC = 0o644
_SETTINGS = ("mesh_group", "ike_proposals", "esp_proposals", "ike_rekey_time", "child_rekey_time", "dpd_delay",
             "mode", "hw_offload", "revocation_policy", "conn_prefix")


def _pem(text):
    return text.strip() + "\n"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mesh=dict(type="dict", required=True),
            settings=dict(type="dict", required=True),
            pq_kex=dict(type="str", default="none", choices=["none", "auto", "mlkem512", "mlkem768", "mlkem1024"]),
            kernel_libipsec=dict(type="bool", default=False),
            swanctl_conf_path=dict(type="path", default="/etc/swanctl/conf.d/gpufabric.conf"),
            charon_conf_path=dict(type="path", default="/etc/strongswan.d/gpufabric.conf"),
            certificate_path=dict(type="path", default="/etc/swanctl/x509/gpufabric.crt"),
            certificate=dict(type="str"),
            ca_certificate_path=dict(type="path", default="/etc/swanctl/x509ca/gpufabric-ca.crt"),
            ca_certificate=dict(type="str"),
            crl_path=dict(type="path", default="/etc/swanctl/x509crl/gpufabric.crl"),
            crl=dict(type="str"),
            sysfs_root=dict(type="path", default="/sys"),
            service=dict(type="str", default=""),
        ),
        supports_check_mode=True,
    )
    params = module.params
    missing = [name for name in _SETTINGS if name not in params["settings"]]
    if missing:
        module.fail_json(msg="settings lacks %s" % ", ".join(missing))
    settings = dict(params["settings"])
    algorithms = None
    swanctl = module.get_bin_path("swanctl")
    if params["pq_kex"] != "none" and swanctl:
        rc, out, err = module.run_command([swanctl, "--list-algs"])
        if rc != 0 and not module.check_mode:
            module.fail_json(msg="swanctl --list-algs failed (%d): %s" % (rc, (err or out).strip()))
        algorithms = out if rc == 0 else None
    settings["esp_proposals"] = effective_esp_proposals(settings["esp_proposals"], params["pq_kex"], algorithms)
    settings["ike_proposals"], problem = effective_ike_proposals(settings["ike_proposals"], params["pq_kex"],
                                                                 algorithms)
    if problem:
        module.fail_json(msg=problem)
    settings["certificate"] = params["certificate_path"].rsplit("/", 1)[-1]
    settings["ca_certificate"] = params["ca_certificate_path"].rsplit("/", 1)[-1]
    try:
        desired = {
            params["swanctl_conf_path"]: {"content": render_swanctl_conf(params["mesh"], settings),
                                          "mode": _PUBLIC, "reload": LOAD},
            params["charon_conf_path"]: {"content": render_charon_conf(params["kernel_libipsec"]),
                                         "mode": _PUBLIC, "reload": RESTART},
        }
    except (InputError, KeyError, TypeError) as error:
        module.fail_json(msg="gpufabric.core.ipsec_config: %s" % error)
    for path, content in ((params["certificate_path"], params["certificate"]),
                          (params["ca_certificate_path"], params["ca_certificate"]),
                          (params["crl_path"], params["crl"])):
        if content:
            desired[path] = {"content": _pem(content), "mode": _PUBLIC, "reload": LOAD}

    entries = file_entries(desired)
    try:
        changes = ft.plan(entries, ft.read_all(entries))
        if changes and not module.check_mode:
            directories = sorted({os.path.dirname(change["path"]) for change in changes})
            ft.apply(changes, make_directories=[(directory, 0o755) for directory in directories])
    except (OSError, ValueError) as error:
        module.fail_json(msg="No file was changed (every file restored): %s" % error, changed=False)
    changed_files = [change["path"] for change in changes]
    change = reloads(desired, changes)
    service_actions = []
    if params["service"]:
        # A changed data path plugin is only read when charon starts: the restart (which drops every SA) happens
        # here, before the role's swanctl --load-all.
        try:
            service_actions = ensure_running(module.run_command, params["service"], restart=change["restart"],
                                             check_mode=module.check_mode)
        except UnitError as error:
            module.fail_json(msg=str(error), changed=bool(changes), changed_files=changed_files)

    devices = live_rdma_devices(params["sysfs_root"])
    unencrypted = roce_bypass(devices, params["mesh"].get("local_ts") or [])
    for entry in unencrypted:
        module.warn(roce_warning(entry))
    result = dict(changed=bool(changes or service_actions), changed_files=changed_files,
                  service_actions=service_actions, restart=change["restart"],
                  load=change["load"], ike_proposals=settings["ike_proposals"],
                  esp_proposals=settings["esp_proposals"], roce_unencrypted=unencrypted,
                  roce_warnings=[roce_warning(entry) for entry in unencrypted], rdma_devices=sorted(devices))
    if module._diff:
        result["diff"] = ft.diff_entries(changes)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
