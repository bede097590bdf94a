# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What is wrong with the remediation role's variables, checked on the controller before anything runs.

remediation_problems() takes the remediation_* variables by name after argument_specs has checked their types; it
returns one sentence per problem naming the variable. The remediation playbook's first play runs it, and so does
playbooks/check_inventory.yml, which is also what to run before starting the rulebook (the webhook's address,
port and token are checked here; the rulebook's source also refuses to start on a non-loopback address without a
token).
"""

from __future__ import annotations

import ipaddress
import re

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import (
    bearer_token_problem,
    full_match_problem,
    int_range_problem,
    path_problems,
)
from ansible_collections.gpufabric.core.plugins.module_utils.health.remediation import max_drained_problem
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.slurm_nodes import reason_prefix_problem

# An HTTP(S) base URL: scheme, host (name, IPv4 or [IPv6]), optional port and path; no query, credentials,
# whitespace or quotes (the URL is joined with the API's path and reaches argv and logs).
_URL = re.compile(r"https?://(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?(?:/[A-Za-z0-9._~/-]*)?")
_LISTEN = re.compile(r"[A-Za-z0-9.-]+|[0-9A-Fa-f:]+")
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# The state directory holds the lock and the ledger on the Slurm controller; the textfile directory is
# node_exporter's (Debian: /var/lib/prometheus/node-exporter).
STATE_UNDER = ("/var/lib", "/run", "/srv", "/opt")
TEXTFILE_UNDER = ("/var/lib", "/run", "/srv", "/opt")
# A day: a longer window keeps a node out after its fault is long fixed.
WINDOW_MAX = 86400


def _url_problem(name, value, required):
    if value in (None, ""):
        return ("%s: the remediation loop needs Alertmanager's URL (http://host:9093): it asks it which alerts "
                "still fire before a resume, and the guard pages through it" % name) if required else None
    return full_match_problem(name, value, _URL, "must be an http:// or https:// URL of Alertmanager (host, port, "
                              "path; no query, user or whitespace)")


def _is_loopback(host):
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def webhook_problems(settings):
    """The rulebook's webhook: its address, and a token wherever that is not loopback (anyone reaching an open
    webhook drains nodes); the token's value is never shown."""
    found = []
    host = settings.get("remediation_webhook_host", "127.0.0.1")
    token = settings.get("remediation_webhook_token", "")
    listen = full_match_problem("remediation_webhook_host", host, _LISTEN,
                                "must be the address (or host name) the rulebook's webhook listens on")
    if listen:
        found.append(listen)
    token_problem = bearer_token_problem("remediation_webhook_token", token)
    if token_problem:
        found.append(token_problem)
    if not listen and token in (None, "") and not _is_loopback(str(host)):
        found.append("remediation_webhook_token: required when remediation_webhook_host (%s) is not a loopback "
                     "address - anyone who reaches the webhook could drain nodes; set a token (the health role "
                     "gives it to Alertmanager's receiver) or listen on 127.0.0.1" % host)
    cert, key = (settings.get("remediation_webhook_tls_%s_file" % what, "") for what in ("cert", "key"))
    if bool(cert) != bool(key):
        found.append("remediation_webhook_tls_cert_file: goes with remediation_webhook_tls_key_file (both for https, "
                     "neither for http)")
    for name, value in (("remediation_webhook_tls_cert_file", cert), ("remediation_webhook_tls_key_file", key)):
        found += path_problems(name, value, allow_empty=True, what="file")
    for name, default, low, high in (("remediation_webhook_max_body_bytes", 262144, 1024, 16 * 1024 * 1024),
                                     ("remediation_webhook_max_queued_alerts", 64, 1, 10000)):
        problem = int_range_problem(name, settings.get(name, default), low, high,
                                    rule="must be a number from %d to %d" % (low, high))
        if problem:
            found.append(problem)
    return found


