#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: health_config
short_description: Write the gpufabric-health sampler, its expected state and node_exporter's configuration, and run both
version_added: "0.1.0"
description:
  - Writes, as one transaction (C(file_transaction)), the gpufabric-health package (the collection's module_utils it
    imports and its own program), its command, the expected-state file it samples against, node_exporter's
    arguments (C(/etc/default/prometheus-node-exporter)) and web configuration (TLS, basic auth), and the
    gpufabric-health unit; then reloads systemd when the unit changed and starts, or restarts after a change,
    C(gpufabric-health.service) and C(prometheus-node-exporter.service).
  - Check mode reports what would change (diff included) and changes nothing.
options:
  host:
    description: The inventory hostname (the C(host) label of every series).
    type: str
    required: true
  interval:
    description: Seconds between samples.
    type: int
    default: 5
  command_interval:
    description: Seconds between runs of the sampler's commands (lldpcli, vtysh, swanctl, ethtool).
    type: int
    default: 10
  qos_interval:
    description: Seconds between runs of C(mlnx_qos) on each RoCE rail of an mlx5 NIC.
    type: int
    default: 240
  rails:
    description: The rails to watch (rail, netdev, device, port, link_layer, expected_rate_gbps, leaf, leaf_port); empty
      takes the host's rails from O(fabric_map).
    type: list
    elements: dict
    default: []
  fabric_map:
    description: The fabric map of gpufabric.core.fabric_map; each rail's expected leaf is its peers' leaf.
    type: dict
    default: {}
  bonds:
    description: The bonding role's bonds (name, members).
    type: list
    elements: dict
    default: []
  uplinks:
    description: The routing role's uplinks (interface, peer, leaf, bfd).
    type: list
    elements: dict
    default: []
  ipsec_members:
    description:
      - The hosts of the ipsec role's mesh group (C(ipsec_mesh_group)); when this host is one, a CHILD SA is
        expected with every other member and every gateway, named as the ipsec role names its connections.
    type: list
    elements: str
    default: []
  ipsec_gateways:
    description: Names of the ipsec role's gateways (C(ipsec_gateways[].name)).
    type: list
    elements: str
    default: []
  ipsec_revoked:
    description: The ipsec role's revoked hosts (C(ipsec_revoked_hosts)); no SA is expected with them.
    type: list
    elements: str
    default: []
  topology:
    description: This host's C(gpufabric_topology); every GPU and RDMA NIC it lists has its PCIe link watched.
    type: dict
    default: {}
  roce_ecn_priority:
    description: The priority whose ECN (DCQCN) must be on at both points of every RoCE rail; unset for no check.
    type: int
  roce_pfc_priority:
    description: The priority whose PFC must be on (lossless) on every RoCE rail with an mlx5 NIC; unset for no check.
    type: int
  roce_trust:
    description: The QoS trust state every RoCE rail's mlx5 NIC must be in, as C(mlnx_qos) reports it; empty for no check.
    type: str
    choices: [dscp, pcp, ""]
    default: ""
  module_utils:
    description:
      - The collection's module_utils the sampler imports, path relative to C(plugins/module_utils) to content,
        installed under O(lib_dir)C(/ansible_collections/gpufabric/core/plugins/module_utils) (the layout of every
        host program of the collection).
    type: dict
    required: true
  package:
    description: File name to content of the gpufabric_health program package.
    type: dict
    required: true
  lib_dir:
    description: Where the package tree is installed.
    type: path
    default: /usr/local/lib/gpufabric-health
  bin_path:
    description: The gpufabric-health command.
    type: path
    default: /usr/local/sbin/gpufabric-health
  state_file:
    description: The expected-state file.
    type: path
    default: /etc/gpufabric-health/expected.json
  unit_file:
    description: The sampler's unit file.
    type: path
    default: /etc/systemd/system/gpufabric-health.service
  textfile_dir:
    description: node_exporter's textfile directory.
    type: path
    default: /var/lib/prometheus/node-exporter
  listen_address:
    description:
      - The address node_exporter listens on (the management address), or a name the host resolves to one of its
        own addresses; an address that is not this host's is refused before anything changes.
    type: str
    required: true
  port:
    description: node_exporter's port.
    type: int
    default: 9100
  ethtool:
    description: Turn node_exporter's ethtool collector on.
    type: bool
    default: false
  web_config_file:
    description: node_exporter's web configuration file (written only with TLS or basic auth).
    type: path
    default: /etc/prometheus/node-exporter-web.yml
  tls_cert_file:
    description: Certificate node_exporter serves (TLS when set).
    type: path
  tls_key_file:
    description: Key of O(tls_cert_file).
    type: path
  basic_auth_users:
    description: User name to bcrypt hash, for node_exporter's basic auth.
    type: dict
    default: {}
  node_exporter_defaults_file:
    description: Debian's environment file of prometheus-node-exporter.
    type: path
    default: /etc/default/prometheus-node-exporter
  services:
    description: Bring the units to running (false writes the files only, as a test may).
    type: bool
    default: true
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports which files and services would change, with a diff, after validating them; writes nothing.
  diff_mode:
    support: full
    details: Returns the before and after text of every changed file.
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Write and run the health sampler
  gpufabric.core.health_config:
    host: "{{ inventory_hostname }}"
    fabric_map: "{{ health_fabric_map }}"
    module_utils: "{{ __health_module_utils_files }}"
    package: "{{ __health_package_files }}"
    listen_address: 10.0.0.11
"""

RETURN = r"""
changes:
  description: Each file or directory created, replaced or removed, with the action.
  type: list
  elements: dict
  returned: always
service_actions:
  description: What systemctl did (or would do), e.g. C(restarted gpufabric-health.service).
  type: list
  elements: str
  returned: always
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.health import config as hc
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import host_program as hp
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su

