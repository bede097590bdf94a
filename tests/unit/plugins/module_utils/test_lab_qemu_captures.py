# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The parsers on outputs captured from real kernels: tests/fixtures/lab_qemu, from the QEMU VM lab.

scripts/vmlab-capture.sh made them on two VMs with Debian 12's generic kernel, each bonded (802.3ad) over its two
links to the other, a VLAN on the bond, then Soft-RoCE (rxe0) on the bond and ib_write_bw between the VMs. The
values asserted are those the kernel printed; the captures are unedited, except the SA keys in `ip xfrm state`,
replaced by 0x<key> when captured (its source line says so).
"""

from __future__ import annotations

import re

import pytest
from fixture_data import fixture_names, read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.proc_bonding import parse_bonding
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibstat import parse_ibstat
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.ibv_devinfo import parse_ibv_devinfo, roce_v2_gid_index
from ansible_collections.gpufabric.core.plugins.module_utils.verify import bandwidth
from ansible_collections.gpufabric.core.plugins.module_utils.nccl.config import derive as nccl_derive
from ansible_collections.gpufabric.core.plugins.module_utils.nccl.config import port_gid_index
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.perftest import parse_perftest
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.swanctl import parse_list_sas
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.topology import build_topology

FOLDER = "lab_qemu"
# Captured after the ipsec role's converge, verify and ib_send_bw run in molecule/ipsec_kernel.
ROLE_XFRM_STATE = "lab-qemu-ip-xfrm-state-counters-role.txt"
ROLE_XFRM_POLICY = "lab-qemu-ip-xfrm-policy-role.txt"
ROLE_LIST_SAS = "lab-qemu-swanctl-list-sas-role-kernel-esp.txt"
ROLE_ROCE_TCPDUMP = "lab-qemu-tcpdump-roce-v2-under-esp-policy.txt"
LACP = {"vm01": "lab-qemu-bonding-bond0-lacp-vm01.txt", "vm02": "lab-qemu-bonding-bond0-lacp-vm02.txt"}
PULLED = "lab-qemu-bonding-bond0-cable-pulled-vm01.txt"
# Each VM's bond system MAC (systemd's MAC policy gives a new bond its own address, not its first member's).
SYSTEM_MAC = {"vm01": "c6:11:1d:fa:f7:0b", "vm02": "46:78:9d:e4:ec:78"}
PEER = {"vm01": "vm02", "vm02": "vm01"}
MEMBER_MAC = {"vm01": {"ens4": "52:54:00:67:01:04", "ens5": "52:54:00:67:01:05"},
              "vm02": {"ens4": "52:54:00:67:02:04", "ens5": "52:54:00:67:02:05"}}


# The rdma_kernel scenario's captures: rxe0 on the data link ens4 itself, ens4 with an untagged address and the
# VLAN ens4.100 with another, so that the GID table holds both.
VLAN_RAILS = ("lab-qemu-ibv_devinfo-v-rxe0-vlan.txt", "lab-qemu-sysfs-gids-rxe0-vlan.txt",
              "lab-qemu-sysfs-net-uevent-vlan.txt", "lab-qemu-modprobe-unknown-parameter-ib_ipoib.txt",
              "lab-qemu-modinfo-p-ib_core.txt", "lab-qemu-ib_write_bw-rxe0-vlan-client.txt")


# The rdma_kernel scenario after the rdma role and the module reload: ib_core's parameters as the kernel holds them,
# and rail 0 of the verify role's perftest sweep (the command lines bandwidth_client/bandwidth_server built).
SYS_MODULE_IB_CORE = "lab-qemu-sys-module-ib_core-parameters.txt"
ROLE_SWEEP = {"client": "lab-qemu-ib_write_bw-rxe0-bidir-module-client.txt",
              "server": "lab-qemu-ib_write_bw-rxe0-bidir-module-server.txt"}


def _read(name):
    return read_fixture("%s/%s" % (FOLDER, name))


def _partner_oper_keys(text):
    """The partner's oper key of each member, from the 'details partner lacp pdu' blocks (not parsed)."""
    return [int(key) for key in re.findall(r"details partner lacp pdu:\n(?:[ \t]+.*\n)*?[ \t]+oper key: (\d+)", text)]