def remediation_problems(settings, groups=None):
    """Every problem with the remediation variables (a dict of name: value), one sentence each. With groups (the
    inventory's group names), remediation_peer_group must be one of them."""
    if not isinstance(settings, dict):
        return ["the remediation settings must be a dict of remediation_* variables; got %s" % type(settings).__name__]
    problems = []
    peer_group = settings.get("remediation_peer_group", "gpu_nodes")
    if groups is not None and peer_group not in groups:
        # groups[...] | default([]) would hold every alert back and find no peer, without saying why.
        problems.append("remediation_peer_group: %r is not a group of the inventory: it is the fleet, the only "
                        "hosts the loop drains and re-verifies against" % (peer_group,))
    username, password = (settings.get("remediation_alertmanager_" + key) for key in ("username", "password"))
    if bool(username) != bool(password):
        problems.append("remediation_alertmanager_username and remediation_alertmanager_password: Alertmanager's "
                        "basic auth needs both, or neither")

    def add(problem):
        if problem:
            problems.append(problem)

    add(reason_prefix_problem("remediation_reason_prefix", settings.get("remediation_reason_prefix", "gpufabric:")))
    add(max_drained_problem("remediation_max_drained", settings.get("remediation_max_drained", "10%")))
    add(int_range_problem("remediation_action_window", settings.get("remediation_action_window", 300), 0, WINDOW_MAX,
                          rule="must be a number of seconds from 0 to %d" % WINDOW_MAX))
    add(int_range_problem("remediation_reconcile_interval", settings.get("remediation_reconcile_interval", 600), 0,
                          WINDOW_MAX, rule="must be a number of seconds from 0 (no reconcile tick) to %d" % WINDOW_MAX))
    add(int_range_problem("remediation_webhook_port", settings.get("remediation_webhook_port", 5000), 1, 65535,
                          rule="must be a TCP port from 1 to 65535"))
    problems.extend(webhook_problems(settings))
    add(_url_problem("remediation_alertmanager_url", settings.get("remediation_alertmanager_url", ""), True))
    add(int_range_problem("remediation_page_for", settings.get("remediation_page_for", 3600), 60, WINDOW_MAX,
                          rule="must be a number of seconds from 60 to %d" % WINDOW_MAX))
    labels = settings.get("remediation_page_labels", {})
    if not isinstance(labels, dict):
        problems.append("remediation_page_labels: must map label names to values; got %r" % (labels,))
    else:
        for label in sorted(labels, key=str):
            if not isinstance(label, str) or not _LABEL_NAME.fullmatch(label) or label.startswith("__"):
                problems.append("remediation_page_labels: %r is not a Prometheus label name" % (label,))
            elif label in ("alertname", "gpufabric_remediation"):
                problems.append("remediation_page_labels.%s: set by the page itself (the page must never be "
                                "routed back to the loop)" % label)
            elif not isinstance(labels[label], (str, int, float)) or "\n" in str(labels[label]):
                problems.append("remediation_page_labels.%s: must be a one-line value; got %r" % (label, labels[label]))
    problems.extend(path_problems("remediation_state_dir", settings.get("remediation_state_dir",
                                                                        "/var/lib/gpufabric/remediation"),
                                  under=STATE_UNDER, what="directory"))
    textfile = settings.get("remediation_textfile_dir", "/var/lib/prometheus/node-exporter")
    if textfile is not None:
        problems.extend(path_problems("remediation_textfile_dir", textfile, under=TEXTFILE_UNDER, what="directory"))
    report_dir = settings.get("remediation_report_dir")
    if report_dir is not None and "{{" not in str(report_dir):
        problems.extend(path_problems("remediation_report_dir", report_dir, what="directory"))
    fabric_map = settings.get("remediation_fabric_map")
    if fabric_map not in (None, "") and "{{" not in str(fabric_map):
        problems.extend(path_problems("remediation_fabric_map", fabric_map, what="file"))
    return problems
