# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build the swanctl connections of one host of a full IPsec mesh (plus optional gateways).

The role renders swanctl.conf from what build_mesh returns and verifies the SAs it lists as expected, so the
decisions that matter for safety live here, unit-tested: which traffic selectors each host protects, which side
of each pair initiates, and which bypass (pass) policies keep the controller's SSH session out of any tunnel.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import (
    claim_conflicts, identity_problem, name_problem)

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_-]")
# The prefix of every connection name (gf-<peer>): the ipsec role writes them, the health sampler expects them.
CONNECTION_PREFIX = "gf"


class MeshError(ValueError):
    """The mesh described by the inventory cannot be built safely; the message says what to change."""


def _network(value, what):
    try:
        return ipaddress.ip_network(str(value).strip(), strict=False)
    except ValueError:
        raise MeshError("%s: %r is not an IP address or CIDR network" % (what, value))


def _address(value, what):
    try:
        return ipaddress.ip_address(str(value).strip())
    except ValueError:
        raise MeshError("%s: %r is not an IP address" % (what, value))


def _host_network(address):
    return ipaddress.ip_network("%s/%d" % (address, address.max_prefixlen))


def connection_name(prefix, peer):
    """swanctl section names cannot hold dots or spaces: map an inventory name onto a safe one."""
    return "%s-%s" % (prefix, _UNSAFE_NAME.sub("_", peer))


def node_selectors(node, vlan_subnets):
    """Return the networks (sorted, unique) whose traffic this node sends only through tunnels.

    They are the node's explicit selectors, its IKE address (unless protect_address is false) and every one of its
    addresses that lies inside one of vlan_subnets, as a host route.
    """
    what = "host %s" % node["name"]
    selectors = [_network(s, what + " ipsec_traffic_selectors") for s in node.get("selectors") or []]
    if node.get("protect_address", True):
        selectors.append(_host_network(_address(node["address"], what + " ipsec_address")))
    subnets = [_network(s, "ipsec_vlan_subnets") for s in vlan_subnets or []]
    for raw in node.get("addresses") or []:
        address = _address(raw, what + " addresses")
        if any(address.version == net.version and address in net for net in subnets):
            selectors.append(_host_network(address))
    unique = sorted(set(selectors), key=lambda n: (n.version, n.network_address, n.prefixlen))
    if not unique:
        raise MeshError(
            "%s has no traffic to protect: ipsec_protect_address is false, ipsec_traffic_selectors is empty and "
            "none of its addresses lies in ipsec_vlan_subnets %s" % (what, list(vlan_subnets or [])))
    return unique


def _overlaps(left, right):
    return [(a, b) for a in left for b in right if a.version == b.version and a.overlaps(b)]


