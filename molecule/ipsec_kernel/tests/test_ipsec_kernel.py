# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ipsec role on two VMs with Debian's kernel: kernel ESP, traffic on the SAs, and RoCE v2 in clear beside it.

The SAs are read from the kernel (`ip -s xfrm state`) and from strongSwan (`swanctl --list-sas`, parsed and judged by
the collection's own parse_list_sas and evaluate_sas, as swanctl_verify does). Soft-RoCE (rxe0, made by prepare.yml
on the data link that carries the ESP policy) then sends ib_send_bw traffic between the VMs while tcpdump captures
the link: RoCE v2 packets (UDP 4791) leave in clear, their InfiniBand transport header (BTH) readable and naming the
queue pair ib_send_bw reported, although the ESP policy covers both addresses (see that test for what goes
through the SA and what does not).
"""

from __future__ import annotations

import json
import re
import struct
import time

import pytest
import testinfra

from ansible_collections.gpufabric.core.plugins.module_utils.ibv_devinfo import parse_ibv_devinfo, roce_v2_gid_index
from ansible_collections.gpufabric.core.plugins.module_utils.swanctl import evaluate_sas, parse_list_sas

PEER = {"vm01": "vm02", "vm02": "vm01"}
ADDRESS = {"vm01": "10.200.0.1", "vm02": "10.200.0.2"}
LINK = "ens4"
ROCE_PORT = 4791
# `ip -s xfrm state`: one SA per "src A dst B" line; the AEAD line and the byte/packet counters follow.
_SA = re.compile(r"^src (\S+) dst (\S+)\n((?:[ \t].*\n?)*)", re.M)
# With -s the key length follows the key: "aead rfc4106(gcm(aes)) 0x... (288 bits) 128".
_AEAD = re.compile(r"^\s+aead (\S+) 0x([0-9a-f]+)(?: \(\d+ bits\))? (\d+)", re.M)
_CURRENT = re.compile(r"lifetime current:\s*\n\s*(\d+)\(bytes\), (\d+)\(packets\)")


def name_of(host):
    return host.backend.get_hostname()


def peer_of(host):
    return testinfra.get_host("ansible://" + PEER[name_of(host)], ansible_inventory=host.backend.ansible_inventory)


def xfrm_states(output):
    """The kernel's SAs in `ip -s xfrm state` output, keyed by (src, dst): algorithm, key length in bits, ICV bits,
    bytes, packets (no key)."""
    states = {}
    for src, dst, body in _SA.findall(output):
        aead = _AEAD.search(body)
        current = _CURRENT.search(body)
        states[(src, dst)] = {
            "proto_esp": "proto esp" in body,
            "aead": aead.group(1) if aead else None,
            "key_bits": len(aead.group(2)) * 4 if aead else 0,
            "icv_bits": int(aead.group(3)) if aead else 0,
            "bytes": int(current.group(1)) if current else None,
            "packets": int(current.group(2)) if current else None,
        }
    return states


def pair_states(host, output):
    """This host's outbound and inbound SA with its peer in `ip -s xfrm state` output (None where missing)."""
    me, peer = ADDRESS[name_of(host)], ADDRESS[PEER[name_of(host)]]
    states = xfrm_states(output)
    return states.get((me, peer)), states.get((peer, me))


def test_the_child_sa_is_in_the_kernel_with_aes_gcm(host):
    output = host.check_output("ip -s xfrm state")
    outbound, inbound = pair_states(host, output)
    for sa in (outbound, inbound):
        assert sa is not None, sorted(xfrm_states(output))
        # rfc4106(gcm(aes)) with a 288-bit key (AES-256 and the 32-bit salt) and a 128-bit ICV: aes256gcm16.
        assert sa["proto_esp"] and sa["aead"] == "rfc4106(gcm(aes))", sa
        assert (sa["key_bits"], sa["icv_bits"]) == (288, 128), sa
    # The kernel does ESP: no userspace data path, no TUN device.
    assert not host.file("/sys/class/net/ipsec0").exists
    assert "load = no" in host.file("/etc/strongswan.d/gpufabric.conf").content_string


