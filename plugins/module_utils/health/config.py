# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The health role's inputs, checked, and the files they become on a host.

- problems(): every rule the role applies (its preflight and check_inventory.yml, through the health_problems
  filter), each problem naming the variable;
- expected_state(): the expected-state file gpufabric-health samples against, from the fabric map's rails, the
  bonds, routed uplinks and IPsec peers the other roles deployed;
- desired_files(): the sampler's package, command, expected state and unit, and node_exporter's arguments and web
  configuration, as file_transaction entries.
"""

from __future__ import annotations

import grp
import ipaddress
import json
import re
import socket

from ansible_collections.gpufabric.core.plugins.module_utils.health import (
    rules as health_rules,
    sample as health_sample,
)
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import host_program
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec import mesh as swanctl_mesh
from ansible_collections.gpufabric.core.plugins.module_utils.parsers import mlnx_qos
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import as_number, bearer_token_problem, path_problems

# The fastest Ethernet and InfiniBand ports sold (800 Gb/s: ConnectX-8, XDR) with room for the next generation; an
# expected rate above this is a typo (Mb/s given as Gb/s), not a NIC.
MAX_PORT_RATE_GBPS = 1600
MANAGED = "Ansible managed"
# Labels of the gpufabric series themselves: a target label of the same name would overwrite theirs.
RESERVED_TARGET_LABELS = frozenset(("host", "rail", "netdev", "device", "port", "leaf", "leaf_port", "seen_leaf",
                                    "seen_port", "peer", "child", "bond", "source", "pci", "kind", "job", "instance",
                                    "trust", "seen_trust", "lossless"))
PACKAGE = "gpufabric_health"
# The module's paths: each reaches a unit (ExecStart, Environment), node_exporter's ARGS line or its web config, so
# a space, a quote or a line break would add arguments or lines there. (name, may be empty)
HOST_PATHS = (("lib_dir", False), ("bin_path", False), ("state_file", False), ("unit_file", False),
              ("textfile_dir", False), ("web_config_file", False), ("node_exporter_defaults_file", False),
              ("tls_cert_file", True), ("tls_key_file", True))
# The role's variables among them (the others are the module's defaults).
_ROLE_PATHS = {"textfile_dir": "health_textfile_dir", "tls_cert_file": "health_node_exporter_tls_cert_file",
               "tls_key_file": "health_node_exporter_tls_key_file"}
# A DNS name (RFC 1123 labels): what an inventory's ansible_host holds when it is not an address.
_HOST_NAME = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")


def _has_line_break(value):
    return isinstance(value, str) and ("\n" in value or "\r" in value)


def _number(value):
    """value as a float, read as Prometheus reads a number (input_checks.as_number: ASCII decimal digits only)."""
    return as_number(value)


def _is_ip(text):
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _duration_problem(where, value, low, high, bounds):
    """None when value is a Prometheus duration of low to high seconds; else the sentence naming where (bounds: the
    range as the sentence shows it)."""
    try:
        seconds = health_rules.duration_seconds(value)
    except ValueError as exc:
        return "%s: %s" % (where, exc)
    if not low <= seconds <= high:
        return "%s: %s is out of range (%s)" % (where, value, bounds)
    return None


# Each number threshold's range. The rules write INTEGER_THRESHOLDS with %d, so they must be integers (a string
# "2" fails there); the others are written as given, so a string must be a number Prometheus reads
# (input_checks.DECIMAL: "1_000" or other scripts' digits are not, though Python's float() takes them).
THRESHOLD_RANGES = {"leaf_min_hosts": (1, 100000), "leaf_min_ratio": (0.01, 1), "flap_changes": (2, 1000),
                    "carrier_lost_changes_6h": (1, 1000), "pause_frames_per_second": (1, 1e9),
                    "stale_after_seconds": (5, 86400)}
INTEGER_THRESHOLDS = ("leaf_min_hosts", "flap_changes", "carrier_lost_changes_6h", "stale_after_seconds")


def _threshold_number_problem(where, key, value):
    low, high = THRESHOLD_RANGES[key]
    if key in INTEGER_THRESHOLDS:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            example = health_rules.DEFAULT_THRESHOLDS[key]
            return ("%s: must be a whole number written as a YAML number (%d, not '%d' or %d.5): the alert rule "
                    "takes it as an integer; got %r" % (where, example, example, example, value))
        number = float(value)
    else:
        number = _number(value)
        if number is None:
            return ("%s: %r is not a number as Prometheus reads one (ASCII digits, a point, an exponent: 0.5, 1000, "
                    "1e3)" % (where, value))
    if not low <= number <= high:
        return "%s: %r is out of range (%s to %s)" % (where, value, low, high)
    return None


# Duration thresholds used as a range selector's window ([5m]): Prometheus refuses [0s] ("duration must be greater
# than 0"), and no window shorter than a scrape could ever hold the two samples increase() needs.
WINDOW_THRESHOLDS = ("flap_window",)


def _threshold_duration_problem(where, key, value):
    problem = _duration_problem(where, value, 0, 7 * 86400, "0s to 7 days")
    if problem is None and key in WINDOW_THRESHOLDS and health_rules.duration_seconds(value) < 1:
        problem = ("%s: %s is a window of less than a second: Prometheus refuses a range of 0 and no shorter one holds "
                   "two samples for increase(); give a few scrape intervals (the default is %s)"
                   % (where, value, health_rules.DEFAULT_THRESHOLDS[key]))
    return problem


def threshold_problems(thresholds, name="health_thresholds"):
    """What is wrong with the alert thresholds (unknown keys, durations, numbers as Prometheus reads them, ranges)."""
    problems = []
    if not isinstance(thresholds, dict):
        return ["%s must be a mapping of threshold names to values" % name]
    for key, value in thresholds.items():
        where = "%s.%s" % (name, key)
        if key not in health_rules.DEFAULT_THRESHOLDS:
            problems.append("%s: unknown threshold (known: %s)" % (where, ", ".join(sorted(health_rules.DEFAULT_THRESHOLDS))))
            continue
        if isinstance(health_rules.DEFAULT_THRESHOLDS[key], str):
            problem = _threshold_duration_problem(where, key, value)
        else:
            problem = _threshold_number_problem(where, key, value)
        if problem:
            problems.append(problem)
    return problems


def _qos_interval_problems(value, thresholds):
    """The QoS interval in range, and shorter than the QoS alerts' `for`: a reading is held for the whole interval,
    so one reading of a passing state (a DCBX exchange under way) must not last long enough to fire."""
    qos_interval = _number(value)
    if qos_interval is None or not 1 <= qos_interval <= 3600:
        return ["health_qos_interval: %r is out of range (1 to 3600 seconds)" % (value,)]
    qos_for = thresholds.get("qos_for", health_rules.DEFAULT_THRESHOLDS["qos_for"]) if isinstance(thresholds, dict) else None
    try:
        qos_for_seconds = health_rules.duration_seconds(qos_for)
    except (TypeError, ValueError):
        return []  # threshold_problems names it
    if qos_interval >= qos_for_seconds:
        return ["health_qos_interval: %r is not shorter than health_thresholds.qos_for (%s): one reading of a passing "
                "state would be held long enough to fire" % (value, qos_for)]
    return []


def _stale_after_problems(interval, thresholds):
    """GpufabricHealthStale's age above two sample intervals: a sample a little late is not a blind sampler."""
    stale_after = thresholds.get("stale_after_seconds") if isinstance(thresholds, dict) else None
    limit = _number(health_rules.DEFAULT_THRESHOLDS["stale_after_seconds"] if stale_after is None else stale_after)
    if interval is None or limit is None or limit > 2 * interval:
        return []  # a bad interval or threshold is named by its own check
    return ["health_thresholds.stale_after_seconds: %g s is not more than twice health_interval (%g s): a sampler "
            "on time would be reported stale" % (limit, interval)]


