# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ipsec role's files as pure functions: render them, plan the change, say what must be reloaded.

gpufabric.core.ipsec_config writes what these functions return as one file_transaction; the RoCE report is shared
with gpufabric.core.swanctl_verify.
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import KEY_EXCHANGE, quote_value

HEADER = "# Managed by gpufabric.core.ipsec_config: local edits are replaced on the next run.\n"

# What a change of each kind of file needs: the data path plugin is only read when charon starts; the others are
# loaded into the running daemon by swanctl --load-all.
RESTART = "restart"
LOAD = "load"

# A traffic selector may carry a protocol/port suffix (10.0.0.0/24[tcp/22]): only the network counts here.
_SELECTOR_SUFFIX = re.compile(r"\[[^\]]*\]\Z")


# What swanctl --list-algs calls each ML-KEM key exchange.
PQ_ALGORITHM_NAMES = {"mlkem512": "ML_KEM_512", "mlkem768": "ML_KEM_768", "mlkem1024": "ML_KEM_1024"}


def effective_ike_proposals(proposals, pq_kex, algorithms):
    """The IKE proposals with the ML-KEM additional key exchange (RFC 9370) appended, and a problem or None.

    algorithms: the output of swanctl --list-algs, None where it could not be read (check mode on a host without
    strongSwan yet: nothing is refused then). auto uses ML-KEM-768 when strongSwan offers it and keeps the classical
    proposals after it as the fallback for peers without ML-KEM.
    """
    proposals = list(proposals)
    if pq_kex == "none":
        return proposals, None
    if pq_kex == "auto":
        if algorithms is not None and PQ_ALGORITHM_NAMES["mlkem768"] in algorithms:
            return ["%s-ke1_mlkem768" % p for p in proposals] + proposals, None
        return proposals, None
    if algorithms is not None and PQ_ALGORITHM_NAMES[pq_kex] not in algorithms:
        name = PQ_ALGORITHM_NAMES[pq_kex]
        return proposals, (
            "ipsec_pq_kex is %s but swanctl --list-algs lists no %s: a strongSwan 6 build with its ml plugin "
            "(or an openssl plugin built with ML-KEM) is needed; Debian 13's 6.0.1 packages have neither. Or set "
            "ipsec_pq_kex to none." % (pq_kex, name))
    return ["%s-ke1_%s" % (p, pq_kex) for p in proposals], None


def effective_esp_proposals(proposals, pq_kex, algorithms):
    """The ESP proposals with the same ML-KEM additional key exchange as the IKE ones, on CHILD SA rekeys.

    Only a proposal with a classical key exchange (PFS) gets it: ML-KEM is added on top, never alone. The first CHILD
    SA takes its keys from the IKE SA (hybrid already); a rekey then runs the classical and the ML-KEM exchange. The
    problem (ML-KEM missing) is effective_ike_proposals', which refuses first.
    """
    with_ke = [p for p in proposals if any(token in KEY_EXCHANGE for token in p.split("-"))]
    if pq_kex == "none" or not with_ke:
        return list(proposals)
    effective, problem = effective_ike_proposals(with_ke, pq_kex, algorithms)
    if problem or effective == with_ke:
        return list(proposals)
    added = [p for p in effective if p not in with_ke]
    if pq_kex == "auto":
        return added + list(proposals)
    return added + [p for p in proposals if p not in with_ke]


def value(item):
    """A swanctl.conf value, a list joined with commas; refuses what a quoted string cannot hold."""
    if isinstance(item, (list, tuple)):
        for element in item:
            quote_value(element)
        return quote_value(",".join(str(element) for element in item))
    return quote_value(item)


def render_charon_conf(kernel_libipsec):
    """strongswan.d settings of charon: the ESP data path."""
    return HEADER + (
        "# Loaded after the package's strongswan.d/charon/*.conf, so these values win.\n"
        "charon {\n"
        "    plugins {\n"
        "        kernel-libipsec {\n"
        "            # yes: userspace ESP over a TUN device (ipsec0), only for kernels without ESP (containers, labs);\n"
        "            # no: the kernel's XFRM data path, the only one fit for production traffic.\n"
        "            load = %s\n"
        "        }\n"
        "    }\n"
        "}\n" % ("yes" if kernel_libipsec else "no"))


