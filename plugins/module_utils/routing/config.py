# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the routing role's settings, on the controller, before any host is touched.

routing_problems(settings, prefix) returns one sentence per problem, each naming the variable's path
(routing_uplinks[1] (eth1).remote_asn). Values that pass argument_specs' type checks but that FRR would refuse, or
that would give a fabric without failover (an iBGP uplink, a host address that is not a /32, fewer ECMP paths than
uplinks), are problems too. Addresses and prefixes are checked with netaddr (controller-side only: the role's
preflight and playbooks/check_inventory.yml).
"""

from __future__ import annotations

import re

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import interface_name_problem, path_problems

try:
    import netaddr
except ImportError:  # pragma: no cover - netaddr is in the controller's requirements
    netaddr = None

# FRR's own limits (bfdd: 10-60000 ms intervals, 2-255 multiplier; bgpd: hold 0 or 3-65535 s).
BFD_INTERVAL_RANGE = (10, 60000)
BFD_MULTIPLIER_RANGE = (2, 255)
BGP_KEEPALIVE_RANGE = (0, 65535)
BGP_HOLD_RANGE = (3, 65535)
BGP_CONNECT_RETRY_RANGE = (1, 65535)
MAXIMUM_PATHS_RANGE = (1, 64)
ASN_RANGE = (1, 4294967295)
AS_TRANS = 23456  # RFC 6793: a placeholder, never a real AS
PROFILE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
PACKAGE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+_-]{0,127}")
# bgpd's "neighbor PEER description LINE": up to 80 characters, one line.
DESCRIPTION_MAX = 80
# The role replaces this file whole and reloads FRR with it: FRR's own folder only, never a system file.
FRR_CONFIG_UNDER = ("/etc/frr",)
UPLINK_KEYS = {"interface", "peer", "unnumbered", "remote_asn", "leaf", "bfd", "description"}


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _check_range(problems, name, value, bounds, unit=""):
    if not _is_int(value):
        problems.append("%s: %r is not an integer" % (name, value))
        return False
    if not bounds[0] <= value <= bounds[1]:
        problems.append("%s: %d%s is outside %d-%d%s" % (name, value, unit, bounds[0], bounds[1], unit))
        return False
    return True


def _check_asn(problems, name, value):
    if _check_range(problems, name, value, ASN_RANGE) and value == AS_TRANS:
        problems.append("%s: %d is AS_TRANS (RFC 6793), not a usable AS number" % (name, value))
        return False
    return _is_int(value) and ASN_RANGE[0] <= value <= ASN_RANGE[1]


def parse_address(value):
    """A single IP address (no prefix length), or None. Not stripped: frr.conf takes the value as written, and a
    line break around it would end its line there."""
    if not isinstance(value, str) or "/" in value:
        return None
    try:
        return netaddr.IPAddress(value, flags=netaddr.INET_PTON)
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return None


def parse_network(value):
    """An address with a prefix length (CIDR), or None."""
    if not isinstance(value, str) or "/" not in value:
        return None
    address, length = value.split("/", 1)
    if parse_address(address) is None or not length.isdigit():
        return None
    try:
        return netaddr.IPNetwork(value.strip())
    except (netaddr.AddrFormatError, ValueError, TypeError):
        return None


def _check_prefixes(problems, name, values, allow_empty=True):
    """Networks in CIDR notation with no host bits set (10.0.0.0/8, not 10.0.0.1/8): the route maps match them
    exactly."""
    good = []
    if not isinstance(values, list):
        problems.append("%s: must be a list of prefixes, got %r" % (name, values))
        return good
    if not values and not allow_empty:
        problems.append("%s: must name at least one prefix" % name)
    seen = set()
    for index, value in enumerate(values):
        label = "%s[%d]" % (name, index)
        network = parse_network(value)
        if network is None:
            problems.append("%s: %r is not a prefix in CIDR notation (for example 0.0.0.0/0 or 10.0.0.0/8)" % (
                label, value))
            continue
        if network.ip != network.network:
            problems.append("%s: %s has host bits set; the prefix is %s" % (label, value, network.cidr))
            continue
        if network.cidr in seen:
            problems.append("%s: %s is listed twice" % (label, network.cidr))
            continue
        seen.add(network.cidr)
        good.append(network.cidr)
    return good


def _check_loopbacks(problems, name, values):
    good = []
    if not isinstance(values, list) or not values:
        problems.append("%s: must list the host's own addresses (/32 or /128), at least one" % name)
        return good
    for index, value in enumerate(values):
        label = "%s[%d]" % (name, index)
        network = parse_network(value)
        if network is None:
            problems.append("%s: %r is not an address with a prefix length (for example 10.0.0.11/32)" % (
                label, value))
        elif network.prefixlen != (32 if network.version == 4 else 128):
            problems.append("%s: %s must be a host address, /%d" % (
                label, value, 32 if network.version == 4 else 128))
        elif network.ip.is_loopback() or network.ip.is_link_local() or network.ip.is_multicast():
            problems.append("%s: %s is a loopback, link-local or multicast address, not routable" % (label, value))
        elif network in good:
            problems.append("%s: %s is listed twice" % (label, value))
        else:
            good.append(network)
    return good


def _check_uplink(problems, label, uplink, host_asn):
    unknown = sorted(set(uplink) - UPLINK_KEYS)
    if unknown:
        problems.append("%s: unknown key(s) %s (known: %s)" % (label, ", ".join(unknown), ", ".join(sorted(UPLINK_KEYS))))
    problem = interface_name_problem(uplink.get("interface"))
    if problem:
        problems.append("%s.interface: %s" % (label, problem))
    unnumbered = uplink.get("unnumbered", False)
    peer = uplink.get("peer")
    if not isinstance(unnumbered, bool):
        problems.append("%s.unnumbered: %r is not a boolean" % (label, unnumbered))
    elif unnumbered and peer:
        problems.append("%s: peer %s is set but unnumbered is true; an unnumbered session finds its peer over "
                        "IPv6 link-local, drop one of them" % (label, peer))
    elif not unnumbered and not peer:
        problems.append("%s.peer: a numbered uplink needs the leaf's address (or set unnumbered: true)" % label)
    elif peer:
        address = parse_address(peer)
        if address is None:
            problems.append("%s.peer: %r is not an IP address" % (label, peer))
        elif address.is_link_local():
            problems.append("%s.peer: %s is link-local; use unnumbered: true for link-local sessions" % (label, peer))
        elif address.is_loopback() or address.is_multicast() or address.is_reserved() and address.version == 4:
            problems.append("%s.peer: %s is not a unicast peer address" % (label, peer))
    if "remote_asn" not in uplink:
        problems.append("%s.remote_asn: the leaf's AS number is required" % label)
    elif _check_asn(problems, label + ".remote_asn", uplink["remote_asn"]) and uplink["remote_asn"] == host_asn:
        problems.append("%s.remote_asn: %d is the host's own routing_asn; uplinks are eBGP, each leaf in its own AS"
                        % (label, host_asn))
    for key in ("bfd",):
        if key in uplink and uplink[key] is not None and not isinstance(uplink[key], bool):
            problems.append("%s.%s: %r is not a boolean" % (label, key, uplink[key]))
    for key in ("leaf", "description"):
        value = uplink.get(key)
        # Written into frr.conf: a carriage return or another control character would end or garble the line.
        if value is not None and (not isinstance(value, str) or not value.strip()
                                  or re.search(r"[\x00-\x1f\x7f]", value) or len(value) > DESCRIPTION_MAX):
            problems.append("%s.%s: %r must be a one-line, non-empty string of at most %d characters without "
                            "control characters" % (label, key, value if not isinstance(value, str) else value[:100],
                                                    DESCRIPTION_MAX))


def routing_problems(settings, prefix="routing_"):
    """One sentence per problem in the routing role's settings; empty when they are usable.

    settings: the role's variables without their prefix (asn, router_id, uplinks, loopback_addresses,
    accept_prefixes, advertise_prefixes, verify_prefixes, maximum_paths, bfd_enabled, bfd_profile,
    bfd_transmit_interval, bfd_receive_interval, bfd_detect_multiplier, bgp_keepalive, bgp_hold,
    bgp_connect_retry, frr_config_path, verify_timeout, packages; the last four only when given).
    """
    if netaddr is None:
        return ["%s*: the Python library netaddr is needed on the controller to check addresses "
                "(pip install netaddr)" % prefix]
    if not isinstance(settings, dict):
        return ["%s*: settings must be a dict, got %r" % (prefix, settings)]
    problems = []

    def name(key):
        return prefix + key

    host_asn = settings.get("asn")
    if host_asn in (None, 0, ""):
        problems.append("%s: the host's AS number is required (a private one from 4200000000-4294967294 per "
                        "host is usual)" % name("asn"))
    else:
        _check_asn(problems, name("asn"), host_asn)

    uplinks = settings.get("uplinks")
    if not isinstance(uplinks, list) or not uplinks:
        problems.append("%s: at least one routed uplink is needed (interface, peer or unnumbered, remote_asn)" %
                        name("uplinks"))
        uplinks = []
    interfaces, peers = {}, {}
    for index, uplink in enumerate(uplinks):
        label = "%s[%d]" % (name("uplinks"), index)
        if not isinstance(uplink, dict):
            problems.append("%s: must be a dict, got %r" % (label, uplink))
            continue
        if isinstance(uplink.get("interface"), str):
            label = "%s (%s)" % (label, uplink["interface"])
        _check_uplink(problems, label, uplink, host_asn)
        interface, peer = uplink.get("interface"), uplink.get("peer")
        if isinstance(interface, str):
            if interface in interfaces and (uplink.get("unnumbered") or interfaces[interface]):
                problems.append("%s.interface: %s already carries an unnumbered session; one session per "
                                "interface" % (label, interface))
            interfaces.setdefault(interface, bool(uplink.get("unnumbered")))
        if isinstance(peer, str) and peer:
            if peer in peers:
                problems.append("%s.peer: %s is also the peer of %s" % (label, peer, peers[peer]))
            peers.setdefault(peer, label)

    loopbacks = _check_loopbacks(problems, name("loopback_addresses"), settings.get("loopback_addresses"))
    router_id = settings.get("router_id") or ""
    if router_id:
        address = parse_address(router_id)
        if address is None or address.version != 4:
            problems.append("%s: %r is not an IPv4 address (a BGP router ID is 32 bits)" % (name("router_id"), router_id))
    elif loopbacks and not any(net.version == 4 for net in loopbacks):
        problems.append("%s: empty and no IPv4 address in %s to take it from; set one" % (
            name("router_id"), name("loopback_addresses")))

    accept = _check_prefixes(problems, name("accept_prefixes"), settings.get("accept_prefixes"), allow_empty=False)
    _check_prefixes(problems, name("advertise_prefixes"), settings.get("advertise_prefixes", []))
    verify = _check_prefixes(problems, name("verify_prefixes"), settings.get("verify_prefixes", []))
    for index, network in enumerate(verify):
        if accept and network not in accept:
            problems.append("%s[%d]: %s is not in %s, so it is never learnt from the leaves" % (
                name("verify_prefixes"), index, network, name("accept_prefixes")))

    if _check_range(problems, name("maximum_paths"), settings.get("maximum_paths", 16), MAXIMUM_PATHS_RANGE):
        if settings.get("maximum_paths", 16) < len(uplinks):
            problems.append("%s: %d is fewer than the %d uplinks; ECMP would not use them all" % (
                name("maximum_paths"), settings["maximum_paths"], len(uplinks)))

    if settings.get("bfd_enabled", True):
        profile = settings.get("bfd_profile")
        if not isinstance(profile, str) or not PROFILE_NAME.match(profile):
            problems.append("%s: %r is not a profile name (letters, digits, '_', '-', '.', 1-64)" % (
                name("bfd_profile"), profile))
        for key in ("bfd_transmit_interval", "bfd_receive_interval"):
            _check_range(problems, name(key), settings.get(key), BFD_INTERVAL_RANGE, " ms")
        _check_range(problems, name("bfd_detect_multiplier"), settings.get("bfd_detect_multiplier"),
                     BFD_MULTIPLIER_RANGE)

    keepalive, hold = settings.get("bgp_keepalive"), settings.get("bgp_hold")
    keepalive_ok = _check_range(problems, name("bgp_keepalive"), keepalive, BGP_KEEPALIVE_RANGE, " s")
    if _is_int(hold) and hold == 0:
        pass  # 0 turns the hold timer off (RFC 4271); keepalives are then not sent either
    elif _check_range(problems, name("bgp_hold"), hold, BGP_HOLD_RANGE, " s") and keepalive_ok:
        if keepalive * 3 > hold:
            problems.append("%s: %d s is more than a third of %s (%d s); three keepalives must fit in the hold "
                            "time" % (name("bgp_keepalive"), keepalive, name("bgp_hold"), hold))
    if "bgp_connect_retry" in settings:
        _check_range(problems, name("bgp_connect_retry"), settings["bgp_connect_retry"], BGP_CONNECT_RETRY_RANGE,
                     " s")
    if "frr_config_path" in settings:
        found = path_problems(name("frr_config_path"), settings["frr_config_path"], under=FRR_CONFIG_UNDER,
                              what="file path")
        problems.extend(found)
    if "verify_timeout" in settings:
        _check_range(problems, name("verify_timeout"), settings["verify_timeout"], (1, 86400), " s")
    packages = settings.get("packages", [])
    for index, package in enumerate(packages if isinstance(packages, list) else [packages]):
        if not isinstance(package, str) or not PACKAGE.fullmatch(package):
            problems.append("%s[%d]: %r is not a package name" % (name("packages"), index, package))
    return problems
