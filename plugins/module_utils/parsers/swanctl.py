# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers and checks for strongSwan's swanctl command line tool.

parse_list_sas reads the default (human) output of `swanctl --list-sas`, the form people paste into tickets and
the one swanctl prints on every strongSwan release (5.9 and 6.x, whose IKE and CHILD SA lines add the RFC 9370
additional key exchanges as `KE1_ML_KEM_768`); evaluate_sas compares what it found with the IKE and CHILD SAs a
configuration expects and names each peer that is not as it should be; summarize_initiate reads the log that
`swanctl --initiate` streams and keeps the lines that say why an SA was refused.
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError, clean_lines, int_or_none

LIST_SAS = "swanctl --list-sas"
INITIATE = "swanctl --initiate"

# "gf-node2: #1, ESTABLISHED, IKEv2, 2fba2f9956ec43b9_i* 34ccdc0dc5f2b239_r"
_IKE_HEADER = re.compile(
    r"^(?P<name>\S(?:.*\S)?): #(?P<uniqueid>\d+), (?P<state>[A-Z_]+), IKEv(?P<version>\d), "
    r"(?P<ispi>[0-9a-fA-F]+)_i(?P<i_star>\*?) (?P<rspi>[0-9a-fA-F]+)_r(?P<r_star>\*?)$"
)
# "  local  'node1' @ 10.0.0.1[4500] [10.3.0.1]"
_ENDPOINT = re.compile(r"^(?P<side>local|remote) +'(?P<id>.*)' @ (?P<host>\S+)\[(?P<port>\d+)\](?P<rest>.*)$")
# "  gf-node2: #3, reqid 1, INSTALLED, TUNNEL-in-UDP, ESP:AES_GCM_16-256/ECP_384"
_CHILD_HEADER = re.compile(
    r"^(?P<name>\S(?:.*\S)?): #(?P<uniqueid>\d+), reqid (?P<reqid>\d+), (?P<state>[A-Z_]+), "
    r"(?P<mode>[A-Z_]+)(?P<encap>-in-UDP)?, (?P<protocol>[A-Z]+):(?P<algorithms>\S*)$"
)
# "    in  f03cf4b5,    252 bytes,     3 packets,     2s ago"
_TRAFFIC = re.compile(
    r"^(?P<direction>in|out) +(?P<spi>[0-9a-fA-F]+)(?:/(?P<cpi>[0-9a-fA-F]+))?"
    r"(?: \((?P<mark>[^)]*)\))?, +(?P<bytes>\d+) bytes, +(?P<packets>\d+) packets(?:, +(?P<use>\d+)s ago)?$"
)
_SECONDS = re.compile(r"(established|installed|rekeying in|reauth in|expires in) (\d+)s")
_TS = re.compile(r"^(?P<side>local|remote) +(?P<ts>.+)$")
# Key exchange transforms in the algorithm lists: the classical group ("ECP_384", "MODP_3072", "CURVE_25519",
# "ECP_256_BP") and, from strongSwan 6.0, each additional key exchange of RFC 9370 as KE<n>_<name>
# ("KE1_ML_KEM_768"). A post-quantum one may also stand alone in the first slot ("ML_KEM_768").
_CLASSICAL_KE = re.compile(r"(?:MODP_\d+(?:_\d+)?|ECP_\d+(?:_BP)?|CURVE_(?:25519|448))\Z")
_POST_QUANTUM_KE = re.compile(r"(?:ML_KEM_\d+|KYBER_\w+|FRODO_\w+|BIKE_\w+|HQC_\w+|NTRU_\w+|NEWHOPE_\w+)\Z")
_ADDITIONAL_KE = re.compile(r"KE(?P<number>[1-7])_(?P<name>\w+)\Z")

# swanctl proposal keywords and the names `swanctl --list-sas` prints for the negotiated algorithm.
_ENCRYPTION_NAMES = {
    "aes128gcm16": "AES_GCM_16-128",
    "aes192gcm16": "AES_GCM_16-192",
    "aes256gcm16": "AES_GCM_16-256",
    "aes128gcm": "AES_GCM_16-128",
    "aes256gcm": "AES_GCM_16-256",
    "aes128gcm12": "AES_GCM_12-128",
    "aes256gcm12": "AES_GCM_12-256",
    "aes128gcm8": "AES_GCM_8-128",
    "aes256gcm8": "AES_GCM_8-256",
    "aes128": "AES_CBC-128",
    "aes192": "AES_CBC-192",
    "aes256": "AES_CBC-256",
    "aes128ctr": "AES_CTR-128",
    "aes256ctr": "AES_CTR-256",
    "aes128ccm16": "AES_CCM_16-128",
    "aes256ccm16": "AES_CCM_16-256",
    "chacha20poly1305": "CHACHA20_POLY1305-256",
}