def test_every_capture_is_tested():
    tested = set(LACP.values()) | {PULLED, "lab-qemu-ibv_devinfo-rxe0.txt", "lab-qemu-ibv_devinfo-v-rxe0.txt",
                                   "lab-qemu-ibstat-rxe0.txt", "lab-qemu-rdma-link-rxe0.txt",
                                   "lab-qemu-sysfs-gids-rxe0.txt", "lab-qemu-ib_write_bw-rxe0-client.txt",
                                   "lab-qemu-ib_write_bw-rxe0-server.txt", "lab-qemu-swanctl-list-sas-kernel-esp.txt",
                                   "lab-qemu-ip-xfrm-state-kernel-esp.txt", "lab-qemu-ip-xfrm-policy-kernel-esp.txt",
                                   ROLE_XFRM_STATE, ROLE_XFRM_POLICY, ROLE_LIST_SAS, ROLE_ROCE_TCPDUMP}
    tested |= set(VLAN_RAILS) | set(ROLE_SWEEP.values()) | {SYS_MODULE_IB_CORE}
    tested.add("lab-qemu-sysfs-parent-rxe.txt")  # test_soft_roce.py
    assert sorted(tested) == fixture_names(FOLDER)


@pytest.mark.parametrize("node", sorted(LACP))
def test_lacp_partner_negotiated_on_both_members_of_both_vms(node):
    text = _read(LACP[node])
    bond = parse_bonding(text)
    assert bond["driver_version"] == "v6.1.0-57-amd64"
    assert (bond["mode"], bond["lacp_rate"], bond["xmit_hash_policy"], bond["mii_polling_ms"]) == (
        "802.3ad", "fast", "layer3+4", 100)
    assert bond["system_mac"] == SYSTEM_MAC[node]
    aggregator = bond["active_aggregator"]
    # The partner is the other VM's bond: its system MAC and key.
    assert aggregator["partner_mac"] == SYSTEM_MAC[PEER[node]]
    assert aggregator["number_of_ports"] == 2
    assert aggregator["actor_key"] == aggregator["partner_key"] == 29
    assert [(s["name"], s["permanent_hw_addr"]) for s in bond["slaves"]] == sorted(MEMBER_MAC[node].items())
    for slave in bond["slaves"]:
        assert slave["mii_status"] == "up" and slave["speed_mbps"] == 100000 and slave["duplex"] == "full"
        assert slave["aggregator_id"] == aggregator["aggregator_id"]
        assert slave["partner_mac"] == SYSTEM_MAC[PEER[node]]
        # 63: activity, timeout (fast), aggregation, synchronised, collecting, distributing.
        assert slave["actor_port_state"] == slave["partner_port_state"] == 63
    assert _partner_oper_keys(text) == [29, 29]
    assert bond["healthy"] is True and bond["problems"] == []


def test_both_sides_agree_on_each_other():
    vm01, vm02 = (parse_bonding(_read(LACP[node])) for node in ("vm01", "vm02"))
    assert vm01["active_aggregator"]["partner_mac"] == vm02["system_mac"]
    assert vm02["active_aggregator"]["partner_mac"] == vm01["system_mac"]


def test_pulled_cable_member_down_and_named():
    bond = parse_bonding(_read(PULLED))
    state = {s["name"]: (s["mii_status"], s["link_failure_count"], s["actor_port_state"]) for s in bond["slaves"]}
    # ens5's cable pulled at both ends: MII down, one failure counted, no longer collecting/distributing
    # (port state 15); ens4 still carries the aggregator alone.
    assert state == {"ens4": ("up", 0, 63), "ens5": ("down", 1, 15)}
    assert bond["active_aggregator"]["number_of_ports"] == 1
    assert bond["active_aggregator"]["partner_mac"] == SYSTEM_MAC["vm02"]
    assert bond["healthy"] is False
    assert any("ens5" in problem for problem in bond["problems"]), bond["problems"]
    assert not any("ens4" in problem for problem in bond["problems"]), bond["problems"]


def _rxe_port(name):
    devices = parse_ibv_devinfo(_read(name))["devices"]
    assert [device["name"] for device in devices] == ["rxe0"]
    assert len(devices[0]["ports"]) == 1
    return devices[0], devices[0]["ports"][0]


