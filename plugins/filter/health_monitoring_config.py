# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: health_monitoring_config
short_description: Render the fabric's Prometheus targets, rules and Alertmanager configuration from the inventory
version_added: "0.1.0"
description:
  - Renders, on the controller, the texts of the monitoring side of C(gpufabric.core.health) - file_sd targets (JSON),
    the recording and alerting rules, an Alertmanager configuration (route, inhibitions, the remediation receiver)
    and a whole C(prometheus.yml) for a Prometheus this collection runs - for M(gpufabric.core.health_monitoring) to
    write. The alerts carry the labels docs/alerts.md lists (gpufabric_scope, gpufabric_remediation, severity).
options:
  _input:
    description: The hosts to scrape, each a dict with C(name) (the inventory hostname), C(address), C(port) and
      C(labels) (its C(health_target_labels)).
    type: list
    elements: dict
    required: true
  thresholds:
    description: Alert thresholds overriding the defaults (C(health_thresholds)).
    type: dict
    default: {}
  webhook_url:
    description: The remediation loop's webhook; "" routes nothing there.
    type: str
    default: ""
  scrape_interval:
    description: Scrape interval of the C(prometheus.yml).
    type: str
    default: 10s
  evaluation_interval:
    description: Evaluation interval of the rule groups and the C(prometheus.yml).
    type: str
    default: 10s
  rules_file:
    description: Path of the rule file, as C(prometheus.yml) names it.
    type: str
    default: gpufabric.rules.yml
  targets_file:
    description: Path of the file_sd file, as C(prometheus.yml) names it.
    type: str
    default: gpufabric_targets.json
  alertmanagers:
    description: Alertmanagers (host:port) the C(prometheus.yml) sends alerts to.
    type: list
    elements: str
    default: [localhost:9093]
  alertmanager_timing:
    description: The Alertmanager route's C(group_wait), C(group_interval) and C(repeat_interval) (durations such as
      10s, 1m, 4h); those not given are 10s, 1m and 4h.
    type: dict
    default: {}
  webhook_token_file:
    description: The file (on the Alertmanager host) holding the remediation webhook's bearer token, for the
      receiver's C(http_config.authorization.credentials_file); "" sends no token.
    type: str
    default: ""
  webhook_ca_file:
    description: The CA file (on the Alertmanager host) that checks an https webhook's certificate, for the
      receiver's C(http_config.tls_config.ca_file); "" for the system's CAs.
    type: str
    default: ""
  services:
    description: For a Prometheus and Alertmanager this collection runs, C(prometheus) and C(alertmanager), each
      with C(listen_address) (host:port), C(web_config) (the web configuration's content, {} for none) and
      C(web_config_file) (its path); adds the texts C(prometheus_defaults), C(alertmanager_defaults),
      C(prometheus_web) and C(alertmanager_web) (those with a web configuration). C(alertmanager) may hold
      C(client) - C(username), C(password_file), C(ca_file), C(server_name) - for the C(prometheus.yml)'s way to
      it, which then names it at its listen address (0.0.0.0 as 127.0.0.1) instead of O(alertmanagers).
    type: dict
    default: {}
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Render the monitoring files for the GPU nodes
  ansible.builtin.set_fact:
    monitoring_files: >-
      {{ [{'name': 'gpu-a01', 'address': '10.0.0.11', 'port': 9100, 'labels': {'rack': 'r01'}}]
         | gpufabric.core.health_monitoring_config(thresholds={'port_down_for': '1m'}) }}
"""

RETURN = r"""
_value:
  description: The texts, by kind.
  type: dict
  contains:
    targets:
      description: file_sd targets, JSON.
      type: str
    rules:
      description: The rule file (recording rules and alerts), YAML.
      type: str
    alertmanager:
      description: The Alertmanager configuration, YAML.
      type: str
    prometheus:
      description: A whole prometheus.yml, YAML.
      type: str
    prometheus_defaults:
      description: Debian's C(/etc/default/prometheus), with O(services).
      type: str
    alertmanager_defaults:
      description: Debian's C(/etc/default/prometheus-alertmanager), with O(services).
      type: str
    prometheus_web:
      description: Prometheus's web configuration, YAML, with O(services) and a web configuration.
      type: str
    alertmanager_web:
      description: Alertmanager's web configuration, YAML, with O(services) and a web configuration.
      type: str
"""

import json

from ansible.errors import AnsibleFilterError
from ansible_collections.gpufabric.core.plugins.module_utils.health import (
    config as health_config,
    rules as health_rules,
)

try:
    import yaml
except ImportError:  # pragma: no cover - Ansible itself needs PyYAML on the controller
    yaml = None


def health_monitoring_config(targets, thresholds=None, webhook_url="", scrape_interval="10s",
                             evaluation_interval="10s", rules_file="gpufabric.rules.yml",
                             targets_file="gpufabric_targets.json", alertmanagers=("localhost:9093",),
                             alertmanager_timing=None, webhook_token_file="", services=None,
                             webhook_ca_file=""):
    if not isinstance(targets, list) or not all(isinstance(item, dict) and item.get("name") and item.get("address")
                                                and item.get("port") for item in targets):
        raise AnsibleFilterError("gpufabric.core.health_monitoring_config: expects a list of hosts, each with name, "
                                 "address and port")
    # Plain Python values: ansible-core 2.19 hands filters tagged str subclasses, which yaml.safe_dump refuses.
    (targets, thresholds, alertmanagers, webhook_url, scrape_interval, evaluation_interval, rules_file,
     targets_file, alertmanager_timing, webhook_token_file, services) = json.loads(json.dumps([
         targets, thresholds or {}, list(alertmanagers), webhook_url or "", scrape_interval, evaluation_interval,
         rules_file, targets_file, alertmanager_timing or {}, webhook_token_file or "", services or {}]))
    if not isinstance(alertmanager_timing, dict):
        raise AnsibleFilterError("gpufabric.core.health_monitoring_config: alertmanager_timing must be a mapping")
    alertmanager_client = {}
    if "alertmanager" in services:
        alertmanager = services["alertmanager"]
        alertmanagers = [health_rules.local_address(alertmanager["listen_address"])]
        alertmanager_client = health_rules.alertmanager_client(alertmanager.get("web_config"),
                                                               **alertmanager.get("client", {}))
    problems = health_config.threshold_problems(thresholds) + health_config.alertmanager_timing_problems(
        alertmanager_timing, "alertmanager_timing.%s")
    if problems:
        raise AnsibleFilterError("gpufabric.core.health_monitoring_config: %s" % "; ".join(problems))
    try:
        data = health_rules.monitoring_config(
            targets, thresholds=dict(thresholds or {}), webhook_url=webhook_url, scrape_interval=scrape_interval,
            evaluation_interval=evaluation_interval, rules_file=rules_file, targets_file=targets_file,
            alertmanagers=list(alertmanagers), alertmanager_timing=alertmanager_timing,
            webhook_token_file=webhook_token_file or None, alertmanager_client=alertmanager_client,
            webhook_ca_file=webhook_ca_file or None)
    except (KeyError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("gpufabric.core.health_monitoring_config: %s" % exc)

    def as_yaml(value):
        return "# Ansible managed: gpufabric.core health_monitoring_config\n" + yaml.safe_dump(
            value, sort_keys=False, default_flow_style=False, width=1000)

    texts = {"targets": json.dumps(data["targets"], indent=2) + "\n", "rules": as_yaml(data["rules"]),
             "alertmanager": as_yaml(data["alertmanager"]), "prometheus": as_yaml(data["prometheus"])}
    for name, service in sorted(services.items()):
        web_config = service.get("web_config") or None
        texts[name + "_defaults"] = "# Ansible managed: gpufabric.core health_monitoring_config\n" + \
            health_rules.service_defaults(service["listen_address"], web_config and service["web_config_file"],
                                          alertmanager=name == "alertmanager")
        if web_config:
            texts[name + "_web"] = as_yaml(web_config)
    return texts


class FilterModule:
    """The health_monitoring_config filter."""

    def filters(self):
        return {"health_monitoring_config": health_monitoring_config}