# Log lines of `swanctl --initiate` that say why an SA was not established, most telling first.
_FAILURE_PATTERNS = (
    re.compile(r"certificate was revoked.*"),
    re.compile(r"no trusted \S+ public key found for .*"),
    re.compile(r"no issuer certificate found for .*"),
    re.compile(r"issuer is .*"),
    re.compile(r"constraint check failed.*"),
    re.compile(r"signature validation failed.*"),
    re.compile(r"received AUTHENTICATION_FAILED notify error"),
    re.compile(r"received (NO_PROPOSAL_CHOSEN|TS_UNACCEPTABLE|INVALID_KE_PAYLOAD|INTERNAL_ADDRESS_FAILURE) notify error"),
    re.compile(r"no acceptable proposal found"),
    # strongSwan 6 without an implementation of a negotiated method, e.g. ML-KEM without the ml plugin
    re.compile(r"negotiated key exchange method \S+ not supported"),
    re.compile(r"no matching peer config found"),
    re.compile(r"peer not authenticated by .*"),
    re.compile(r"certificate expired.*|certificate not valid.*"),
    re.compile(r"giving up after \d+ retransmits"),
    re.compile(r"not establishing CHILD_SA .* due to existing duplicate .*"),
    re.compile(r"initiate failed: .*"),
)


def key_exchanges(algorithms):
    """The key exchanges in one SA's algorithm list, in negotiation order, without the KE<n>_ prefix.

    ["AES_GCM_16-256", "PRF_HMAC_SHA2_384", "ECP_384", "KE1_ML_KEM_768"] gives ["ECP_384", "ML_KEM_768"].
    """
    found = []
    for algorithm in algorithms:
        additional = _ADDITIONAL_KE.match(algorithm)
        if additional:
            found.append(additional.group("name"))
        elif _CLASSICAL_KE.match(algorithm) or _POST_QUANTUM_KE.match(algorithm):
            found.append(algorithm)
    return found


def is_post_quantum(names):
    """Whether any of these key exchanges (key_exchanges() names) is a post-quantum KEM such as ML_KEM_768."""
    return any(_POST_QUANTUM_KE.match(name) for name in names)


def _timers(line, target, keys):
    for label, seconds in _SECONDS.findall(line):
        target[keys[label]] = int(seconds)


def parse_list_sas(text):
    """Parse the default output of `swanctl --list-sas` into a list of IKE SAs.

    Each IKE SA is a dict: name, uniqueid, state, version, initiator (bool: this host initiated it), local and
    remote ({id, host, port}), algorithms (list, empty while CONNECTING), key_exchanges (the classical group and
    the additional key exchanges, ["ECP_384", "ML_KEM_768"]), post_quantum (bool: one of them is a post-quantum
    KEM), established_seconds, rekey_seconds, children (list of CHILD SAs: name, uniqueid, reqid, state, mode,
    udp_encap, protocol, algorithms, encryption, key_exchanges, post_quantum, bytes_in, packets_in, bytes_out,
    packets_out, local_ts, remote_ts). An empty output means no SAs.

    A CHILD SA's key_exchanges are its own (none for the CHILD SA created with the IKE SA, a PFS group after a
    rekey); its keys derive from the IKE SA's, so it is post_quantum when its own or its IKE SA's key exchanges
    include a post-quantum KEM.
    """
    if isinstance(text, str) and not text.strip():
        return []
    lines = clean_lines(text, LIST_SAS)
    sas = []
    ike = None
    child = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if indent == 0:
            match = _IKE_HEADER.match(body)
            if not match:
                raise ParseError(LIST_SAS, "line %d is not an IKE SA header: %r" % (number, body))
            ike = {
                "name": match.group("name"),
                "uniqueid": int(match.group("uniqueid")),
                "state": match.group("state"),
                "version": int(match.group("version")),
                "initiator": match.group("i_star") == "*",
                "initiator_spi": match.group("ispi"),
                "responder_spi": match.group("rspi"),
                "local": None,
                "remote": None,
                "algorithms": [],
                "key_exchanges": [],
                "post_quantum": False,
                "established_seconds": None,
                "rekey_seconds": None,
                "reauth_seconds": None,
                "expires_seconds": None,
                "tasks": {},
                "children": [],
            }
            sas.append(ike)
            child = None
            continue
        if ike is None:
            raise ParseError(LIST_SAS, "line %d comes before any IKE SA header: %r" % (number, body))
        if indent == 2:
            # A two-space line either belongs to the IKE SA or opens one of its CHILD SAs.
            child = _parse_ike_line(ike, body, number)
        elif indent >= 4 and child is not None:
            _parse_child_line(child, body, number)
        else:
            raise ParseError(LIST_SAS, "line %d is indented where no CHILD SA is open: %r" % (number, body))
    for ike in sas:
        if ike["local"] is None or ike["remote"] is None:
            raise ParseError(LIST_SAS, "IKE SA %s has no local/remote endpoint lines" % ike["name"])
        for child in ike["children"]:
            child["post_quantum"] = child["post_quantum"] or ike["post_quantum"]
    return sas