def test_ibv_devinfo_rxe0_active_ethernet():
    device, port = _rxe_port("lab-qemu-ibv_devinfo-rxe0.txt")
    assert device["phys_port_cnt"] == 1 and device["fw_ver"] == "0.0.0"
    # PORT_ACTIVE (4), as the parsers normalise it.
    assert (port["state"], port["link_layer"], port["max_mtu"], port["active_mtu"]) == (
        "ACTIVE", "Ethernet", 4096, 4096)
    assert port["gids"] == []  # printed with -v only


def test_ibv_devinfo_v_rxe0_gids_all_roce_v2_vlan_address_at_index_1():
    _device, port = _rxe_port("lab-qemu-ibv_devinfo-v-rxe0.txt")
    # PORT_ACTIVE (4) and LINK_UP (5), as the parsers normalise them.
    assert port["state"] == "ACTIVE" and port["physical_state"] == "LinkUp"
    # rxe reports 4X 25 Gbps whatever the netdev's speed.
    assert (port["active_width"], port["rate_gbps"]) == ("4X", 100.0)
    assert [(gid["index"], gid["gid"], gid["type"]) for gid in port["gids"]] == [
        (0, "fe80::c411:1dff:fefa:f70b", "RoCE v2"),
        (1, "::ffff:10.100.0.1", "RoCE v2"),
        (2, "fe80::c411:1dff:fefa:f70b", "RoCE v2"),
    ]
    # The VLAN's IPv4 address, the GID that ib_write_bw -x 1 used.
    assert roce_v2_gid_index(port["gids"]) == 1


def test_sysfs_gid_table_matches_ibv_devinfo_and_names_the_vlan():
    entries = dict(line.split(":", 1) for line in _read("lab-qemu-sysfs-gids-rxe0.txt").splitlines() if line)
    assert entries["gids/1"] == "0000:0000:0000:0000:0000:ffff:0a64:0001"  # ::ffff:10.100.0.1
    assert entries["gid_attrs/ndevs/1"] == "bond0.100" and entries["gid_attrs/types/1"] == "RoCE v2"
    assert entries["gid_attrs/ndevs/0"] == "bond0"


def test_ibstat_rxe0():
    cas = parse_ibstat(_read("lab-qemu-ibstat-rxe0.txt"))["cas"]
    assert [(ca["name"], ca["number_of_ports"], ca["node_guid"]) for ca in cas] == [("rxe0", 1, "0xc4111dfffefaf70b")]
    port = cas[0]["ports"][0]
    assert (port["state"], port["physical_state"], port["rate_gbps"], port["link_layer"]) == (
        "ACTIVE", "LinkUp", 100.0, "Ethernet")


def test_rdma_link_rxe0_on_the_bond():
    # No parser reads `rdma link` yet: the line itself, as iproute2 prints it for a Soft-RoCE device.
    assert _read("lab-qemu-rdma-link-rxe0.txt").split() == [
        "link", "rxe0/1", "state", "ACTIVE", "physical_state", "LINK_UP", "netdev", "bond0"]


@pytest.mark.parametrize("side", ["client", "server"])
def test_ib_write_bw_over_rxe0_between_the_vms(side):
    run = parse_perftest(_read("lab-qemu-ib_write_bw-rxe0-%s.txt" % side))
    assert run["side"] == side and run["error"] is None
    assert (run["test"], run["kind"], run["device"], run["link_layer"], run["gid_index"]) == (
        "RDMA_Write BW", "bw", "rxe0", "Ethernet", 1)
    assert run["connection_type"] == "RC" and run["mtu"] == 4096
    assert [(row["bytes"], row["iterations"]) for row in run["rows"]] == [(65536, 200)]
    # Emulated RDMA: a measured figure above zero, not a performance number.
    assert run["bw_avg_gbps_max"] == pytest.approx(0.030459)
    assert run["rows"][0]["bw_peak_gbps"] == pytest.approx(0.053270)


