#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: path_mtu
short_description: Prove the path MTU to peers with DF pings, one rail at a time
version_added: "0.1.0"
description:
  - For each target, sends one DF ping whose packet is the configured MTU (C(ping -M do -s MTU-28), IPv6 MTU-48)
    from the rail's interface to the peer's address; it must be answered. A DF ping one byte larger must not
    cross (the host refuses it, its route's MTU being the configured one).
  - When the full-size ping is not answered, a binary search (at most O(max_probes) pings and O(budget_s) seconds
    per target) finds the largest packet that crosses, reported as the path MTU with a sentence naming the host
    pair, rail, interfaces and both ends' configured MTUs.
  - A silent drop (an L2 hop with a smaller MTU sends no ICMP) and a router's "Frag needed" / "Packet too big"
    both count as not crossing.
  - Changes nothing; runs in check mode too.
options:
  targets:
    description:
      - "One dict per rail and peer: C(client) and C(server) (host names for the messages), C(rail), C(interface)
        (this host's), C(address) (the peer's on that rail), C(mtu) (this interface's configured MTU),
        C(peer_mtu) and C(peer_interface) (the peer's, for the message)."
    type: list
    elements: dict
    required: true
  ping:
    description: The ping program (iputils).
    type: str
    default: ping
  wait_s:
    description: Seconds each ping waits for its reply.
    type: int
    default: 1
  max_probes:
    description: Pings per target at most.
    type: int
    default: 18
  budget_s:
    description: Seconds of searching per target at most.
    type: float
    default: 30
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Probes in check mode as well; nothing is changed either way.
  diff_mode:
    support: none
    details: Nothing changes, so there is nothing to show.
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Prove a 9000-byte path to the peer on rail 0
  gpufabric.core.path_mtu:
    targets:
      - {client: node1, server: node2, rail: "0", interface: ens1f0, address: 10.0.0.2, mtu: 9000, peer_mtu: 9000}
"""

RETURN = r"""
results:
  description: One per target, the target's keys with the outcome.
  type: list
  elements: dict
  returned: always
  sample:
    - {client: node1, server: node2, rail: "0", interface: ens1f0, mtu: 9000, status: mismatch, path_mtu: 1500,
       probes: 15, seconds: 7.2, message: "node1 -> node2 rail 0 (ens1f0 -> ens1f0): path MTU 1500, ..."}
"""

import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpufabric.core.plugins.module_utils.verify.path_mtu import (
    MTU_RANGE,
    OVER_WAIT_S,
    check_path,
    family_of,
    message,
    parse_ping,
    peer_mtu_problem,
    ping_argv,
)

REQUIRED = ("client", "server", "rail", "interface", "address", "mtu")


def main():
    module = AnsibleModule(
        argument_spec={
            "targets": {"type": "list", "elements": "dict", "required": True},
            "ping": {"type": "str", "default": "ping"},
            "wait_s": {"type": "int", "default": 1},
            "max_probes": {"type": "int", "default": 18},
            "budget_s": {"type": "float", "default": 30},
        },
        supports_check_mode=True,
    )
    params = module.params
    for index, target in enumerate(params["targets"]):
        missing = [key for key in REQUIRED if target.get(key) in (None, "")]
        if missing:
            module.fail_json(msg="targets[%d] lacks %s" % (index, ", ".join(missing)))
        if not isinstance(target["mtu"], int) or not MTU_RANGE[0] <= target["mtu"] <= MTU_RANGE[1]:
            module.fail_json(msg="targets[%d].mtu: %r is outside %d-%d" % ((index, target["mtu"]) + MTU_RANGE))
    ping = shutil.which(params["ping"])
    if ping is None:
        module.fail_json(msg="%s is not installed (Debian: iputils-ping)" % params["ping"])
    results = []
    for target in params["targets"]:
        family = family_of(target["address"])

        def probe(size, over=False, target=target):
            rc, out, err = module.run_command(ping_argv(ping, target["address"], size, target["interface"],
                                                        min(params["wait_s"], OVER_WAIT_S) if over else params["wait_s"]))
            return parse_ping(rc, out, err)

        outcome = check_path(probe, target["mtu"], family, params["max_probes"], params["budget_s"])
        entry = dict(target, **outcome)
        entry["problem"] = peer_mtu_problem(target)
        entry["message"] = message(target, outcome) if outcome["status"] != "ok" else None
        results.append(entry)
    module.exit_json(changed=False, results=results)


if __name__ == "__main__":
    main()