def test_strongswan_reports_the_pair_installed(host):
    name = name_of(host)
    sas = parse_list_sas(host.check_output("swanctl --list-sas --noblock"))
    expected = [{"peer": PEER[name], "ike": "gf-" + PEER[name], "child": "gf-" + PEER[name],
                 "remote_host": ADDRESS[PEER[name]]}]
    result = evaluate_sas(sas, expected, encryption=["AES_GCM_16-256"])
    assert [r["ok"] for r in result] == [True], result
    child = [sa for sa in sas if sa["name"] == "gf-" + PEER[name]][0]["children"][0]
    assert (child["protocol"], child["mode"], child["udp_encap"]) == ("ESP", "TUNNEL", False), child


def test_traffic_over_the_data_link_is_counted_on_the_sas(host, capsys):
    name = name_of(host)
    before_out, before_in = pair_states(host, host.check_output("ip -s xfrm state"))
    ping = host.run("ping -c 5 -i 0.3 -W 5 -I %s %s" % (ADDRESS[name], ADDRESS[PEER[name]]))
    assert ping.rc == 0 and " 0% packet loss" in ping.stdout, ping.stdout + ping.stderr
    after = host.check_output("ip -s xfrm state")
    after_out, after_in = pair_states(host, after)
    # 5 echo requests out and 5 replies in, each at least 84 bytes of IP.
    assert after_out["packets"] - before_out["packets"] >= 5 and after_out["bytes"] - before_out["bytes"] >= 5 * 84
    assert after_in["packets"] - before_in["packets"] >= 5 and after_in["bytes"] - before_in["bytes"] >= 5 * 84
    # In the test log with the counters, the key material replaced.
    with capsys.disabled():
        print("\nip -s xfrm state on %s (keys replaced by 0x<key>):\n%s" % (
            name, re.sub(r"0x[0-9a-f]{16,}", "0x<key>", after)))