def test_swanctl_list_sas_kernel_esp_child_sa_installed_with_traffic():
    sas = parse_list_sas(_read("lab-qemu-swanctl-list-sas-kernel-esp.txt"))
    assert [(sa["name"], sa["state"], sa["version"], sa["initiator"]) for sa in sas] == [
        ("lab", "ESTABLISHED", 2, True)]
    ike = sas[0]
    assert (ike["local"]["host"], ike["remote"]["host"]) == ("10.100.0.1", "10.100.0.2")
    assert ike["algorithms"] == ["AES_GCM_16-256", "PRF_HMAC_SHA2_256", "ECP_256"]
    [child] = ike["children"]
    assert (child["name"], child["state"], child["mode"], child["udp_encap"], child["protocol"]) == (
        "vlan100", "INSTALLED", "TRANSPORT", False, "ESP")
    assert child["algorithms"] == ["AES_GCM_16-256"]
    # The 5 pings of the capture, counted on the kernel SA in both directions.
    assert (child["packets_in"], child["packets_out"], child["bytes_in"], child["bytes_out"]) == (5, 5, 320, 320)
    assert (child["local_ts"], child["remote_ts"]) == (["10.100.0.1/32"], ["10.100.0.2/32"])


def test_ip_xfrm_state_kernel_aead_matches_the_child_sa():
    text = _read("lab-qemu-ip-xfrm-state-kernel-esp.txt")
    # The kernel holds both SAs with the AEAD (AES-GCM, 128-bit ICV), SPIs as swanctl lists them.
    assert re.findall(r"proto esp spi 0x([0-9a-f]+) reqid 1 mode transport", text) == ["c0162bd4", "ceb68be2"]
    assert text.count("aead rfc4106(gcm(aes)) 0x<key> 128") == 2
    [child] = parse_list_sas(_read("lab-qemu-swanctl-list-sas-kernel-esp.txt"))[0]["children"]
    assert (child["spi_out"], child["spi_in"]) == ("c0162bd4", "ceb68be2")


def test_ip_xfrm_policy_protects_only_the_vlan_addresses():
    text = _read("lab-qemu-ip-xfrm-policy-kernel-esp.txt")
    assert "src 10.100.0.1/32 dst 10.100.0.2/32 \n\tdir out" in text
    assert "src 10.100.0.2/32 dst 10.100.0.1/32 \n\tdir in" in text
    assert text.count("proto esp") == 2 and text.count("mode transport") == 2


def _xfrm_counters(text):
    """(src, dst) -> (spi, aead, key bits, icv bits, bytes, packets) of `ip -s xfrm state` (no parser reads it)."""
    states = {}
    for src, dst, body in re.findall(r"^src (\S+) dst (\S+)\n((?:[ \t].*\n?)*)", text, re.M):
        spi = re.search(r"proto esp spi 0x([0-9a-f]+)", body).group(1)
        aead = re.search(r"aead (\S+) 0x<key> \((\d+) bits\) (\d+)", body)
        current = re.search(r"lifetime current:\n\s+(\d+)\(bytes\), (\d+)\(packets\)", body)
        states[(src, dst)] = (spi, aead.group(1), int(aead.group(2)), int(aead.group(3)),
                              int(current.group(1)), int(current.group(2)))
    return states


def test_role_kernel_sas_count_the_traffic_strongswan_reports():
    states = _xfrm_counters(_read(ROLE_XFRM_STATE))
    [ike] = parse_list_sas(_read(ROLE_LIST_SAS))
    assert (ike["name"], ike["state"], ike["local"]["id"], ike["remote"]["id"]) == ("gf-vm02", "ESTABLISHED", "vm01", "vm02")
    assert ike["algorithms"] == ["AES_GCM_16-256", "PRF_HMAC_SHA2_384", "ECP_384"]
    [child] = ike["children"]
    assert (child["state"], child["mode"], child["protocol"], child["udp_encap"], child["algorithms"]) == (
        "INSTALLED", "TUNNEL", "ESP", False, ["AES_GCM_16-256"])
    # Kernel ESP: AES-256-GCM (288-bit key with its salt, 128-bit ICV), the same SPIs and counters as strongSwan's.
    assert states == {
        ("10.200.0.1", "10.200.0.2"): (child["spi_out"], "rfc4106(gcm(aes))", 288, 128, child["bytes_out"],
                                       child["packets_out"]),
        ("10.200.0.2", "10.200.0.1"): (child["spi_in"], "rfc4106(gcm(aes))", 288, 128, child["bytes_in"],
                                       child["packets_in"]),
    }
    assert (child["bytes_out"], child["packets_out"], child["bytes_in"], child["packets_in"]) == (218518, 259, 14050, 250)