def host_path_problems(params, names=None):
    """What is wrong with the paths of HOST_PATHS in params, where names maps an option to the name it has in params
    (the role's variable); without names, every path under the module's own option names."""
    names = names or {key: key for key, _may_be_empty in HOST_PATHS}
    found = []
    for key, may_be_empty in HOST_PATHS:
        if key in names:
            value = params.get(names[key])
            found += path_problems(names[key], "" if value is None and may_be_empty else value, allow_empty=may_be_empty)
    return found


def problems(settings):
    """Every problem of the health role's variables (a dict of them, names as in the role), each naming its
    variable; [] when they are usable."""
    found = host_path_problems(settings, _ROLE_PATHS)
    interval = _number(settings.get("health_interval"))
    if interval is None or not 1 <= interval <= 300:
        found.append("health_interval: %r is out of range (1 to 300 seconds)" % (settings.get("health_interval"),))
    command_interval = _number(settings.get("health_command_interval"))
    if command_interval is None or not 1 <= command_interval <= 3600:
        found.append("health_command_interval: %r is out of range (1 to 3600 seconds)"
                     % (settings.get("health_command_interval"),))
    found += _qos_interval_problems(settings.get("health_qos_interval"), settings.get("health_thresholds") or {})
    found += _stale_after_problems(interval, settings.get("health_thresholds") or {})
    found += threshold_problems(settings.get("health_thresholds") or {})
    address = settings.get("health_listen_address")
    if not isinstance(address, str) or not (_is_ip(address) or _HOST_NAME.fullmatch(address)):
        found.append("health_listen_address: %r is neither an IP address nor a host name (node_exporter listens "
                     "on the management address only)" % (address,))
    port = settings.get("health_node_exporter_port")
    if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
        found.append("health_node_exporter_port: %r is not a TCP port" % (port,))
    found += duplicate_rail_problems(settings.get("health_rails") or [])
    for index, rail in enumerate(settings.get("health_rails") or []):
        where = "health_rails[%d]" % index
        if not isinstance(rail, dict):
            found.append("%s must be a mapping" % where)
            continue
        rate = rail.get("expected_rate_gbps")
        if rate is not None:
            number = _number(rate)
            if number is None or not 0 < number <= MAX_PORT_RATE_GBPS:
                found.append("%s.expected_rate_gbps: %r Gb/s is a rate no NIC reaches (0 to %d)"
                             % (where, rate, MAX_PORT_RATE_GBPS))
        for key, value in rail.items():
            if _has_line_break(value):
                found.append("%s.%s: a label value must not hold a line break" % (where, key))
    found += target_label_problems(settings.get("health_target_labels"))
    webhook = settings.get("health_alertmanager_webhook_url") or ""
    if not isinstance(webhook, str) or webhook and not re.fullmatch(r"https?://[^\s]+", webhook):
        found.append("health_alertmanager_webhook_url: %r is not an http(s) URL" % (webhook,))
    for name, check in (("health_roce_ecn_priority", "ECN"), ("health_roce_pfc_priority", "PFC")):
        priority = settings.get(name)
        if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 7):
            found.append("%s: %r is not a priority (0 to 7, or null for no %s check)" % (name, priority, check))
    trust = settings.get("health_roce_trust")
    if trust not in mlnx_qos.TRUST_STATES + ("", None):
        found.append("health_roce_trust: %r is not a trust state (%s, or empty for no check)"
                     % (trust, " or ".join(mlnx_qos.TRUST_STATES)))
    found += monitoring_problems(settings)
    return found