def build_mesh(local_name, nodes, vlan_subnets=None, gateways=None, revoked=None, controller_addresses=None,
               bypass_networks=None, ssh_port=22, prefix=CONNECTION_PREFIX):
    """Return the connections, bypass shunts and expected SAs of host local_name.

    nodes: every host of the mesh (local_name among them), dicts with name, address (IKE endpoint), id (IKE identity,
    a SAN of its certificate), addresses (all its addresses), selectors (explicit networks), protect_address, and
    optionally cert_names and cert_addresses (the other names and addresses of its certificate). No two members or
    gateways may claim one name, identity or address: one could authenticate as the other.
    gateways: dicts with name, address, id and networks (the subnets behind the gateway); this host always initiates.
    revoked: names of hosts whose certificates are revoked: their connection keeps only a trap policy (their
    traffic never leaves in clear, every attempt is refused by the CRL) and verification expects no SA with them.
    controller_addresses: addresses the controller connects from; if a tunnel would capture one of them, a pass
    policy for the SSH port keeps the controller's session in clear (SSH is encrypted) so the play cannot cut it.
    bypass_networks: networks that never enter a tunnel (all protocols), for monitoring or out-of-band paths.
    """
    revoked = set(revoked or [])
    gateway_list = list(gateways or [])
    for entry in list(nodes) + gateway_list:
        if not isinstance(entry, dict) or not entry.get("name"):
            raise MeshError("every mesh member and gateway needs a name, got %r" % (entry,))
        if not entry.get("address"):
            raise MeshError("host %s lacks address: set ipsec_address for it in the inventory (or gather its "
                            "facts in this play)" % entry["name"])
    # Every member's name and identity before any connection: one bad peer fails every host's mesh, so that no host
    # writes it into its swanctl.conf while the peer's own run fails.
    for entry in list(nodes) + gateway_list:
        is_gateway = any(entry is g for g in gateway_list)
        what = ("gateway %r ipsec_gateways" if is_gateway else "host %r") % (entry["name"],)
        problem = name_problem(entry["name"])
        if problem:
            raise MeshError("%s name: %s" % (what, problem))
        if not entry.get("id"):
            raise MeshError("%s has no IKE identity (ipsec_identity)" % entry["name"])
        problem = identity_problem(entry.get("id"), allow_dn=is_gateway)
        if problem:
            raise MeshError("%s %s: %s" % (what, "id" if is_gateway else "ipsec_identity", problem))
    by_name = {}
    for node in nodes:
        if node["name"] in by_name:
            raise MeshError("host %s appears twice in the mesh" % node["name"])
        by_name[node["name"]] = node
    if local_name not in by_name:
        raise MeshError("host %s is not a member of the mesh %s" % (local_name, sorted(by_name)))

    addresses = {}
    names = {}
    selectors = {}
    for node in list(nodes) + list(gateways or []):
        address = _address(node.get("address"), "%s ipsec_address" % node["name"])
        if address in addresses:
            raise MeshError("hosts %s and %s share the IKE address %s: give each its own ipsec_address" % (
                addresses[address], node["name"], address))
        addresses[address] = node["name"]
        conn = connection_name(prefix, node["name"])
        if conn in names:
            raise MeshError("hosts %s and %s map onto the same connection name %s" % (names[conn], node["name"], conn))
        names[conn] = node["name"]
    conflicts = claim_conflicts(nodes, gateway_list)
    if conflicts:
        raise MeshError("; ".join(conflict[2] for conflict in conflicts))
    for node in nodes:
        selectors[node["name"]] = node_selectors(node, vlan_subnets)
    for gateway in gateways or []:
        nets = [_network(n, "gateway %s networks" % gateway["name"]) for n in gateway.get("networks") or []]
        if not nets:
            raise MeshError("gateway %s lists no networks behind it" % gateway["name"])
        selectors[gateway["name"]] = nets

    local = by_name[local_name]
    local_ts = selectors[local_name]
    peers = [n for n in nodes if n["name"] != local_name] + list(gateways or [])
    gateway_names = {g["name"] for g in gateways or []}
    for index, peer in enumerate(peers):
        clash = _overlaps(local_ts, selectors[peer["name"]])
        if clash:
            raise MeshError("traffic selectors of %s and %s overlap (%s and %s): a host cannot reach its own "
                            "addresses through a tunnel; give each host distinct selectors" % (
                                local_name, peer["name"], clash[0][0], clash[0][1]))
        for other in peers[index + 1:]:
            clash = _overlaps(selectors[peer["name"]], selectors[other["name"]])
            if clash:
                raise MeshError("traffic selectors of %s and %s overlap (%s and %s): traffic to them could go "
                                "into either tunnel" % (peer["name"], other["name"], clash[0][0], clash[0][1]))

    connections = []
    expected = []
    for peer in sorted(peers, key=lambda p: p["name"]):
        is_gateway = peer["name"] in gateway_names
        is_revoked = peer["name"] in revoked
        initiator = is_gateway or local_name < peer["name"]
        # trap|start on one side only: both sides starting at once would build duplicate SAs for every pair.
        start_action = "trap|start" if initiator and not is_revoked else "trap"
        name = connection_name(prefix, peer["name"])
        connections.append({
            "name": name,
            "peer": peer["name"],
            "kind": "gateway" if is_gateway else "host",
            "revoked": is_revoked,
            "local_addrs": [str(_address(local["address"], local_name))],
            "remote_addrs": [str(_address(peer["address"], peer["name"]))],
            "local_id": str(local["id"]),
            "remote_id": str(peer["id"]),
            "local_ts": [str(n) for n in local_ts],
            "remote_ts": [str(n) for n in selectors[peer["name"]]],
            "start_action": start_action,
            "initiator": initiator,
        })
        expected.append({
            "peer": peer["name"],
            "ike": name,
            "child": name,
            "remote_host": str(_address(peer["address"], peer["name"])),
            "initiator": initiator,
            "absent": is_revoked,
        })

    remote_nets = [n for conn in connections for n in (_network(t, conn["peer"]) for t in conn["remote_ts"])]
    shunts = []
    for raw in controller_addresses or []:
        controller = _host_network(_address(raw, "controller address"))
        if _overlaps([controller], remote_nets):
            shunts.append({
                "name": "%s-bypass-ssh-%s" % (prefix, _UNSAFE_NAME.sub("_", str(controller.network_address))),
                "local_ts": ["%s[tcp/%d]" % (n, int(ssh_port)) for n in local_ts if n.version == controller.version],
                "remote_ts": [str(controller)],
            })
    for raw in bypass_networks or []:
        network = _network(raw, "ipsec_bypass_networks")
        if _overlaps([network], remote_nets):
            shunts.append({
                "name": "%s-bypass-%s" % (prefix, _UNSAFE_NAME.sub("_", str(network))),
                "local_ts": [str(n) for n in local_ts if n.version == network.version],
                "remote_ts": [str(network)],
            })
    shunts = [s for s in shunts if s["local_ts"]]
    return {
        "local": local_name,
        "local_ts": [str(n) for n in local_ts],
        "connections": connections,
        "shunts": shunts,
        "expected": expected,
    }