def test_role_xfrm_policy_covers_the_pair_in_tunnel_mode():
    text = _read(ROLE_XFRM_POLICY)
    for direction, src, dst in (("out", "10.200.0.1", "10.200.0.2"), ("in", "10.200.0.2", "10.200.0.1"),
                                ("fwd", "10.200.0.2", "10.200.0.1")):
        assert re.search(r"src %s/32 dst %s/32 \n\tdir %s .*\n\ttmpl src %s dst %s\n\t\tproto esp .*mode tunnel"
                         % (src, dst, direction, src, dst), text), direction


def test_roce_v2_on_the_protected_link_partly_in_clear():
    """Soft-RoCE under the pair's ESP policy: SENDs through the SA, the responder's acknowledgements in clear."""
    lines = _read(ROLE_ROCE_TCPDUMP).splitlines()
    clear = [line for line in lines if re.fullmatch(r"[0-9:.]+ IP 10\.200\.0\.2\.\d+ > 10\.200\.0\.1\.4791: UDP, length 20", line)]
    esp = [re.fullmatch(r"[0-9:.]+ IP (\S+) > (\S+): ESP\(spi=0x([0-9a-f]+),seq=0x[0-9a-f]+\), length (\d+)", line)
           for line in lines if "ESP(" in line]
    assert len(clear) + len(esp) == len(lines) and all(esp)
    # 50 RoCE v2 packets of 20 bytes (BTH, AETH, ICRC: an acknowledgement) from the server, unencrypted.
    assert len(clear) == 50
    # The 50 SENDs of 1 KiB, encrypted on the SA the policy names (its SPI in the xfrm state capture).
    big = [m for m in esp if int(m.group(4)) > 1024]
    assert len(big) == 50 and {(m.group(1), m.group(2), m.group(3)) for m in big} == {
        ("10.200.0.1", "10.200.0.2", "ca5d0617")}


def _listing(name, prefix):
    """A `grep -H . FILES` capture (file:value per line, comments skipped) as sysfs keys under prefix.

    A file of several lines (uevent) gives one line each: they are joined back, as collect_sysfs reads the file.
    """
    entries = {}
    for line in _read(name).splitlines():
        if line and not line.startswith("#"):
            path, value = line.split(":", 1)
            key = prefix + path
            entries[key] = entries[key] + "\n" + value if key in entries else value
    return entries


def _vlan_rail_topology(port_state="PORT_ACTIVE (4)", rail_interfaces=None):
    """build_topology on the captures of vm01's rail 0, as topology_facts reads them live.

    The sysfs part is the two grep listings, rekeyed under class/infiniband/rxe0/ports/1/ and class/net/ (the
    keys collect_sysfs gives those files); ibv_devinfo -v adds the port state and link layer. port_state edits the
    capture's (a cable pulled: PORT_DOWN (1)).
    """
    sysfs = _listing("lab-qemu-sysfs-gids-rxe0-vlan.txt", "class/infiniband/rxe0/ports/1/")
    sysfs.update(_listing("lab-qemu-sysfs-net-uevent-vlan.txt", "class/net/"))
    devinfo = _read("lab-qemu-ibv_devinfo-v-rxe0-vlan.txt")
    assert "PORT_ACTIVE (4)" in devinfo
    sources = {"reasons": {}, "ibv_devinfo": devinfo.replace("PORT_ACTIVE (4)", port_state), "sysfs": sysfs}
    return build_topology(sources, rail_interfaces=rail_interfaces)