def _rail_keys(rail):
    """What names a rail's port, each once per host: its rail name, its netdev, its RDMA device and port."""
    keys = [("rail", rail.get("rail")), ("netdev", rail.get("netdev"))]
    if rail.get("device"):
        keys.append(("device and port", "%s port %s" % (rail["device"], rail.get("port"))))
    return [(what, value) for what, value in keys if value not in (None, "")]


def duplicate_rail_problems(rails, name="health_rails"):
    """Two rails that name the same rail, netdev or RDMA port: the sampler would export one series twice."""
    found = []
    first = {}
    for index, rail in enumerate(rails):
        for what, value in _rail_keys(rail) if isinstance(rail, dict) else []:
            key = (what, str(value))
            if key in first:
                found.append("%s[%d] and %s[%d] both name %s %s: each rail is listed once"
                             % (name, first[key], name, index, what, value))
            else:
                first[key] = index
    return found


def target_label_problems(labels, name="health_target_labels"):
    """What is wrong with a host's scrape-target labels: each must be a Prometheus label name (and not one the
    health series carry themselves) with a value on one line."""
    if labels in (None, ""):
        return []
    if not isinstance(labels, dict):
        return ["%s must be a mapping of label names to values" % name]
    found = []
    for key, value in labels.items():
        if _has_line_break(value) or _has_line_break(key):
            found.append("%s.%s: a target label must not hold a line break" % (name, key))
        elif not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", str(key)) or str(key).startswith("__"):
            found.append("%s.%s: not a Prometheus label name" % (name, key))
        elif key in RESERVED_TARGET_LABELS:
            found.append("%s.%s: the health series carry this label themselves (reserved: %s)"
                         % (name, key, ", ".join(sorted(RESERVED_TARGET_LABELS))))
        elif not isinstance(value, (str, int, float)) or isinstance(value, bool):
            found.append("%s.%s: %r is not a text or a number" % (name, key, value))
    return found


