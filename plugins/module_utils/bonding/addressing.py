# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of a normalised bonding configuration as a whole: subnets, gateways and default routes.

Each address, route and rule is already well-formed (``bonding_validate.normalize``); these are the mistakes that
pass that check and cut a host off or split its traffic: a gateway no subnet of its interface reaches, two
default routes competing in one table, the same range routed over two interfaces. They use netaddr, which the
controller has (requirements.txt, meta/ee/requirements.txt). The bond_validate filter runs them on the
controller; bond_config runs them again on a host where netaddr happens to be installed.
"""

from __future__ import annotations

try:
    import netaddr
    HAS_NETADDR = True
    NETADDR_IMPORT_ERROR = None
except ImportError as error:  # pragma: no cover - the controller's venv has it
    HAS_NETADDR = False
    NETADDR_IMPORT_ERROR = error

KINDS = ("bonds", "vlans", "ethernets")
MAIN_TABLE = "main"


def _label(prefix, kind, index, entry, key=None):
    label = "%s_%s[%d] (%s)" % (prefix, kind, index, entry["name"])
    return label + ("." + key if key else "")


def _interfaces(config, prefix):
    """(label, entry, kind, index) for every interface, in the order of the variables."""
    for kind in KINDS:
        for index, entry in enumerate(config.get(kind, [])):
            yield kind, index, entry


def _is_default(network):
    return network.prefixlen == 0


def addressing_problems(config, prefix="bonding"):
    """Problems of a normalised configuration (bond_validate's result), each naming the variable's path.

    Index i of config[kind] is item i of the variable: normalize keeps every item or fails.
    """
    if not HAS_NETADDR:
        raise RuntimeError("the bonding address checks need the Python package netaddr: %s" % NETADDR_IMPORT_ERROR)
    problems = []
    subnets = []  # (network, label of the address, interface name)
    defaults = {}  # (family, table, metric) -> label of the first default route
    for kind, index, entry in _interfaces(config, prefix):
        own = []
        for a_index, address in enumerate(entry.get("addresses", [])):
            network = netaddr.IPNetwork(address)
            label = "%s[%d]" % (_label(prefix, kind, index, entry, "addresses"), a_index)
            own.append(network)
            for other, other_label, other_name in subnets:
                if other_name == entry["name"] or other.version != network.version:
                    continue
                if network.first <= other.last and other.first <= network.last:
                    problems.append(
                        "%s: %s overlaps %s of %s: the kernel would route that range over both %s and %s"
                        % (label, address, other, other_label, entry["name"], other_name))
            subnets.append((network, label, entry["name"]))
        for r_index, route in enumerate(entry.get("routes", [])):
            label = "%s[%d]" % (_label(prefix, kind, index, entry, "routes"), r_index)
            destination = netaddr.IPNetwork(route["to"])
            if route.get("via") is not None and not route.get("on_link"):
                gateway = netaddr.IPAddress(route["via"])
                reachable = [net for net in own if net.version == gateway.version and gateway in net]
                if not reachable:
                    mine = [str(net) for net in own if net.version == gateway.version]
                    problems.append(
                        "%s.via: gateway %s is outside every IPv%d subnet of %s (%s): the route could never be "
                        "installed; fix the gateway or the address, or set on_link: true if the gateway is reachable "
                        "on the link anyway" % (label, gateway, gateway.version, entry["name"],
                                                ", ".join(mine) if mine else "it has none"))
            if _is_default(destination):
                table = route.get("table") if route.get("table") is not None else MAIN_TABLE
                key = (destination.version, table, route.get("metric"))
                if key in defaults:
                    problems.append(
                        "%s: a second IPv%d default route in table %s with %s (the first is %s): only one of them "
                        "would carry the traffic; give them different metrics (fail-over) or put each in its own "
                        "table with a routing_policy rule" % (
                            label, destination.version, table,
                            "metric %s" % route["metric"] if route.get("metric") is not None else "no metric",
                            defaults[key]))
                else:
                    defaults[key] = label
    return problems