def test_ibv_devinfo_v_rxe0_on_the_link_lists_the_untagged_and_the_vlan_gids():
    _device, port = _rxe_port("lab-qemu-ibv_devinfo-v-rxe0-vlan.txt")
    assert (port["state"], port["link_layer"]) == ("ACTIVE", "Ethernet")
    assert [(gid["index"], gid["gid"], gid["type"]) for gid in port["gids"]] == [
        (0, "fe80::5054:ff:fe67:104", "RoCE v2"),
        (1, "::ffff:192.168.40.1", "RoCE v2"),
        (2, "::ffff:10.100.0.1", "RoCE v2"),
        (3, "fe80::5054:ff:fe67:104", "RoCE v2"),
    ]
    # The first IPv4 GID is the untagged address: what NCCL takes when NCCL_IB_GID_INDEX is unset.
    assert roce_v2_gid_index(port["gids"]) == 1


def test_sysfs_gid_table_names_the_vlan_device_of_each_gid():
    entries = _listing("lab-qemu-sysfs-gids-rxe0-vlan.txt", "")
    assert [entries["gid_attrs/ndevs/%d" % index] for index in range(4)] == ["ens4", "ens4", "ens4.100", "ens4.100"]
    assert entries["gids/2"] == "0000:0000:0000:0000:0000:ffff:0a64:0001"  # ::ffff:10.100.0.1
    assert {entries["gid_attrs/types/%d" % index] for index in range(4)} == {"RoCE v2"}


def test_topology_reports_the_roce_v2_gid_of_each_address_and_vlan():
    topology = _vlan_rail_topology()
    [device] = topology["rdma"]["devices"]
    [port] = device["ports"]
    assert (device["name"], port["link_layer"], port["state"], port["netdev"]) == ("rxe0", "Ethernet", "ACTIVE", "ens4")
    assert port["roce_v2_gids"] == [
        {"index": 0, "address": "fe80::5054:ff:fe67:104", "family": "ipv6", "netdev": "ens4", "vlan": False},
        {"index": 1, "address": "192.168.40.1", "family": "ipv4", "netdev": "ens4", "vlan": False},
        {"index": 2, "address": "10.100.0.1", "family": "ipv4", "netdev": "ens4.100", "vlan": True},
        {"index": 3, "address": "fe80::5054:ff:fe67:104", "family": "ipv6", "netdev": "ens4.100", "vlan": True},
    ]


def test_nccl_gid_choice_takes_the_vlan_gid_not_the_untagged_one():
    [device] = _vlan_rail_topology()["rdma"]["devices"]
    # The untagged address comes first in the table (index 1); the RoCE traffic rides the VLAN (index 2).
    assert port_gid_index(device["ports"][0]) == (2, None)


def test_nccl_gid_choice_refuses_to_guess_between_two_vlans():
    [device] = _vlan_rail_topology()["rdma"]["devices"]
    port = dict(device["ports"][0])
    # Edited from the capture: a second VLAN (ens4.200, 10.200.0.1) on the same link, as its GID would be listed.
    port["roce_v2_gids"] = port["roce_v2_gids"] + [
        {"index": 4, "address": "10.200.0.1", "family": "ipv4", "netdev": "ens4.200", "vlan": True}]
    index, reason = port_gid_index(port)
    assert index is None and "2 on ens4.100" in reason and "4 on ens4.200" in reason


def test_nccl_gid_choice_without_a_vlan_is_the_first_ipv4_gid():
    topology = _vlan_rail_topology()
    port = dict(topology["rdma"]["devices"][0]["ports"][0])
    # Edited from the capture: the VLAN's entries dropped, as on a link without a VLAN.
    port["roce_v2_gids"] = [entry for entry in port["roce_v2_gids"] if not entry["vlan"]]
    assert port_gid_index(port) == (1, None)
    # Facts of older captures, without the per-address table, keep their single index.
    assert port_gid_index({"roce_v2_gid_index": 3}) == (3, None)


def test_unknown_module_parameter_is_loaded_and_only_logged_by_the_kernel():
    lines = _read("lab-qemu-modprobe-unknown-parameter-ib_ipoib.txt").splitlines()
    assert lines[1] == "rc=0"
    assert re.fullmatch(r"\[\s*\d+\.\d+\] ib_ipoib: unknown parameter 'disable_raw_qp_encap' ignored", lines[2])


def test_modinfo_lists_the_parameters_ib_core_accepts():
    names = [line.split(":", 1)[0] for line in _read("lab-qemu-modinfo-p-ib_core.txt").splitlines()]
    assert names == ["send_queue_size", "recv_queue_size", "netns_mode", "force_mr"]