def render_swanctl_conf(mesh, settings):
    """swanctl.conf of one host from the swanctl_mesh result and the role's settings.

    settings: mesh_group, ike_proposals (the effective ones), esp_proposals, ike_rekey_time, child_rekey_time,
    dpd_delay, mode, hw_offload, revocation_policy, conn_prefix, certificate (file name under x509/),
    ca_certificate (file name under x509ca/).
    """
    lines = [HEADER.rstrip("\n"),
             "# IKEv2 full mesh of %s: one connection per peer; selectors, initiator side and bypass policies are"
             % value(settings["mesh_group"]),
             "# computed by gpufabric.core.swanctl_mesh. Every value is quoted and refused if it holds a newline,",
             "# a quote or a backslash: no value can end its line and add a setting.",
             "connections {"]
    for conn in mesh.get("connections", []):
        note = ", certificate revoked: trap only, every attempt refused" if conn.get("revoked") else ""
        start_action = conn["start_action"]
        lines += [
            "    %s {" % conn["name"],
            "        # peer %s (%s%s)" % (value(conn["peer"]), conn["kind"], note),
            "        version = 2",
            "        local_addrs = %s" % value(conn["local_addrs"]),
            "        remote_addrs = %s" % value(conn["remote_addrs"]),
            "        proposals = %s" % value(settings["ike_proposals"]),
            "        rekey_time = %s" % value(settings["ike_rekey_time"]),
            "        dpd_delay = %s" % value(settings["dpd_delay"]),
            "        mobike = no",
            "        local {",
            "            auth = pubkey",
            "            certs = %s" % value(settings["certificate"]),
            "            id = %s" % value(conn["local_id"]),
            "        }",
            "        remote {",
            "            auth = pubkey",
            "            id = %s" % value(conn["remote_id"]),
            "            cacerts = %s" % value(settings["ca_certificate"]),
            "            revocation = %s" % value(settings["revocation_policy"]),
            "        }",
            "        children {",
            "            %s {" % conn["name"],
            "                local_ts = %s" % value(conn["local_ts"]),
            "                remote_ts = %s" % value(conn["remote_ts"]),
            "                mode = %s" % value(settings["mode"]),
            "                esp_proposals = %s" % value(settings["esp_proposals"]),
            "                rekey_time = %s" % value(settings["child_rekey_time"]),
            "                hw_offload = %s" % value(settings["hw_offload"]),
            "                start_action = %s" % value(start_action),
            "                dpd_action = %s" % ("restart" if start_action == "trap|start" else "trap"),
            "                close_action = trap",
            "            }",
            "        }",
            "    }",
        ]
    shunts = mesh.get("shunts") or []
    if shunts:
        lines += [
            "    # Pass policies: traffic that never enters a tunnel (the controller's SSH session, "
            "ipsec_bypass_networks).",
            "    %s-bypass {" % settings["conn_prefix"],
            "        remote_addrs = 127.0.0.1",
            "        children {",
        ]
        for shunt in shunts:
            lines += [
                "            %s {" % shunt["name"],
                "                local_ts = %s" % value(shunt["local_ts"]),
                "                remote_ts = %s" % value(shunt["remote_ts"]),
                "                mode = pass",
                "                start_action = trap",
                "            }",
            ]
        lines += ["        }", "    }"]
    lines.append("}")
    return "\n".join(lines) + "\n"


def file_entries(desired):
    """file_transaction entries of the desired files ({path: {"content", "mode", "reload"}}), in path order: every
    file is root's, so a file of another owner is a change (it is rewritten), as a change of mode is."""
    return [{"path": path, "content": desired[path]["content"], "mode": desired[path]["mode"], "owner": (0, 0)}
            for path in sorted(desired)]


def reloads(desired, changes):
    """What the file_transaction changes need from strongSwan: {"restart": bool, "load": bool}.

    Only a changed setting of a RESTART file (the data path plugin, read when charon starts) restarts it; a comment
    is not a setting, so a new header does not drop every SA. Any change loads the swanctl configuration (a restart
    loads it too, but --load-all --clear is still needed for the CRL cache).
    """
    restart = any(desired[change["path"]]["reload"] == RESTART
                  and _settings_of(change["after"]) != _settings_of(change["before"]) for change in changes)
    return {"restart": restart, "load": bool(changes)}


def _settings_of(content):
    """The lines of a strongSwan settings file that charon reads (comments and blank lines left out)."""
    if content is None:
        return None
    return [line.strip() for line in content.splitlines() if line.strip() and not line.strip().startswith("#")]


def _selector_networks(selectors):
    networks = []
    for selector in selectors or []:
        text = _SELECTOR_SUFFIX.sub("", str(selector).strip())
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            continue
    return networks


def gid_address(gid):
    """The IP address a RoCE GID stands for: IPv4-mapped GIDs (::ffff:a.b.c.d) give the IPv4 address."""
    try:
        address = ipaddress.ip_address(gid)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def roce_bypass(devices, selectors):
    """The RDMA rails whose addresses the IPsec policies cover but which RoCE puts on the wire in clear.

    devices: sysfs.rdma_devices(); selectors: this host's traffic selectors (the mesh's local_ts). RDMA NICs and
    rxe build their UDP 4791 packets without the kernel's xfrm stack, so an ESP policy over an address does not
    encrypt the RoCE traffic from it. One entry per device, netdev and address (the GID table lists an address once
    per RoCE version), sorted.
    """
    networks = _selector_networks(selectors)
    found = {}
    for device in sorted(devices):
        for port_number in sorted(devices[device].get("ports", {})):
            port = devices[device]["ports"][port_number]
            if (port.get("link_layer") or "Ethernet") != "Ethernet":
                continue  # InfiniBand link layer: not IP, no xfrm policy applies
            for gid in port.get("gids", []):
                address = gid_address(gid.get("gid") or "")
                netdev = gid.get("ndev")
                if address is None or not netdev or address.is_link_local:
                    continue
                covered = [str(n) for n in networks if n.version == address.version and address in n]
                if not covered:
                    continue
                key = (device, netdev, str(address))
                entry = found.setdefault(key, {
                    "device": device, "port": port_number, "netdev": netdev, "address": str(address),
                    "selectors": covered, "gid_indexes": []})
                entry["gid_indexes"].append(gid.get("index"))
    return [found[key] for key in sorted(found)]


def roce_warning(entry):
    return "RoCE on %s (%s, %s) bypasses kernel IPsec: not encrypted" % (
        entry["device"], entry["netdev"], entry["address"])