SAMPLER = "gpufabric-health.service"
NODE_EXPORTER = "prometheus-node-exporter.service"


def main():
    module = AnsibleModule(
        argument_spec={
            "host": {"type": "str", "required": True},
            "interval": {"type": "int", "default": 5},
            "command_interval": {"type": "int", "default": 10},
            "qos_interval": {"type": "int", "default": 240},
            "rails": {"type": "list", "elements": "dict", "default": []},
            "fabric_map": {"type": "dict", "default": {}},
            "bonds": {"type": "list", "elements": "dict", "default": []},
            "uplinks": {"type": "list", "elements": "dict", "default": []},
            "ipsec_members": {"type": "list", "elements": "str", "default": []},
            "ipsec_gateways": {"type": "list", "elements": "str", "default": []},
            "ipsec_revoked": {"type": "list", "elements": "str", "default": []},
            "topology": {"type": "dict", "default": {}},
            "roce_ecn_priority": {"type": "int"},
            "roce_pfc_priority": {"type": "int"},
            "roce_trust": {"type": "str", "choices": ["dscp", "pcp", ""], "default": ""},
            "module_utils": {"type": "dict", "required": True},
            "package": {"type": "dict", "required": True},
            "lib_dir": {"type": "path", "default": "/usr/local/lib/gpufabric-health"},
            "bin_path": {"type": "path", "default": "/usr/local/sbin/gpufabric-health"},
            "state_file": {"type": "path", "default": "/etc/gpufabric-health/expected.json"},
            "unit_file": {"type": "path", "default": "/etc/systemd/system/gpufabric-health.service"},
            "textfile_dir": {"type": "path", "default": "/var/lib/prometheus/node-exporter"},
            "listen_address": {"type": "str", "required": True},
            "port": {"type": "int", "default": 9100},
            "ethtool": {"type": "bool", "default": False},
            "web_config_file": {"type": "path", "default": "/etc/prometheus/node-exporter-web.yml"},
            "tls_cert_file": {"type": "path"},
            "tls_key_file": {"type": "path"},
            "basic_auth_users": {"type": "dict", "default": {}, "no_log": True},
            "node_exporter_defaults_file": {"type": "path", "default": "/etc/default/prometheus-node-exporter"},
            "services": {"type": "bool", "default": True},
        },
        supports_check_mode=True,
    )
    params = module.params
    problems = hp.name_problems(params["module_utils"], "module_utils") + hp.name_problems(
        params["package"], "package", program=True)
    problems += hc.host_path_problems(params)
    if "__main__.py" not in params["package"]:
        problems.append("package: the gpufabric_health package has no __main__.py")
    if bool(params["tls_cert_file"]) != bool(params["tls_key_file"]):
        problems.append("tls_cert_file and tls_key_file go together")
    try:
        params["listen_address"] = hc.listen_address(params["listen_address"])
    except ValueError as exc:
        problems.append(str(exc))
    if problems:
        module.fail_json(msg="Nothing was changed: %s" % "; ".join(problems))
    rails = params["rails"] or hc.rails_from_fabric_map(params["fabric_map"], params["host"])
    rails = hc.with_roce_expectations(rails, params["roce_ecn_priority"], params["roce_trust"], params["roce_pfc_priority"])
    params["expected_state"] = hc.expected_state(
        params["host"], rails,
        params["interval"], params["command_interval"], os.path.join(params["textfile_dir"], "gpufabric_health.prom"),
        bonds=params["bonds"], uplinks=params["uplinks"], pcie=hc.pcie_from_topology(params["topology"]),
        ipsec=hc.ipsec_expected(params["host"], params["ipsec_members"], params["ipsec_gateways"],
                                params["ipsec_revoked"]),
        qos_interval=params["qos_interval"])
    desired = hc.desired_files(params)
    wanted_directories = hc.directories(params) + [(os.path.dirname(params["state_file"]), 0o755),
                                                   (os.path.dirname(params["web_config_file"]), 0o755)]
    missing = [(path, mode) for path, mode in wanted_directories if not os.path.isdir(path)]
    try:
        changes = ft.plan(desired, ft.read_all(desired))
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Nothing was changed: %s" % exc)
    result = {"changed": bool(changes or missing),
              "changes": [{"path": path, "action": "mkdir"} for path, _mode in missing] + ft.summary(changes)}
    if module._diff:
        result["diff"] = ft.diff_entries(changes)
    if not module.check_mode and (changes or missing):
        try:
            problems = ft.apply(changes, make_directories=missing)
        except OSError as exc:
            module.fail_json(msg="Writing the health files failed, the previous files were restored: %s" % exc, **result)
        if problems:
            module.fail_json(msg="Nothing was changed: %s" % "; ".join(problems), **result)
    changed_paths = {change["path"] for change in changes}
    result["service_actions"] = []
    if params["services"]:
        try:
            if params["unit_file"] in changed_paths:
                result["service_actions"] += su.daemon_reload(module.run_command, check_mode=module.check_mode)
            sampler_changed = bool(changed_paths - {params["node_exporter_defaults_file"], params["web_config_file"]})
            exporter_changed = bool(changed_paths & {params["node_exporter_defaults_file"], params["web_config_file"]})
            result["service_actions"] += su.ensure_running(module.run_command, NODE_EXPORTER, restart=exporter_changed,
                                                           check_mode=module.check_mode)
            result["service_actions"] += su.ensure_running(module.run_command, SAMPLER, restart=sampler_changed,
                                                           check_mode=module.check_mode)
        except su.UnitError as exc:
            module.fail_json(msg="The health files are in place, the services are not: %s" % exc, **result)
        result["changed"] = result["changed"] or bool(result["service_actions"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