def _parse_ike_line(ike, body, number):
    """Read one line of an IKE SA; return the CHILD SA it opens, if it opens one."""
    endpoint = _ENDPOINT.match(body)
    if endpoint:
        ike[endpoint.group("side")] = {
            "id": endpoint.group("id"),
            "host": endpoint.group("host"),
            "port": int(endpoint.group("port")),
        }
        return None
    child = _CHILD_HEADER.match(body)
    if child:
        algorithms = [a for a in child.group("algorithms").split("/") if a]
        ike["children"].append({
            "name": child.group("name"),
            "uniqueid": int(child.group("uniqueid")),
            "reqid": int(child.group("reqid")),
            "state": child.group("state"),
            "mode": child.group("mode"),
            "udp_encap": bool(child.group("encap")),
            "protocol": child.group("protocol"),
            "algorithms": algorithms,
            "encryption": algorithms[0] if algorithms else None,
            "key_exchanges": key_exchanges(algorithms),
            "post_quantum": is_post_quantum(key_exchanges(algorithms)),
            "installed_seconds": None,
            "rekey_seconds": None,
            "expires_seconds": None,
            "spi_in": None,
            "spi_out": None,
            "bytes_in": None,
            "packets_in": None,
            "bytes_out": None,
            "packets_out": None,
            "local_ts": [],
            "remote_ts": [],
        })
        return ike["children"][-1]
    if body.startswith("established "):
        _timers(body, ike, {"established": "established_seconds", "rekeying in": "rekey_seconds",
                            "reauth in": "reauth_seconds", "expires in": "expires_seconds"})
        return None
    for task in ("queued", "active", "passive"):
        if body.startswith(task + ":"):
            ike["tasks"][task] = body.split(":", 1)[1].split()
            return None
    if "/" in body and " " not in body:
        # "AES_GCM_16-256/PRF_HMAC_SHA2_384/ECP_384[/KE1_ML_KEM_768]": encryption[/integrity]/PRF/key exchange(s)
        ike["algorithms"] = body.split("/")
        ike["key_exchanges"] = key_exchanges(ike["algorithms"])
        ike["post_quantum"] = is_post_quantum(ike["key_exchanges"])
        return None
    raise ParseError(LIST_SAS, "line %d of IKE SA %s is not understood: %r" % (number, ike["name"], body))


def _parse_child_line(child, body, number):
    if body.startswith("installed "):
        _timers(body, child, {"installed": "installed_seconds", "rekeying in": "rekey_seconds",
                              "expires in": "expires_seconds"})
        return
    traffic = _TRAFFIC.match(body)
    if traffic:
        direction = traffic.group("direction")
        child["spi_" + direction] = traffic.group("spi")
        child["bytes_" + direction] = int(traffic.group("bytes"))
        child["packets_" + direction] = int(traffic.group("packets"))
        child["idle_seconds_" + direction] = int_or_none(traffic.group("use"))
        return
    selectors = _TS.match(body)
    if selectors:
        child[selectors.group("side") + "_ts"] = selectors.group("ts").split()
        return
    raise ParseError(LIST_SAS, "line %d of CHILD SA %s is not understood: %r" % (number, child["name"], body))


def encryption_names(proposals):
    """Map swanctl proposals ("aes256gcm16-ecp384") to the encryption names --list-sas prints.

    Proposals whose encryption keyword is unknown here give no name: the caller cannot check them and says so.
    """
    names = []
    for proposal in proposals:
        keyword = proposal.split("-", 1)[0].strip().lower()
        name = _ENCRYPTION_NAMES.get(keyword)
        if name and name not in names:
            names.append(name)
    return names