def test_ib_write_bw_over_the_vlan_gid_with_an_unmeasurable_clock_is_flagged():
    run = parse_perftest(_read("lab-qemu-ib_write_bw-rxe0-vlan-client.txt"))
    assert run["side"] == "client" and run["error"] is None
    assert (run["device"], run["link_layer"], run["gid_index"], run["mtu"]) == ("rxe0", "Ethernet", 2, 1024)
    assert [(row["bytes"], row["iterations"]) for row in run["rows"]] == [(65536, 200)]
    # Zeros, with perftest's reason before its title: the cycle counter gave no usable clock on a loaded host.
    assert run["bw_avg_gbps_max"] == 0.0
    assert run["warnings"] == ["Correlation coefficient r^2: 0.798944 < 0.9"]
    assert run["clock_unmeasured"] is True


@pytest.mark.parametrize("side", ["client", "server"])
def test_a_measured_run_is_not_flagged_as_unmeasured(side):
    assert parse_perftest(_read("lab-qemu-ib_write_bw-rxe0-%s.txt" % side))["clock_unmeasured"] is False


# The paths for hosts without GPUs (the rdma_kernel scenario's VMs, storage nodes): rails from the RDMA devices
# for perftest, NCCL_IB_HCA from every ACTIVE port, on the same real captures of vm01's rail 0.

def test_gpu_less_host_has_its_rdma_devices_as_rails_which_gpus_consumers_refuse():
    topology = _vlan_rail_topology()
    assert topology["rail_source"] == "rdma_devices"
    [rail] = topology["rails"]
    assert (rail["rail"], rail["gpu"], rail["device"], rail["port"], rail["netdev"], rail["state"]) == (
        0, None, "rxe0", 1, "ens4", "ACTIVE")
    reason = bandwidth.rdma_unavailable_reason(topology)
    assert "RDMA devices of a host without GPUs" in reason and "rails_from=rdma_devices" in reason
    assert bandwidth.rdma_unavailable_reason(topology, "rdma_devices") is None


def test_inventory_rails_name_the_netdev_and_every_consumer_takes_them():
    # gpufabric_rail_interfaces naming the link: the rail is the RDMA port on it, accepted by the GPU paths too.
    topology = _vlan_rail_topology(rail_interfaces=["ens4"])
    assert topology["rail_source"] == "inventory"
    assert [(rail["device"], rail["port"], rail["netdev"]) for rail in topology["rails"]] == [("rxe0", 1, "ens4")]
    assert bandwidth.rdma_unavailable_reason(topology) is None
    assert nccl_derive(topology, {"default_interface": "ens3"})["variables"]["NCCL_IB_HCA"] == "=rxe0:1"
    # Naming a netdev without an RDMA port (the management NIC): a rail of the map, nothing for perftest or NCCL.
    plain = _vlan_rail_topology(rail_interfaces=["ens3"])
    assert [(rail["device"], rail["netdev"]) for rail in plain["rails"]] == [(None, "ens3")]
    assert "names no RDMA netdev" in bandwidth.rdma_unavailable_reason(plain)
    assert "no rail has an ACTIVE RDMA port" in nccl_derive(plain, {"default_interface": "ens3"})["findings"][-1][
        "message"]


def test_perftest_rails_from_rdma_devices_run_on_the_vlan_gid():
    topology = _vlan_rail_topology()
    [test] = bandwidth.plan_rail_tests(topology, topology, 18515, rails_from="rdma_devices")
    assert (test["rail"], test["device"], test["peer_device"], test["ib_port"]) == (0, "rxe0", "rxe0", 1)
    assert (test["netdev"], test["link_layer"], test["port"]) == ("ens4", "Ethernet", 18515)
    # The VLAN's GID (2), as NCCL is given, not the untagged address's (1) that roce_v2_gid_index names.
    assert test["gid_index"] == 2 and topology["rdma"]["devices"][0]["ports"][0]["roce_v2_gid_index"] == 1
    argv = bandwidth.perftest_argv("ib_write_bw", test, 5, server="192.168.40.2")
    assert argv[argv.index("-x") + 1] == "2" and argv[argv.index("-d") + 1] == "rxe0"
    with pytest.raises(bandwidth.BandwidthError, match="rails 1 are not present on both hosts"):
        bandwidth.plan_rail_tests(topology, topology, 18515, rails=[1], rails_from="rdma_devices")