# Alertmanager's route timings: (lowest, highest) seconds. group_wait may be 0 (send at once); a repeat more often
# than a minute would re-send every drain alert to the remediation loop without end.
ALERTMANAGER_TIMING_RANGES = {"group_wait": (0, 3600), "group_interval": (1, 86400), "repeat_interval": (60, 7 * 86400)}


def alertmanager_timing_problems(timing, name="health_alertmanager_%s"):
    """What is wrong with Alertmanager's route timings (a dict of group_wait, group_interval, repeat_interval),
    each named as name % key."""
    found = []
    for key, value in sorted(timing.items()):
        where = name % key
        if key not in ALERTMANAGER_TIMING_RANGES:
            found.append("%s: unknown Alertmanager timing (known: %s)" % (where, ", ".join(sorted(ALERTMANAGER_TIMING_RANGES))))
            continue
        low, high = ALERTMANAGER_TIMING_RANGES[key]
        problem = _duration_problem(where, value, low, high, "%ds to %ds" % (low, high))
        if problem:
            found.append(problem)
    return found


def monitoring_problems(settings):
    """What is wrong with the monitoring side's variables (playbooks/monitoring.yml), each naming its variable."""
    found = alertmanager_timing_problems({key: settings.get("health_alertmanager_" + key)
                                          for key in ALERTMANAGER_TIMING_RANGES})
    found += path_problems("health_monitoring_dir", settings.get("health_monitoring_dir"), what="directory")
    for name in ("health_monitoring_scrape_interval", "health_monitoring_evaluation_interval"):
        problem = _duration_problem(name, settings.get(name), 1, 3600, "1s to 1h")
        if problem:
            found.append(problem)
    return found + _window_scrape_problems(settings.get("health_thresholds") or {},
                                           settings.get("health_monitoring_scrape_interval")) + service_problems(settings)


def _window_scrape_problems(thresholds, scrape_interval):
    """Each window threshold at least two scrape intervals long (increase() needs two samples inside the window).
    Values that are no durations are named by their own checks."""
    found = []
    for key in WINDOW_THRESHOLDS:
        window = thresholds.get(key, health_rules.DEFAULT_THRESHOLDS[key]) if isinstance(thresholds, dict) else None
        try:
            window_seconds, scrape_seconds = (health_rules.duration_seconds(window),
                                              health_rules.duration_seconds(scrape_interval))
        except ValueError:
            continue
        if 0 < window_seconds < 2 * scrape_seconds:
            found.append("health_thresholds.%s: %s is shorter than two scrapes of health_monitoring_scrape_interval "
                         "(%s): increase() needs two samples inside the window, so most flaps would go unseen; make "
                         "it at least %gs" % (key, window, scrape_interval, 2 * scrape_seconds))
    return found


_LISTEN_ADDRESS = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*):([0-9]{1,5})")
WEB_CONFIG_KEYS = ("tls_server_config", "basic_auth_users", "http_server_config")
CLIENT_KEYS = ("username", "password", "ca_file", "server_name")


def _web_config_problems(name, config):
    if not isinstance(config, dict):
        return ["%s must be a mapping (Prometheus's web configuration: %s)" % (name, ", ".join(WEB_CONFIG_KEYS))]
    found = ["%s.%s: not a web configuration key (%s)" % (name, key, ", ".join(WEB_CONFIG_KEYS))
             for key in config if key not in WEB_CONFIG_KEYS]
    tls = config.get("tls_server_config")
    if tls is not None and not (isinstance(tls, dict) and tls.get("cert_file") and tls.get("key_file")):
        found.append("%s.tls_server_config: needs cert_file and key_file" % name)
    users = config.get("basic_auth_users")
    if users is not None and not isinstance(users, dict):
        found.append("%s.basic_auth_users: must map user names to bcrypt hashes" % name)
    elif users:
        # The value is not shown: a hash is a secret's stand-in, and a pasted password would be the secret.
        found += ["%s.basic_auth_users.%s: must be a bcrypt hash ($2y$...), not a password" % (name, user)
                  for user, hashed in users.items() if not re.fullmatch(r"\$2[aby]\$[0-9]{2}\$[./A-Za-z0-9]{53}",
                                                                        str(hashed))]
    return found