def summarize_initiate(text):
    """Return the lines of a `swanctl --initiate` log that explain a failure, in the order they were logged."""
    if not isinstance(text, str) or not text.strip():
        return []
    reasons = []
    for line in clean_lines(text, INITIATE):
        message = re.sub(r"^\[[A-Z]{3}\]\s*", "", line.strip())
        for pattern in _FAILURE_PATTERNS:
            found = pattern.search(message)
            if found and found.group(0) not in reasons:
                reasons.append(found.group(0))
                break
    # swanctl prints its verdict before the streamed log; the causes read better first.
    return [r for r in reasons if not r.startswith("initiate failed")] + \
        [r for r in reasons if r.startswith("initiate failed")]


def evaluate_sas(sas, expected, encryption=None, require_post_quantum=False):
    """Compare parsed SAs with the expected ones and describe every peer that is not right.

    expected: list of dicts with peer (name shown to people), ike (connection name), child (CHILD SA name),
    remote_host (address, optional), absent (true when the peer must NOT have an SA, e.g. it is revoked) and
    post_quantum (true: the SAs must include a post-quantum key exchange; None or missing: require_post_quantum).
    encryption: names of acceptable CHILD SA encryption algorithms ("AES_GCM_16-256"); empty means any.
    Returns a list with one dict per expected peer: peer, ike, child, ok, problem (None when ok), ike_state,
    child_state, encryption, key_exchanges (the IKE SA's), child_key_exchanges (the CHILD SA's own),
    post_quantum (None until both SAs are up), packets_in, packets_out.
    """
    results = []
    for want in expected:
        ikes = [sa for sa in sas if sa["name"] == want["ike"]]
        established = [sa for sa in ikes if sa["state"] == "ESTABLISHED"]
        result = {
            "peer": want["peer"],
            "ike": want["ike"],
            "child": want["child"],
            "ok": False,
            "problem": None,
            "ike_state": ikes[0]["state"] if ikes else None,
            "child_state": None,
            "encryption": None,
            "key_exchanges": [],
            "child_key_exchanges": [],
            "post_quantum": None,
            "packets_in": None,
            "packets_out": None,
        }
        pq_required = want.get("post_quantum")
        if pq_required is None:
            pq_required = require_post_quantum
        installed = [
            child for sa in established for child in sa["children"]
            if child["name"] == want["child"] and child["state"] == "INSTALLED"
        ]
        if want.get("absent"):
            if installed or established:
                result["problem"] = "peer %s must be refused (revoked) but has an %s SA" % (
                    want["peer"], "established IKE" if established else "installed CHILD")
            else:
                result["ok"] = True
            results.append(result)
            continue
        if not ikes:
            result["problem"] = "no IKE SA with peer %s (connection %s)" % (want["peer"], want["ike"])
        elif not established:
            result["problem"] = "IKE SA with peer %s is %s, not ESTABLISHED" % (want["peer"], ikes[0]["state"])
        elif want.get("remote_host") and not any(sa["remote"]["host"] == want["remote_host"] for sa in established):
            result["problem"] = "IKE SA %s is established with %s, not with peer %s at %s" % (
                want["ike"], established[0]["remote"]["host"], want["peer"], want["remote_host"])
        elif not installed:
            states = sorted({c["state"] for sa in established for c in sa["children"] if c["name"] == want["child"]})
            result["problem"] = "CHILD SA %s with peer %s is %s" % (
                want["child"], want["peer"], "/".join(states) if states else "missing")
        else:
            child = installed[-1]
            ike = next(sa for sa in established if child in sa["children"])
            result.update({
                "child_state": child["state"],
                "encryption": child["encryption"],
                "key_exchanges": ike["key_exchanges"],
                "child_key_exchanges": child["key_exchanges"],
                "post_quantum": ike["post_quantum"] and child["post_quantum"],
                "packets_in": child["packets_in"],
                "packets_out": child["packets_out"],
            })
            if encryption and child["encryption"] not in encryption:
                result["problem"] = "CHILD SA %s with peer %s uses %s, expected %s" % (
                    want["child"], want["peer"], child["encryption"], " or ".join(encryption))
            elif pq_required and not result["post_quantum"]:
                result["problem"] = (
                    "SAs with peer %s are classical (IKE SA %s key exchange %s), a post-quantum key exchange "
                    "(ML-KEM) is required" % (want["peer"], want["ike"], "+".join(ike["key_exchanges"]) or "none"))
            else:
                result["ok"] = True
        if result["child_state"] is None and installed:
            result["child_state"] = installed[-1]["state"]
        results.append(result)
    return results
