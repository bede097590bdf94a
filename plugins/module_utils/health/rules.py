# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller side of the health checks: Prometheus file_sd targets, recording and alerting rules, and the
Alertmanager route and inhibitions, from the inventory and the fabric map. Pure functions returning data; the
playbook writes them (YAML) where the user's Prometheus and Alertmanager read them.

Every alert carries the labels of the contract with the remediation loop (docs/alerts.md): alertname
Gpufabric<What>, gpufabric_scope node|leaf|rail, gpufabric_remediation drain|report|none, severity
page|warning|info, and the series' own host, rail, netdev, device, port, leaf, leaf_port; annotations summary,
expected and actual.

Hysteresis, in DEFAULT_THRESHOLDS (each overridable through health_thresholds), for the default intervals: the
sampler every 5 s, Prometheus scraping and evaluating every 10 s (the generated prometheus.yml):
- a port down for port_down_for (10 s): seen down by two evaluations in a row, so that a carrier blip shorter than
  one evaluation does not page, while a link that is really down pages in 20-35 s (sample, scrape and evaluation
  delays added; benchmarks/bench_health.py measures it), within the 30 s target for its median;
- a port that changed state flap_changes (4) times within flap_window (5m): "fails twice within 5 minutes" is two
  downs and two ups, a flap that pages even though each down healed before port_down_for;
- more than one lost carrier in 6 hours (carrier changes > 2 in 6h: a second down within 6 h) is a warning;
- the leaf alert (the same rail down on leaf_min_hosts (2) or more hosts and at least half of the hosts behind one
  leaf) waits leaf_down_for (0s): it fires at the first evaluation that sees the ports down, one evaluation before
  the node alerts it inhibits, so that Alertmanager holds those back before it sends them;
- a bond member out of LACP sync waits bond_for (10 s), as a port does: a lost partner is a lost link;
- BGP and BFD wait routing_for (30 s): BFD itself detects in under a second, a session that does not come back in
  30 s is not a restart;
- cabling, PCIe, rate and QoS alerts wait 1-5 minutes: they do not heal by themselves and a renegotiation takes
  seconds; "cannot see" waits cannot_see_for (2m).