def service_problems(settings):
    """The monitoring services' variables: listen addresses, web configurations, Prometheus's credentials for
    Alertmanager and the remediation webhook's token (never shown)."""
    found = []
    for name in ("health_prometheus_listen_address", "health_alertmanager_listen_address"):
        value = settings.get(name)
        match = _LISTEN_ADDRESS.fullmatch(value) if isinstance(value, str) else None
        if not match or not 1 <= int(match.group(2)) <= 65535:
            found.append("%s: %r is not host:port (127.0.0.1:9090, [::1]:9090, 0.0.0.0:9090)" % (name, value))
    for name in ("health_prometheus_web_config", "health_alertmanager_web_config"):
        found += _web_config_problems(name, settings.get(name) or {})
    client = settings.get("health_alertmanager_client") or {}
    if not isinstance(client, dict):
        return found + ["health_alertmanager_client must be a mapping (%s)" % ", ".join(CLIENT_KEYS)]
    found += ["health_alertmanager_client.%s: unknown (known: %s)" % (key, ", ".join(CLIENT_KEYS))
              for key in client if key not in CLIENT_KEYS]
    if bool(client.get("username")) != bool(client.get("password")):
        found.append("health_alertmanager_client: username and password go together")
    am_web = settings.get("health_alertmanager_web_config") or {}
    if isinstance(am_web, dict) and am_web.get("basic_auth_users") and settings.get("health_monitoring_run_prometheus") \
            and not client.get("username"):
        found.append("health_alertmanager_client: Alertmanager wants basic auth (health_alertmanager_web_config."
                     "basic_auth_users), so Prometheus needs a username and password to send it alerts")
    found += path_problems("health_alertmanager_webhook_ca_file", settings.get("health_alertmanager_webhook_ca_file", ""),
                           allow_empty=True, what="file")
    problem = bearer_token_problem("health_alertmanager_webhook_token", settings.get("health_alertmanager_webhook_token"))
    return found + ([problem] if problem else [])


def expected_state(host, rails, interval, command_interval, textfile, bonds=(), uplinks=(), ipsec=(), pcie=(),
                   qos_interval=None):
    """The expected-state document gpufabric-health reads (health_sample.SCHEMA_VERSION)."""
    return {
        "version": 1,
        "host": host,
        "interval": interval,
        "command_interval": command_interval,
        "qos_interval": qos_interval or command_interval,
        "textfile": textfile,
        "rails": [dict(rail) for rail in rails],
        "pcie": [dict(item) for item in pcie],
        "bonds": [{"bond": bond["name"], "members": list(bond.get("members") or [])} for bond in bonds],
        "bgp_peers": [{"peer": uplink.get("peer") or uplink["interface"], "interface": uplink["interface"],
                       "leaf": uplink.get("leaf")} for uplink in uplinks],
        "bfd_peers": [{"peer": uplink.get("peer") or uplink["interface"], "interface": uplink["interface"],
                       "leaf": uplink.get("leaf")} for uplink in uplinks if uplink.get("bfd", True)],
        "ipsec": [{"peer": item["peer"], "ike": item["ike"], "child": item["child"]}
                  for item in ipsec if not item.get("absent")],
    }


