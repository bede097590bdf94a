# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RoCE GID rule, one home: which RoCE v2 GID index a port's traffic uses, read from the topology facts.

NCCL is given this index (nccl/config.py, NCCL_IB_GID_INDEX) and the bandwidth sweep tests on it
(verify/bandwidth.py), so both always pick the same GID. Private to the collection; standard library only.
"""

from __future__ import annotations


def port_gid_index(port):
    """The RoCE v2 GID index NCCL should use on one port, and why: (index or None, reason or None).

    NCCL_IB_GID_INDEX unset, NCCL takes the first RoCE v2 GID of the address family it wants, which is the
    untagged address when the port's netdev also carries a VLAN. The RoCE traffic of a lossless fabric rides
    the VLAN (its PCP is the priority PFC pauses), so an IPv4 GID on a VLAN wins over the untagged one; among
    VLANs with IPv4 addresses there is no telling which one the fabric uses, so none is chosen. Facts without
    the per-address table (roce_v2_gids, older captures) keep their roce_v2_gid_index.
    """
    entries = port.get("roce_v2_gids")
    if not entries:
        return port.get("roce_v2_gid_index"), None
    ipv4 = [entry for entry in entries if entry.get("family") == "ipv4"]
    on_vlans = [entry for entry in ipv4 if entry.get("vlan")]
    vlan_netdevs = sorted(set(entry.get("netdev") for entry in on_vlans))
    if len(vlan_netdevs) > 1:
        return None, "IPv4 RoCE v2 GIDs on several VLANs (%s): which one carries RDMA is not in the facts" % (
            ", ".join("%s on %s" % (entry["index"], entry.get("netdev")) for entry in on_vlans))
    if on_vlans:
        # One VLAN: its first IPv4 GID (a VLAN with two addresses has two; the first is the primary address).
        return min(entry["index"] for entry in on_vlans), None
    if ipv4:
        return min(entry["index"] for entry in ipv4), None
    return min(entry["index"] for entry in entries), None