def _pcap_ipv4(data):
    """The IPv4 packets of a pcap file (Ethernet link type) written by tcpdump -w: (src, dst, proto, ip length,
    UDP destination port or None, UDP payload or b"")."""
    magic = struct.unpack("<I", data[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    offset, packets = 24, []
    while offset + 16 <= len(data):
        caplen = struct.unpack(endian + "I", data[offset + 8:offset + 12])[0]
        frame = data[offset + 16:offset + 16 + caplen]
        offset += 16 + caplen
        if len(frame) < 14 + 20 or frame[12:14] != b"\x08\x00":
            continue
        ip = frame[14:]
        ihl = (ip[0] & 0x0F) * 4
        src, dst = ".".join(str(b) for b in ip[12:16]), ".".join(str(b) for b in ip[16:20])
        proto, length = ip[9], struct.unpack("!H", ip[2:4])[0]
        dport, payload = None, b""
        if proto == 17 and len(ip) >= ihl + 8:
            dport, payload = struct.unpack("!H", ip[ihl + 2:ihl + 4])[0], ip[ihl + 8:]
        packets.append((src, dst, proto, length, dport, payload))
    return packets


def test_roce_v2_on_the_protected_link(host, capsys):
    """What RDMA does with the ESP policy of its link installed, on Soft-RoCE: the policy is no guarantee.

    Measured on Debian's 6.1 kernel: rxe sends its requests (the 1 KiB SENDs) through the kernel's IP output and
    so through the ESP SA, but its responder's acknowledgements leave in clear, RoCE v2 on UDP 4791 with a
    readable transport header. (A hardware RoCE NIC builds every packet itself and none passes XFRM; this lab has
    none.)
    """
    name = name_of(host)
    if name != "vm01":
        pytest.skip("one ib_send_bw run, vm01 to vm02")
    server = peer_of(host)
    port = parse_ibv_devinfo(host.check_output("ibv_devinfo -v -d rxe0"))["devices"][0]["ports"][0]
    gid_index = roce_v2_gid_index(port["gids"])
    assert port["state"] == "ACTIVE" and gid_index is not None, port
    # The ESP policy covering the two addresses is installed while RoCE runs.
    policies = host.check_output("ip xfrm policy")
    assert re.search(r"src %s/32 dst %s/32 \n\s+dir out" % (ADDRESS["vm01"], ADDRESS["vm02"]), policies), policies
    host.run("rm -f /tmp/roce.pcap")
    capture = ("timeout 120 tcpdump -i %s -nn -s 128 -U -w /tmp/roce.pcap 'udp port %d or esp' "
               ">/tmp/roce.tcpdump.log 2>&1 & echo $!" % (LINK, ROCE_PORT))
    tcpdump_pid = host.check_output("sh -c %s" % _quote(capture)).strip()
    server_gid = roce_v2_gid_index(parse_ibv_devinfo(server.check_output("ibv_devinfo -v -d rxe0"))
                                   ["devices"][0]["ports"][0]["gids"])
    server_command = ("timeout 120 ib_send_bw -d rxe0 -x %d -n 50 -s 1024 "
                      ">/tmp/ib_send_bw.server 2>&1 </dev/null & echo started" % server_gid)
    server.check_output("sh -c %s" % _quote(server_command))
    deadline = time.monotonic() + 60
    while True:
        client = host.run("timeout 90 ib_send_bw -d rxe0 -x %d -n 50 -s 1024 %s" % (gid_index, ADDRESS["vm02"]))
        if client.rc == 0 or time.monotonic() > deadline:
            break
        time.sleep(3)  # the server was not listening yet
    host.run("sleep 2; kill -INT %s; sleep 1" % tcpdump_pid)
    assert client.rc == 0, client.stdout + client.stderr
    local_qpn = re.search(r"local address:.*QPN (0x[0-9a-f]+)", client.stdout)
    assert local_qpn, client.stdout
    packets = _pcap_ipv4(host.file("/tmp/roce.pcap").content)
    summary = host.check_output("tcpdump -r /tmp/roce.pcap -nn 2>/dev/null | cut -d' ' -f2- | "
                                "sed -E 's/seq=0x[0-9a-f]+/seq=N/; s/\\.[0-9]+ >/ >/' | sort | uniq -c")
    clear = [p for p in packets if p[2] == 17 and p[4] == ROCE_PORT]
    sends_in_esp = [p for p in packets if p[2] == 50 and p[0] == ADDRESS["vm01"] and p[3] > 1024]
    with capsys.disabled():
        print("\nRoCE v2 with the ESP policy installed (tcpdump on vm01 %s):\n%s" % (LINK, summary))
    # RoCE v2 in clear on the protected link: acknowledgements from the server, their transport header (BTH)
    # readable: opcode RC ACKNOWLEDGE (0x11), destination QP the client's queue pair.
    assert len(clear) >= 50, summary
    assert {(p[0], p[1]) for p in clear} == {(ADDRESS["vm02"], ADDRESS["vm01"])}, summary
    assert {p[5][0] for p in clear} == {0x11}, summary
    assert {int.from_bytes(p[5][5:8], "big") for p in clear} == {int(local_qpn.group(1), 16)}, summary
    # The 1 KiB SENDs themselves went through the SA: Soft-RoCE is software in the kernel's IP stack.
    assert len(sends_in_esp) >= 50, summary


def _quote(text):
    return "'" + text.replace("'", "'\"'\"'") + "'"


def test_the_collection_names_the_roce_rail_the_policy_does_not_encrypt(host):
    # The role's verify module, run on the host as the role runs it: rxe0's address is inside this host's traffic
    # selector, so swanctl_verify must say that RoCE on it bypasses kernel IPsec (what the capture test shows).
    name = name_of(host)
    expected = [{"peer": PEER[name], "ike": "gf-" + PEER[name], "child": "gf-" + PEER[name],
                 "remote_host": ADDRESS[PEER[name]]}]
    args = json.dumps({"expected": expected, "traffic_selectors": [ADDRESS[name] + "/32"],
                       "fail_on_problems": False})
    result = host.ansible("gpufabric.core.swanctl_verify", args, check=False)
    assert result["rdma_devices"] == ["rxe0"], result
    assert [(entry["device"], entry["netdev"], entry["address"]) for entry in result["roce_unencrypted"]] == [
        ("rxe0", LINK, ADDRESS[name])], result
    assert result["roce_warnings"] == [
        "RoCE on rxe0 (%s, %s) bypasses kernel IPsec: not encrypted" % (LINK, ADDRESS[name])], result
