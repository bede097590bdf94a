# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the kernel hashes flows onto ECMP routes: the multipath hash policy, its custom fields, the sysctl.d file
that persists them, and the spread a set of flows got over the uplinks.

The kernel's default policy 0 hashes on the addresses alone: every flow between two hosts (every RoCE v2 queue pair
between two NICs) takes the same next hop while the others idle. Policy 1 adds the protocol and the ports, so each
flow (each QP: RoCE v2 picks a UDP source port per QP) picks its own. Policy 3 hashes on the fields named in
``fib_multipath_hash_fields`` (Linux 5.12 and later). Both are per network namespace, IPv4 and IPv6 each.
"""

from __future__ import annotations

import os

POLICIES = {"l3": 0, "l4": 1, "l3_inner": 2, "custom": 3}
# linux/Documentation/networking/ip-sysctl.rst, fib_multipath_hash_fields.
FIELDS = {
    "src_ip": 0x0001, "dst_ip": 0x0002, "ip_proto": 0x0004, "flow_label": 0x0008,
    "src_port": 0x0010, "dst_port": 0x0020,
    "inner_src_ip": 0x0040, "inner_dst_ip": 0x0080, "inner_ip_proto": 0x0100, "inner_flow_label": 0x0200,
    "inner_src_port": 0x0400, "inner_dst_port": 0x0800,
}
FAMILIES = ("ipv4", "ipv6")
SPREAD_TARGET_RANGE = (1.0, 2.0)


def policy_key(family):
    return "net.%s.fib_multipath_hash_policy" % family


def fields_key(family):
    return "net.%s.fib_multipath_hash_fields" % family


def fields_mask(fields):
    """The bit mask of a list of field names (names checked by hash_settings_problems)."""
    mask = 0
    for name in fields:
        mask |= FIELDS[name]
    return mask


def desired_values(policy, fields):
    """{sysctl key: int} that policy (a name of POLICIES) and, for custom, fields (names) stand for."""
    values = {}
    for family in FAMILIES:
        if policy == "custom":
            values[fields_key(family)] = fields_mask(fields)
        values[policy_key(family)] = POLICIES[policy]
    return values


def hash_settings_problems(settings, prefix="routing_"):
    """One sentence per problem in the hash settings: policy, fields (with custom) and spread_target (when given)."""
    problems = []
    policy = settings.get("multipath_hash_policy")
    if policy not in POLICIES:
        problems.append("%smultipath_hash_policy: %r is not one of %s" % (prefix, policy, ", ".join(POLICIES)))
    fields = settings.get("multipath_hash_fields", [])
    if not isinstance(fields, list) or not all(isinstance(name, str) for name in fields):
        problems.append("%smultipath_hash_fields: must be a list of field names, got %r" % (prefix, fields))
    else:
        unknown = [name for name in fields if name not in FIELDS]
        if unknown:
            problems.append("%smultipath_hash_fields: %s not among %s" % (prefix, ", ".join(unknown), ", ".join(FIELDS)))
        elif policy == "custom" and not fields:
            problems.append("%smultipath_hash_fields: empty, and %smultipath_hash_policy custom hashes on these "
                            "fields alone (name some, for example src_ip, dst_ip, ip_proto, src_port, dst_port)"
                            % (prefix, prefix))
    if "spread_target" in settings:
        target = settings["spread_target"]
        low, high = SPREAD_TARGET_RANGE
        if isinstance(target, bool) or not isinstance(target, (int, float)) or not low < target <= high:
            problems.append("%sspread_target: %r is outside (%g, %g]: the busiest uplink's packets over its fair share "
                            "(1 is a perfect spread, which a hash never reaches; above 2 one uplink may carry all)"
                            % (prefix, target, low, high))
    return problems


def parse_sysctl_names(text):
    """The keys `sysctl -a -N` printed, one per line."""
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}


def kernel_problems(policy, names, kernel="", prefix="routing_"):
    """What the running kernel lacks for policy, given the sysctl keys it has (parse_sysctl_names)."""
    if policy not in POLICIES:
        return []
    missing = [policy_key(family) for family in FAMILIES if policy_key(family) not in names]
    if policy == "custom":
        missing += [fields_key(family) for family in FAMILIES if fields_key(family) not in names]
    if not missing:
        return []
    need = "Linux 5.12 or later (fib_multipath_hash_fields)" if policy == "custom" else \
        "Linux 4.18 or later for IPv6"
    return ["%smultipath_hash_policy: %s needs %s, which this kernel%s does not have (%s); choose a policy it has, "
            "such as l4" % (prefix, policy, ", ".join(missing), " (%s)" % kernel if kernel else "", need)]


def proc_path(key, proc_root="/proc/sys"):
    return os.path.join(proc_root, *key.split("."))


def read_runtime(keys, proc_root="/proc/sys"):
    """{key: int or None (absent)} as the running kernel has them now."""
    values = {}
    for key in keys:
        try:
            with open(proc_path(key, proc_root)) as handle:
                values[key] = int(handle.read().strip(), 0)
        except FileNotFoundError:
            values[key] = None
    return values


def write_runtime(values, proc_root="/proc/sys"):
    """Write each {key: int} into the running kernel, in order (the fields before the policy that uses them)."""
    for key, value in values.items():
        with open(proc_path(key, proc_root), "w") as handle:
            handle.write("%d\n" % value)


def render_sysctl_file(policy, values):
    """The sysctl.d file that sets values at boot."""
    lines = ["# Managed by gpufabric.core (multipath_hash): how the kernel hashes flows onto ECMP routes.",
             "# Policy %s (%d)%s." % (policy, POLICIES[policy], {
                 "l3": ": source and destination addresses only; every flow between two hosts takes one uplink",
                 "l4": ": addresses, protocol and ports; each flow (each RoCE v2 queue pair) picks its own uplink",
                 "l3_inner": ": the inner addresses of encapsulated packets",
                 "custom": ": the fields of fib_multipath_hash_fields",
             }[policy])]
    for key, value in values.items():
        lines.append("%s = %s" % (key, "0x%04x" % value if key.endswith("_fields") else value))
    return "\n".join(lines) + "\n"


def runtime_changes(current, desired):
    """[{key, before, after}] for every key whose running value differs."""
    return [{"key": key, "before": current.get(key), "after": value}
            for key, value in desired.items() if current.get(key) != value]


def spread(counts):
    """The spread of packets over uplinks: {total, fair, busiest, max_over_fair} from {uplink: packets}."""
    total = sum(counts.values())
    if not counts or total <= 0:
        return {"total": total, "fair": 0.0, "busiest": None, "max_over_fair": None}
    fair = total / len(counts)
    busiest = max(sorted(counts), key=lambda uplink: counts[uplink])
    return {"total": total, "fair": fair, "busiest": busiest, "max_over_fair": round(counts[busiest] / fair, 3)}