def test_perftest_rails_from_rdma_devices_skip_a_device_without_an_active_port():
    topology = _vlan_rail_topology(port_state="PORT_DOWN (1)")  # as with the cable pulled
    assert (topology["rails"], topology["rail_source"]) == ([], "none")
    assert bandwidth.rdma_unavailable_reason(topology, "rdma_devices").startswith("no RDMA rails in the topology facts")
    with pytest.raises(bandwidth.BandwidthError, match="rails_from must be one of gpus, rdma_devices"):
        bandwidth.sweep_rails(topology, "nics")


def test_nccl_without_gpu_topology_refuses_gpu_affine_and_lists_every_active_port_with_all_active():
    topology = _vlan_rail_topology()
    refused = nccl_derive(topology, {"default_interface": "ens3"})
    assert "NCCL_IB_HCA" not in refused["variables"]
    assert [finding["severity"] for finding in refused["findings"]] == ["error"]
    assert "no GPU topology" in refused["findings"][0]["message"]
    derived = nccl_derive(topology, {"default_interface": "ens3", "hca_selection": "all_active"})
    assert derived["hca"] == ["rxe0:1"] and derived["link_layer"] == "Ethernet"
    assert derived["variables"]["NCCL_IB_HCA"] == "=rxe0:1"
    assert derived["variables"]["NCCL_IB_GID_INDEX"] == "2"
    # No GPU, no GPU-NIC distance: the GPUDirect level is left to NCCL.
    assert "NCCL_NET_GDR_LEVEL" not in derived["variables"]
    assert derived["findings"] == []


def test_nccl_all_active_without_an_active_port_is_an_error():
    topology = _vlan_rail_topology(port_state="PORT_DOWN (1)")  # as with the cable pulled
    derived = nccl_derive(topology, {"default_interface": "ens3", "hca_selection": "all_active"})
    assert "NCCL_IB_HCA" not in derived["variables"]
    assert "the host has no rails" in derived["findings"][0]["message"]


def test_ib_core_parameters_in_effect_are_the_options_the_role_wrote():
    values = dict(line.split(":", 1) for line in _read(SYS_MODULE_IB_CORE).splitlines() if not line.startswith("#"))
    # The role's options (molecule/rdma_kernel), not the defaults 128 and 512; netns_mode untouched.
    assert values == {"netns_mode": "Y", "recv_queue_size": "1024", "send_queue_size": "256"}
    # Every one is a parameter modinfo lists, which is what the role checks before writing.
    accepted = [line.split(":", 1)[0] for line in _read("lab-qemu-modinfo-p-ib_core.txt").splitlines()
                if not line.startswith("#")]
    assert set(values) <= set(accepted)


@pytest.mark.parametrize("side", sorted(ROLE_SWEEP))
def test_ib_write_bw_of_the_verify_sweep_ran_bidirectional_over_the_vlan_gid(side):
    run = parse_perftest(_read(ROLE_SWEEP[side]))
    assert run["side"] == side and run["error"] is None and run["warnings"] == []
    assert (run["device"], run["link_layer"], run["gid_index"], run["bidirectional"]) == ("rxe0", "Ethernet", 2, True)
    [row] = run["rows"]
    assert row["bytes"] == 65536
    # About 0.03 Gbit/s under emulation: functional, above the scenario's 0.001 gate, far below any real rail.
    assert 0.001 < run["bw_avg_gbps_max"] < 1


def test_the_sweep_s_traffic_left_from_the_vlan_address():
    text = _read(ROLE_SWEEP["client"])
    # perftest prints the GIDs of both ends: ::ffff:10.100.0.1 here and 10.100.0.2 there, the VLAN ens4.100's.
    gids = re.findall(r"^ GID: ([0-9:]+)$", text, re.MULTILINE)
    assert gids[:2] == ["00:00:00:00:00:00:00:00:00:00:255:255:10:100:00:01",
                        "00:00:00:00:00:00:00:00:00:00:255:255:10:100:00:02"]