def listen_address(name, resolve=socket.getaddrinfo):
    """The address node_exporter listens on, asked on the host itself: name when it is an IP address of this host,
    else the first address name resolves to that is one of this host's (the inventory's ansible_host is often a DNS
    name of the management interface). ValueError, naming what was tried, when none is."""
    if _is_ip(name):
        candidates = [name]
    else:
        try:
            candidates = list(dict.fromkeys(info[4][0] for info in resolve(name, None, 0, socket.SOCK_STREAM)))
        except (OSError, UnicodeError) as exc:
            raise ValueError("health_listen_address: %r does not resolve on this host (%s)" % (name, exc))
    for address in candidates:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        try:
            # Binding succeeds only for an address configured on this host: node_exporter would fail on any other.
            with socket.socket(family, socket.SOCK_STREAM) as probe:
                probe.bind((address, 0))
        except OSError:
            continue
        return address
    raise ValueError("health_listen_address: %r (%s) is not an address of this host"
                     % (name, ", ".join(candidates) or "no address"))


def ipsec_expected(host, members, gateways=(), revoked=(), prefix=swanctl_mesh.CONNECTION_PREFIX):
    """The CHILD SAs the ipsec role's mesh gives this host (peer, ike, child), from the inventory alone: every
    other member of the mesh group and every gateway, less the revoked hosts; [] when the host is no member.
    The connection names are swanctl_mesh's."""
    if host not in (members or []):
        return []
    peers = sorted(set(members) - {host}) + [gateway for gateway in gateways or [] if gateway not in members]
    return [{"peer": peer, "ike": swanctl_mesh.connection_name(prefix, peer),
             "child": swanctl_mesh.connection_name(prefix, peer)}
            for peer in peers if peer not in set(revoked or [])]


def _pci_address(value):
    """sysfs spells a PCI address 0000:18:00.0 (lower case, 4-digit domain); nvidia-smi 00000000:18:00.0."""
    match = re.match(r"^(?:([0-9A-Fa-f]{4,8}):)?([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])$", str(value or ""))
    if not match:
        return None
    return "%04x:%s:%s.%s" % (int(match.group(1) or "0", 16), match.group(2).lower(), match.group(3).lower(),
                              match.group(4))


def pcie_from_topology(topology):
    """The PCIe links to watch, from gpufabric_topology: every GPU and every RDMA NIC with its address, each with
    the rail it serves (topology's rails: GPU i and its nearest NIC)."""
    topology = topology or {}
    rails = topology.get("rails") or []
    by_gpu = {rail.get("gpu"): "rail%s" % rail.get("rail") for rail in rails if rail.get("gpu")}
    by_nic = {rail.get("device"): "rail%s" % rail.get("rail") for rail in rails if rail.get("device")}
    links = []
    for gpu in (topology.get("gpus") or {}).get("devices") or []:
        address = _pci_address(gpu.get("pci_bus_id"))
        if address:
            links.append({"pci": address, "device": gpu.get("name"), "kind": "gpu", "rail": by_gpu.get(gpu.get("name"))})
    for nic in (topology.get("rdma") or {}).get("devices") or []:
        address = _pci_address(nic.get("pci_address"))
        if address:
            links.append({"pci": address, "device": nic.get("name"), "kind": "nic", "rail": by_nic.get(nic.get("name"))})
    return links


def with_roce_expectations(rails, ecn_priority, trust=None, pfc_priority=None):
    """RoCE rails (Ethernet link layer on an RDMA device) expected with ECN on at ecn_priority, QoS trust `trust`
    and PFC on at pfc_priority (each None or empty: not checked); a rail that names its own roce settings keeps
    them."""
    expectations = {key: value for key, value in (("ecn_priority", ecn_priority), ("trust", trust or None),
                                                  ("pfc_priority", pfc_priority)) if value is not None}
    out = []
    for rail in rails:
        rail = dict(rail)
        if expectations and rail.get("device") and rail.get("link_layer") == "Ethernet" and "roce" not in rail:
            rail["roce"] = dict(expectations)
        out.append(rail)
    return out


def rails_from_fabric_map(fabric_map, host):
    """The host's rails as the fabric map saw them at deployment, with what each is expected to reach: the leaf the
    rail's peers reach (its plurality) and, for a rail that reached it, the port it was cabled to."""
    entry = ((fabric_map or {}).get("hosts") or {}).get(host) or {}
    rails = []
    for rail in entry.get("rails") or []:
        aligned = rail.get("aligned") is not False
        rails.append({
            "rail": "rail%s" % rail.get("rail"),
            "netdev": rail.get("netdev"),
            "device": rail.get("device"),
            "port": rail.get("port"),
            "link_layer": rail.get("link_layer"),
            "expected_rate_gbps": rail.get("rate_gbps") if rail.get("up") is not False else None,
            "leaf": rail.get("expected_switch") or rail.get("switch"),
            "leaf_port": rail.get("switch_port") if aligned else None,
        })
    return rails


