# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What two hosts of one inventory must never both claim: an address of theirs, their BMC, their BGP router ID.

Each role checks one host's variables; none of them sees that gpu-r01-n05 was given gpu-r01-n01's storage address
or BMC (a copied host_vars file, a typo in a group's arithmetic). playbooks/check_inventory.yml runs this over every
host of the inventory once (filter gpufabric.core.inventory_problems) and fails both hosts of every pair, naming the
two hosts and the two variables. The IPsec mesh's names and identities are the ipsec role's (swanctl_inputs).
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import masked, resolver_address

# The variables whose values belong to one host alone.
CLAIMING_VARIABLES = ("bonding_bonds", "bonding_vlans", "bonding_ethernets", "cooling_bmc", "routing_loopback_addresses",
                      "routing_router_id", "verify_address")
# scheme://[user[:password]@]host[:port]/...: the host of a Redfish base_url (IPv6 in brackets).
_URL_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^/@]*@)?(\[[^\]]+\]|[^:/?#]+)")


def _address_key(value):
    """The form an address or host name is compared in; None for what cannot identify one host (loopback,
    link-local, unspecified addresses, or no value)."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().strip("[]")
    address = resolver_address(text)
    if address is None:
        return "name %s" % text.lower().rstrip(".")
    if address.is_loopback or address.is_link_local or address.is_unspecified:
        return None
    return "address %s" % address


def _interface_claims(settings):
    for variable in ("bonding_bonds", "bonding_vlans", "bonding_ethernets"):
        items = settings.get(variable)
        for index, item in enumerate(items if isinstance(items, list) else []):
            addresses = item.get("addresses") if isinstance(item, dict) else None
            for position, address in enumerate(addresses if isinstance(addresses, list) else []):
                yield _address_key(address), "%s[%d].addresses[%d]" % (variable, index, position), address


def _bmc_claims(settings):
    bmc = settings.get("cooling_bmc")
    if not isinstance(bmc, dict):
        return
    ipmi = bmc.get("ipmi")
    if isinstance(ipmi, dict) and ipmi.get("interface", "lanplus") == "lanplus":
        yield _address_key(ipmi.get("host")), "cooling_bmc.ipmi.host", ipmi.get("host")
    redfish = bmc.get("redfish")
    if isinstance(redfish, dict) and isinstance(redfish.get("base_url"), str):
        match = _URL_HOST.match(redfish["base_url"])
        if match:
            yield _address_key(match.group(1)), "cooling_bmc.redfish.base_url", match.group(1)


def host_claims(settings):
    """(key, variable, value) of everything one host's variables say belongs to that host alone."""
    if not isinstance(settings, dict):
        return []
    claims = list(_interface_claims(settings)) + list(_bmc_claims(settings))
    loopbacks = settings.get("routing_loopback_addresses")
    for index, address in enumerate(loopbacks if isinstance(loopbacks, list) else []):
        claims.append((_address_key(address), "routing_loopback_addresses[%d]" % index, address))
    router_id = settings.get("routing_router_id")
    if isinstance(router_id, str) and router_id.strip():
        claims.append(("router id %s" % router_id.strip(), "routing_router_id", router_id))
    if settings.get("verify_address"):
        claims.append((_address_key(settings["verify_address"]), "verify_address", settings["verify_address"]))
    return [claim for claim in claims if claim[0] is not None]


def _spelling_note(key, first, second):
    """Why two differently written values are one (10.99.1.015 and 10.99.1.13), or "" when they read alike."""
    spellings = [str(value).strip().strip("[]").partition("/")[0] for value in (first, second)]
    if not key.startswith("address ") or spellings[0] == spellings[1]:
        return ""
    return " (%r and %r are one address, %s, as the resolver reads them)" % (spellings[0], spellings[1],
                                                                             key[len("address "):])


def inventory_problems(hosts):
    """{host: [sentence, ...]} for every host that claims what another host claims (only hosts with a problem).

    hosts: {inventory name: that host's variables (bonding_*, cooling_bmc, routing_*, verify_address)}. The first
    host in inventory order owns a value; every later one that claims it fails, and so does the first, each sentence
    naming both hosts and both variables.
    """
    owners = {}
    problems = {}
    for host in hosts:
        for key, variable, value in host_claims(hosts[host]):
            owner = owners.get(key)
            if owner is None:
                owners[key] = (host, variable, value)
                continue
            if owner[0] == host:
                continue
            what = "router ID" if key.startswith("router id") else "address"
            sentence = ("%s %r is claimed by two hosts: %s (%s) and %s (%s); each host needs its own%s" % (
                what, str(value), owner[0], owner[1], host, variable, _spelling_note(key, owner[2], value)))
            for claimant in (owner[0], host):
                if sentence not in problems.setdefault(claimant, []):
                    problems[claimant].append(sentence)
    return {host: masked(sentences, hosts[host]) for host, sentences in problems.items()}