"""

from __future__ import annotations

import re

RULES_GROUP = "gpufabric"
# Prometheus's duration grammar (common/model ParseDuration: rule `for`, range selectors, Alertmanager, scrape
# intervals): units from years to milliseconds, each at most once and in that order, ASCII digits; "0" alone too.
_DURATION = re.compile(r"(?:([0-9]+)y)?(?:([0-9]+)w)?(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?"
                       r"(?:([0-9]+)ms)?")
_DURATION_UNITS = (365 * 86400, 7 * 86400, 86400, 3600, 60, 1, 0.001)

DEFAULT_THRESHOLDS = {
    "port_down_for": "10s",
    "leaf_down_for": "0s",
    "leaf_min_hosts": 2,
    "leaf_min_ratio": 0.5,
    "flap_changes": 4,
    "flap_window": "5m",
    "carrier_lost_changes_6h": 2,
    "rate_low_for": "2m",
    "cabling_for": "1m",
    "lldp_extra_for": "5m",
    "pcie_for": "5m",
    "bond_for": "10s",
    "routing_for": "30s",
    "ipsec_for": "1m",
    "qos_for": "5m",
    "pause_frames_per_second": 1000,
    "cannot_see_for": "2m",
    "stale_after_seconds": 60,
}

_NODE_LABELS = "host, rail, netdev, device, port, leaf, leaf_port"

# A series' host is its scrape target's (the file_sd label), never the one the node sends: without honor_labels a
# host label in the node's text is renamed exported_host (and instance, job and the inventory's target labels
# alike), and those claims are dropped here, so that a node serving gpufabric_port_up{host="node20"} speaks for itself.
IDENTITY_FROM_TARGET = [{"action": "labeldrop", "regex": "exported_.+"}]


def duration_seconds(text):
    """Seconds of a Prometheus duration ('30s' -> 30, '1h30m' -> 5400); ValueError for anything else (a number
    without a unit, '1_000s', other scripts' digits, a trailing newline)."""
    if text == "0":
        return 0
    match = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if not match or not any(match.groups()):
        raise ValueError("%r is not a duration such as 30s, 5m, 1h30m or 1d (Prometheus's grammar, ASCII digits)"
                         % (text,))
    return sum(int(number) * unit for number, unit in zip(match.groups(), _DURATION_UNITS) if number is not None)


# The scrape job of the nodes' node_exporter (prometheus_config's, and the one docs/alerts.md asks users to add).
SCRAPE_JOB = "gpufabric"
_ABSENT = '{{ if eq $labels.gpufabric_sample "absent" }}'
_STALE_WHAT = _ABSENT + "has written no sample{{ else }}has written no new sample for {{ $value | humanizeDuration }}{{ end }}"
_STALE_ACTUAL = (_ABSENT + "no textfile (the sampler stopped, failed or never ran){{ else }}the last sample "
                 "{{ $value | humanizeDuration }} old{{ end }}")


def _stale_expr(stale_after_seconds):
    """A node_exporter that answers without the sampler's series (the sampler removes its textfile when it fails or
    stops), or with a sample older than stale_after_seconds; label gpufabric_sample says which."""
    absent = ('up{job="%s"} == 1 unless on (host) gpufabric_health_sample_timestamp_seconds' % SCRAPE_JOB)
    stale = "(time() - gpufabric_health_sample_timestamp_seconds) > %d" % stale_after_seconds
    return ('label_replace(%s, "gpufabric_sample", "absent", "", "") or label_replace(%s, "gpufabric_sample", '
            '"stale", "", "")' % (absent, stale))


def _alert(name, expr, duration, scope, remediation, severity, summary, expected, actual):
    return {
        "alert": name,
        "expr": expr,
        "for": duration,
        "labels": {"gpufabric_scope": scope, "gpufabric_remediation": remediation, "severity": severity},
        "annotations": {"summary": summary, "expected": expected, "actual": actual},
    }


def rule_groups(thresholds=None, evaluation_interval=None):
    """The rule file's groups: recording rules (leaf and rail roll-ups) and every alert."""
    t = dict(DEFAULT_THRESHOLDS, **(thresholds or {}))
    where = ("{{ $labels.host }} {{ $labels.rail }} ({{ $labels.netdev }}"
             "{{ if $labels.device }}, {{ $labels.device }} port {{ $labels.port }}{{ end }}), "
             "cabled to {{ $labels.leaf }}{{ if $labels.leaf_port }} port {{ $labels.leaf_port }}{{ end }}")
    recording = [
        {"record": "gpufabric:leaf_rail_ports:count", "expr": "count by (leaf, rail) (gpufabric_port_up{leaf!=\"\"})"},
        {"record": "gpufabric:leaf_rail_ports_down:count",
         "expr": "count by (leaf, rail) (gpufabric_port_up{leaf!=\"\"} == 0)"},
        {"record": "gpufabric:leaf_rail_ports_down:ratio",
         "expr": "gpufabric:leaf_rail_ports_down:count / gpufabric:leaf_rail_ports:count"},
        {"record": "gpufabric:rail_ports_down:count", "expr": "count by (rail) (gpufabric_port_up == 0)"},
        {"record": "gpufabric:leaf_down",
         "expr": "gpufabric:leaf_rail_ports_down:count >= %d and gpufabric:leaf_rail_ports_down:ratio >= %s"
                 % (t["leaf_min_hosts"], t["leaf_min_ratio"])},
    ]
    alerts = [
        _alert("GpufabricPortDown", "gpufabric_port_up == 0", t["port_down_for"], "node", "drain", "page",
               "%s is down" % where, "port up", "port down for over %s" % t["port_down_for"]),
        _alert("GpufabricPortFlapping",
               "increase(gpufabric_port_state_changes_total[%s]) >= %d" % (t["flap_window"], t["flap_changes"]),
               "0s", "node", "drain", "page", "%s fails repeatedly" % where,
               "a stable link", "{{ $value | printf \"%%.0f\" }} state changes within %s" % t["flap_window"]),
        _alert("GpufabricPortCarrierLost",
               "increase(gpufabric_port_state_changes_total[6h]) > %d" % t["carrier_lost_changes_6h"], "0s",
               "node", "drain", "warning", "%s lost its carrier more than once in 6 hours" % where,
               "at most one lost carrier in 6 hours", "{{ $value | printf \"%.0f\" }} state changes in 6 hours"),
        _alert("GpufabricPortRateLow",
               "gpufabric_port_rate_bytes_per_second < on (%s) gpufabric_port_expected_rate_bytes_per_second"
               % _NODE_LABELS.replace(" ", ""), t["rate_low_for"], "node", "drain", "warning",
               "%s runs below its expected rate" % where,
               "{{ with printf \"gpufabric_port_expected_rate_bytes_per_second{host='%s',rail='%s'}\" "
               "$labels.host $labels.rail | query }}{{ . | first | value | humanize }}B/s{{ end }}",
               "{{ $value | humanize }}B/s"),
        _alert("GpufabricPcieLinkDegraded",
               "gpufabric_pcie_link_width < on (host, pci, device, kind, rail) gpufabric_pcie_link_expected_width "
               "or gpufabric_pcie_link_speed_transfers_per_second < on (host, pci, device, kind, rail) "
               "gpufabric_pcie_link_expected_speed_transfers_per_second",
               t["pcie_for"], "node", "drain", "warning",
               "{{ $labels.host }} {{ $labels.kind }} {{ $labels.device }} ({{ $labels.pci }}) trained its PCIe link below what it and its slot can do",
               "the lower of the device's and its upstream port's maximum width and speed",
               "{{ $value }} ({{ $labels.__name__ }})"),
        _alert("GpufabricCablingMismatch", "gpufabric_lldp_neighbour_ok == 0", t["cabling_for"], "node", "drain",
               "warning", "%s reaches {{ $labels.seen_leaf }} port {{ $labels.seen_port }} instead" % where,
               "{{ $labels.leaf }}{{ if $labels.leaf_port }} port {{ $labels.leaf_port }}{{ else }}, any port{{ end }}",
               "{{ $labels.seen_leaf }} port {{ $labels.seen_port }}"),
        # Not drained: the leaf the alert names may still be the right one; what sits in between is for a person.
        _alert("GpufabricLldpExtraNeighbour", "gpufabric_lldp_neighbours > 1", t["lldp_extra_for"], "node", "none",
               "warning", "%s hears {{ $value }} LLDP neighbours on one port" % where,
               "one LLDP neighbour, the leaf", "{{ $value }} neighbours"),
        _alert("GpufabricBondPartnerLost", "gpufabric_bond_member_in_sync == 0", t["bond_for"], "node", "drain",
               "warning", "{{ $labels.host }} bond {{ $labels.bond }} member {{ $labels.netdev }} has no LACP partner in sync",
               "member in the active aggregator, in sync, collecting and distributing", "not in sync"),
        _alert("GpufabricBgpPeerDown", "gpufabric_bgp_peer_established == 0", t["routing_for"], "node", "drain",
               "warning", "{{ $labels.host }} BGP session with {{ $labels.leaf }} ({{ $labels.peer }}) is not Established",
               "Established", "not Established"),
        _alert("GpufabricBfdPeerDown", "gpufabric_bfd_peer_up == 0", t["routing_for"], "node", "drain", "warning",
               "{{ $labels.host }} BFD session with {{ $labels.leaf }} ({{ $labels.peer }} on {{ $labels.netdev }}) is down",
               "up", "down"),
        _alert("GpufabricIpsecSaMissing", "gpufabric_ipsec_child_sa_installed == 0", t["ipsec_for"], "node", "drain",
               "warning", "{{ $labels.host }} has no installed IPsec CHILD SA {{ $labels.child }} with {{ $labels.peer }}",
               "CHILD SA installed", "missing"),
        _alert("GpufabricRoceEcnOff", "gpufabric_roce_ecn_enabled == 0", t["qos_for"], "node", "drain", "warning",
               "%s has ECN off at the {{ $labels.point }} point of priority {{ $labels.priority }}" % where,
               "ECN on", "ECN off"),
        _alert("GpufabricRoceTrustMismatch", "gpufabric_roce_trust_ok == 0", t["qos_for"], "node", "drain", "warning",
               "%s trusts {{ $labels.seen_trust }} for QoS, not {{ $labels.trust }}" % where,
               "trust {{ $labels.trust }}", "trust {{ $labels.seen_trust }}"),
        # Not drained: PFC is mostly the switch's (DCBX) or the site's, and the rdma role does not set it, so a
        # drain would not fix it and one leaf's DCBX change would drain every node behind it.
        _alert("GpufabricRocePfcOff", 'gpufabric_roce_pfc_enabled{lossless="true"} == 0', t["qos_for"], "node", "none",
               "warning", "%s has PFC off on its lossless priority {{ $labels.priority }}" % where,
               "PFC on", "PFC off"),
        _alert("GpufabricPauseStorm",
               "rate(gpufabric_roce_pause_frames_total[2m]) > %s" % t["pause_frames_per_second"], "2m", "node", "none",
               "warning", "%s {{ $labels.direction }} {{ $labels.priority }} pause frames at {{ $value | humanize }}/s" % where,
               "under %s pause frames/s" % t["pause_frames_per_second"], "{{ $value | humanize }}/s"),
        _alert("GpufabricCoolingFailsafe", "gpufabric_cooling_failsafe == 1", "1m", "node", "none", "warning",
               "{{ $labels.host }} fan group {{ $labels.group }} is in fail-safe (full duty or BMC control)",
               "fans on their curve", "fail-safe"),
        _alert("GpufabricCannotSee", "gpufabric_health_source_up == 0", t["cannot_see_for"], "node", "none", "info",
               "{{ $labels.host }}: gpufabric-health cannot see {{ $labels.source }}",
               "every source readable", "unreadable"),
        # Not drained: a blind sampler says nothing about the fabric, and one bad rollout of it (or a full disk)
        # blinds every host at once: draining would empty the cluster for a monitoring fault. A person fixes it.
        _alert("GpufabricHealthStale", _stale_expr(t["stale_after_seconds"]), t["cannot_see_for"], "node", "none",
               "warning", "{{ $labels.host }}: gpufabric-health %s, so none of its alerts can fire" % _STALE_WHAT,
               "a sample every interval, the last under %ds old" % t["stale_after_seconds"], _STALE_ACTUAL),
        _alert("GpufabricLeafDown", "gpufabric:leaf_down", t["leaf_down_for"], "leaf", "report", "page",
               "{{ $labels.rail }} is down on {{ $value }} hosts behind leaf {{ $labels.leaf }}",
               "the leaf's ports up", "{{ $value }} hosts' ports down"),
        _alert("GpufabricRailDown", "count by (rail) (gpufabric:leaf_down) >= 2", t["leaf_down_for"], "rail",
               "report", "page", "{{ $labels.rail }} is down behind {{ $value }} leaves", "the rail up",
               "down behind {{ $value }} leaves"),
    ]
    # One group: its rules run in order at one evaluation, so the alerts read this evaluation's roll-ups (two groups
    # run at their own offsets, and the leaf alert could lag the node alerts it must inhibit).
    groups = [{"name": RULES_GROUP, "rules": recording + alerts}]
    if evaluation_interval:
        for group in groups:
            group["interval"] = evaluation_interval
    return {"groups": groups}


def alert_names(groups):
    return [rule["alert"] for group in groups["groups"] for rule in group["rules"] if "alert" in rule]


def alertmanager_config(webhook_url=None, receiver_default="gpufabric-default", group_wait="10s",
                        group_interval="1m", repeat_interval="4h", webhook_token_file=None, webhook_ca_file=None):
    """An Alertmanager configuration: drain/report alerts to the remediation webhook (payload version 4,
    send_resolved; with webhook_token_file, the bearer token read from that file; with webhook_ca_file, the https
    webhook's certificate checked against that CA), every alert grouped by alertname
    and scope; the leaf alert inhibits the node alerts behind its leaf, the rail alert the leaf and node alerts of
    its rail."""
    receivers = [{"name": receiver_default}]
    routes = []
    if webhook_url:
        webhook = {"url": webhook_url, "send_resolved": True}
        http_config = {}
        if webhook_token_file:
            # From a file: the token stays out of this configuration (0644, shown in diffs) and out of amtool's output.
            http_config["authorization"] = {"type": "Bearer", "credentials_file": webhook_token_file}
        if webhook_ca_file:
            http_config["tls_config"] = {"ca_file": webhook_ca_file}
        if http_config:
            webhook["http_config"] = http_config
        receivers.append({"name": "gpufabric-remediation", "webhook_configs": [webhook]})
        routes.append({"receiver": "gpufabric-remediation",
                       "matchers": ['gpufabric_remediation=~"drain|report"'], "continue": True})
    return {
        "route": {"receiver": receiver_default, "group_by": ["alertname", "gpufabric_scope", "leaf", "rail", "host"],
                  "group_wait": group_wait, "group_interval": group_interval, "repeat_interval": repeat_interval,
                  "routes": routes},
        "inhibit_rules": [
            {"source_matchers": ['alertname="GpufabricLeafDown"'], "target_matchers": ['gpufabric_scope="node"'],
             "equal": ["leaf", "rail"]},
            {"source_matchers": ['alertname="GpufabricRailDown"'],
             "target_matchers": ['gpufabric_scope=~"node|leaf"'], "equal": ["rail"]},
        ],
        "receivers": receivers,
    }


def target_address(address, port):
    """host:port as Prometheus writes a target ([v6]:port for an IPv6 address)."""
    address = str(address)
    return "[%s]:%d" % (address, int(port)) if ":" in address else "%s:%d" % (address, int(port))


def file_sd_targets(targets):
    """file_sd target groups, one per host (sorted by name): its address:port and the labels host plus the
    inventory's health_target_labels of that host (group, rack, ...). targets: dicts name, address, port, labels."""
    out = []
    for target in sorted(targets, key=lambda item: item["name"]):
        labels = {str(key): str(value) for key, value in sorted((target.get("labels") or {}).items())}
        labels["host"] = target["name"]
        out.append({"targets": [target_address(target["address"], target["port"])], "labels": labels})
    return out


def prometheus_config(rule_files, targets_file, alertmanagers, scrape_interval="10s", evaluation_interval="10s",
                      job=SCRAPE_JOB, alertmanager_client=None):
    """A whole prometheus.yml for a Prometheus this collection runs (the lab's monitoring node): one job scraping
    the file_sd targets, the rule files, and the Alertmanagers (host:port), reached with alertmanager_client (scheme,
    basic_auth, tls_config: Prometheus's alertmanager_config keys). Users who bring their own Prometheus add the job
    and the rule files to theirs instead (docs/alerts.md)."""
    alertmanager = dict(alertmanager_client or {}, static_configs=[{"targets": list(alertmanagers)}])
    return {
        "global": {"scrape_interval": scrape_interval, "evaluation_interval": evaluation_interval},
        "rule_files": list(rule_files),
        "alerting": {"alertmanagers": [alertmanager]},
        "scrape_configs": [{"job_name": job, "file_sd_configs": [{"files": [targets_file]}],
                            "metric_relabel_configs": IDENTITY_FROM_TARGET}],
    }


def service_defaults(listen_address, web_config_file=None, alertmanager=False):
    """The ARGS line of Debian's /etc/default/prometheus (or prometheus-alertmanager with alertmanager): where it
    listens, its web configuration, and for Alertmanager no cluster port (Debian's default gossips on every
    interface, unauthenticated)."""
    args = ["--web.listen-address=%s" % listen_address]
    if alertmanager:
        args.append("--cluster.listen-address=")
    if web_config_file:
        args.append("--web.config.file=%s" % web_config_file)
    return 'ARGS="%s"\n' % " ".join(args)


def alertmanager_client(web_config=None, username=None, password_file=None, ca_file=None, server_name=None):
    """How Prometheus reaches an Alertmanager with web_config: https when it serves TLS (with ca_file and
    server_name), basic auth with username and the password read from password_file."""
    client = {}
    if (web_config or {}).get("tls_server_config"):
        client["scheme"] = "https"
        tls = {key: value for key, value in (("ca_file", ca_file), ("server_name", server_name)) if value}
        if tls:
            client["tls_config"] = tls
    if username:
        client["basic_auth"] = {"username": username, "password_file": password_file}
    return client


def local_address(listen_address):
    """Where a process on the same host reaches a listen address: 0.0.0.0:9093 -> 127.0.0.1:9093."""
    host, port = listen_address.rpartition(":")[::2]
    return "%s:%s" % ({"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "": "127.0.0.1"}.get(host, host), port)


def monitoring_config(targets, thresholds=None, webhook_url=None, scrape_interval="10s", evaluation_interval="10s",
                      rules_file="gpufabric.rules.yml", targets_file="gpufabric_targets.json",
                      alertmanagers=("localhost:9093",), alertmanager_timing=None, webhook_token_file=None,
                      alertmanager_client=None, webhook_ca_file=None):
    """Everything the monitoring side needs, as data: file_sd targets, the rule file, an Alertmanager configuration
    and a whole prometheus.yml (used only where this collection runs Prometheus)."""
    return {
        "targets": file_sd_targets(targets),
        "rules": rule_groups(thresholds, evaluation_interval or None),
        "alertmanager": alertmanager_config(webhook_url or None, webhook_token_file=webhook_token_file,
                                            webhook_ca_file=webhook_ca_file,
                                            **(alertmanager_timing or {})),
        "prometheus": prometheus_config([rules_file], targets_file, alertmanagers, scrape_interval,
                                        evaluation_interval or "10s", alertmanager_client=alertmanager_client),
    }