def node_exporter_args(listen_address, port, textfile_dir, ethtool, web_config_file):
    """The ARGS line of Debian's /etc/default/prometheus-node-exporter."""
    args = ["--web.listen-address=%s:%d" % (("[%s]" % listen_address) if ":" in (listen_address or "") else
                                            (listen_address or ""), port),
            "--collector.textfile.directory=%s" % textfile_dir]
    if ethtool:
        args.append("--collector.ethtool")
    if web_config_file:
        args.append("--web.config.file=%s" % web_config_file)
    return 'ARGS="%s"\n' % " ".join(args)


def web_config_text(tls_cert_file, tls_key_file, basic_auth_users):
    """node_exporter's web configuration (TLS and basic auth); None when neither is asked for."""
    config = {}
    if tls_cert_file:
        config["tls_server_config"] = {"cert_file": tls_cert_file, "key_file": tls_key_file}
    if basic_auth_users:
        config["basic_auth_users"] = dict(sorted(basic_auth_users.items()))
    return json.dumps(config, indent=2, sort_keys=True) + "\n" if config else None


# Debian's prometheus-node-exporter.service runs as this user and group.
NODE_EXPORTER_GROUP = "prometheus"


def service_owner(group=NODE_EXPORTER_GROUP):
    """(root, the group) of node_exporter's web configuration, which it must read and nobody else may; None where
    the group does not exist (the package not installed yet: root keeps it)."""
    try:
        return 0, grp.getgrnam(group).gr_gid
    except KeyError:
        return None


def bin_text(lib_dir):
    return host_program.launcher_text(lib_dir, PACKAGE + ".__main__", [MANAGED, "gpufabric-health: run | once EXPECTED_STATE"])


def unit_text(bin_path, state_file, interval):
    return """# {managed}
[Unit]
Description=gpufabric.core fabric health sampler (expected against actual, for node_exporter's textfile collector)
After=network-online.target lldpd.service frr.service strongswan.service
Wants=network-online.target

[Service]
Type=notify
NotifyAccess=main
ExecStart={bin} run {state}
# However it ended (a crash, the watchdog's kill): node_exporter must not serve the last sample as if it were now.
ExecStopPost={bin} clean {state}
Restart=always
RestartSec=2
WatchdogSec={watchdog}
SyslogIdentifier=gpufabric-health
Nice=10
NoNewPrivileges=yes
ProtectHome=yes
PrivateTmp=yes

[Install]
WantedBy=multi-user.target
""".format(managed=MANAGED, bin=bin_path, state=state_file, watchdog=health_sample.watchdog_seconds(interval))


def desired_files(params):
    """file_transaction entries in install order: the package (collection module_utils under
    ansible_collections/gpufabric/core/plugins/module_utils, the program under gpufabric_health), the command, the
    expected state, node_exporter's files, the unit last."""
    lib = params["lib_dir"]
    files = host_program.entries(lib, params["module_utils"], params["package"], PACKAGE)
    files.append({"path": params["bin_path"], "content": bin_text(lib), "mode": 0o755})
    files.append({"path": params["state_file"], "mode": 0o644,
                  "content": json.dumps(params["expected_state"], indent=1, sort_keys=True) + "\n"})
    web = web_config_text(params.get("tls_cert_file"), params.get("tls_key_file"), params.get("basic_auth_users"))
    files.append({"path": params["web_config_file"], "content": web, "mode": 0o640, "secret": True,
                  "owner": service_owner()})
    files.append({"path": params["node_exporter_defaults_file"], "mode": 0o644,
                  "content": "# %s\n" % MANAGED + node_exporter_args(
                      params["listen_address"], params["port"], params["textfile_dir"], params["ethtool"],
                      params["web_config_file"] if web else None)})
    files.append({"path": params["unit_file"], "mode": 0o644,
                  "content": unit_text(params["bin_path"], params["state_file"], params["expected_state"]["interval"])})
    return files


def directories(params):
    return host_program.directories(params["lib_dir"], params["module_utils"], PACKAGE) + [(params["textfile_dir"], 0o755)]
