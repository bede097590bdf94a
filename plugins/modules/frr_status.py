#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: frr_status
short_description: Read BGP sessions, BFD peers and ECMP routes from FRRouting and say what is wrong
version_added: "0.1.0"
description:
  - Runs C(vtysh -c 'show bgp summary json'), C(vtysh -c 'show bfd peers json') and, for each of O(routes),
    C(show ip route PREFIX json) (C(show ipv6 route) for IPv6 prefixes), and returns each session's state, uptime
    and prefixes received, each BFD peer's state and detection time, and each route's next hops in the kernel.
  - Compares them with O(uplinks) and returns C(problems), one sentence per session that is not Established, BFD
    peer that is not up, or route with fewer next hops than uplinks. The module itself does not fail on problems;
    the caller decides (the C(gpufabric.core.routing) role retries, then fails naming each).
  - Reads only; never changes anything.
author:
  - gpufabric.core contributors (@gpufabric)
options:
  uplinks:
    description:
      - The sessions expected, each with C(interface), C(peer) (the leaf's address; empty for unnumbered
        sessions, found by interface), C(leaf) (a name for messages) and C(bfd) (whether a BFD session is expected).
    type: list
    elements: dict
    default: []
  routes:
    description: Prefixes whose route must be installed with at least O(min_nexthops) next hops.
    type: list
    elements: str
    default: []
  min_nexthops:
    description: Next hops each route needs; default one per uplink.
    type: int
  vtysh:
    description: The vtysh binary.
    type: path
    default: /usr/bin/vtysh
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reads only, in check mode too.
  diff_mode:
    support: none
    details: Changes nothing, so there is nothing to show.

  platform:
    support: full
    platforms: posix"""

EXAMPLES = r"""
- name: Read BGP, BFD and the ECMP default route
  gpufabric.core.frr_status:
    uplinks:
      - {interface: ens1f0np0, peer: 10.1.0.0, leaf: leaf-a1}
      - {interface: ens1f1np1, leaf: leaf-a2}
    routes: [0.0.0.0/0]
  register: routing_status

- name: Fail naming every session, BFD peer or route that is not right
  ansible.builtin.assert:
    that: routing_status.problems | length == 0
    fail_msg: "{{ routing_status.problems | join('; ') }}"
"""

RETURN = r"""
sessions:
  description: BGP sessions from C(show bgp summary json), address families merged.
  returned: always
  type: list
  elements: dict
  sample:
    - {peer: eth1, interface: eth1, remote_as: 65102, state: Established, established: true, uptime_ms: 15000,
       prefixes_received: {ipv4Unicast: 1, ipv6Unicast: 0}, prefixes_received_total: 1, description: leaf2,
       hostname: leaf2, local_as: 65001}
bfd_peers:
  description: BFD sessions from C(show bfd peers json), with C(detection_time_ms) (remote multiplier times the
    agreed receive interval).
  returned: always
  type: list
  elements: dict
  sample:
    - {peer: 10.240.201.2, local: 10.240.201.3, interface: eth0, status: up, up: true, uptime_s: 64,
       detect_multiplier: 3, receive_interval_ms: 100, transmit_interval_ms: 100, detection_time_ms: 300}
routes:
  description: Each route asked for, with protocol, installed and its next hops in the FIB (ip, interface).
  returned: always
  type: list
  elements: dict
problems:
  description: One sentence per session, BFD peer or route that is not as expected; empty when all is well.
  returned: always
  type: list
  elements: str
  sample: ["BFD session to eth1 (leaf leaf2) is down (control detection time expired)"]
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.frr_status import (
    FrrStatusError,
    parse_bfd_peers,
    parse_bgp_summary,
    parse_route,
    status_problems,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "uplinks": {"type": "list", "elements": "dict", "default": []},
            "routes": {"type": "list", "elements": "str", "default": []},
            "min_nexthops": {"type": "int"},
            "vtysh": {"type": "path", "default": "/usr/bin/vtysh"},
        },
        supports_check_mode=True,
    )
    vtysh = module.params["vtysh"]

    def show(command):
        rc, out, err = module.run_command([vtysh, "-c", command])
        if rc != 0:
            module.fail_json(msg="vtysh -c '%s' failed (rc %d): %s" % (command, rc, (err or out).strip()))
        return out

    try:
        sessions = parse_bgp_summary(show("show bgp summary json"))
        bfd_peers = parse_bfd_peers(show("show bfd peers json"))
        routes = []
        for prefix in module.params["routes"]:
            family = "ipv6" if ":" in prefix else "ip"
            routes.append(parse_route(show("show %s route %s json" % (family, prefix)), prefix))
    except FrrStatusError as exc:
        module.fail_json(msg=str(exc))
    uplinks = []
    for index, uplink in enumerate(module.params["uplinks"]):
        if not uplink.get("interface") and not uplink.get("peer"):
            module.fail_json(msg="uplinks[%d]: needs interface or peer" % index)
        uplinks.append({"interface": uplink.get("interface"), "peer": uplink.get("peer") or None,
                        "leaf": uplink.get("leaf"), "bfd": uplink.get("bfd", True)})
    problems = status_problems(sessions, bfd_peers, routes, uplinks, module.params["min_nexthops"])
    module.exit_json(changed=False, sessions=sessions, bfd_peers=bfd_peers, routes=routes, problems=problems)


if __name__ == "__main__":
    main()
