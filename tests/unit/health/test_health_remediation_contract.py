"""The health alerts as the remediation loop receives them (the label contract of docs/alerts.md): every label set that
promtool proves the rules emit (test_health_rules.CASES) is sent, firing and resolved, through the rulebook's own
conditions (extensions/eda/rulebooks/remediation.yml, parsed by ansible-rulebook into the AST its rule engine runs)
and through the remediation's own reading of an alert (module_utils/remediation.classify), and through the generated
Alertmanager route (amtool): node alerts with gpufabric_remediation drain drain their host when firing and return it
when resolved; leaf and rail alerts make a fabric report; informational ones reach neither the loop nor its
receiver."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from test_health_rules import CASES

from ansible_collections.gpufabric.core.plugins.module_utils.health import rules as health_rules, remediation

rules_parser = pytest.importorskip("ansible_rulebook.rules_parser")
json_generator = pytest.importorskip("ansible_rulebook.json_generator")

RULEBOOK = Path(__file__).resolve().parents[3] / "extensions" / "eda" / "rulebooks" / "remediation.yml"
RULEBOOK_VARS = {"remediation_webhook_host": "127.0.0.1", "remediation_webhook_port": 5000}
DRAIN_RULE = "A node's fabric fault fires - drain the node"
RETURN_RULE = "A node's fabric fault resolved - re-verify the node, return it to service"
REPORT_RULE = "A leaf or a rail is down - report it, drain nothing"


def rulebook_conditions():
    """[(rule name, condition AST)] as ansible-rulebook hands them to its rule engine."""
    data = yaml.safe_load(RULEBOOK.read_text())
    rulesets = json_generator.generate_dict_rulesets(rules_parser.parse_rule_sets(data, RULEBOOK_VARS), RULEBOOK_VARS)
    return [(rule["Rule"]["name"], rule["Rule"]["condition"]) for rule in rulesets[0]["RuleSet"]["rules"]]


def event_value(event, path):
    for key in path.split("."):
        if not isinstance(event, dict) or key not in event:
            return None
        event = event[key]
    return event


def holds(node, event):
    """The AST's node against one event: the forms the remediation rulebook uses, anything else refused."""
    (kind, body), = node.items()
    if kind == "AllCondition":
        return all(holds(item, event) for item in body)
    if kind == "AndExpression":
        return holds(body["lhs"], event) and holds(body["rhs"], event)
    if kind == "OrExpression":
        return holds(body["lhs"], event) or holds(body["rhs"], event)
    if kind in ("EqualsExpression", "NotEqualsExpression"):
        (side, path), = body["lhs"].items()
        (_type, value), = body["rhs"].items()
        assert side == "Event", body
        return (event_value(event, path) == value) == (kind == "EqualsExpression")
    raise AssertionError("a condition form this test does not evaluate: %s" % kind)


def emitted_label_sets():
    """Each alert's label sets as promtool checks the rules emit them."""
    found = {}
    for _series, tests in CASES.values():
        for test in tests:
            for alert in test["exp_alerts"]:
                found.setdefault(test["alertname"], []).append(alert["exp_labels"])
    return found


def webhook_alert(labels, status):
    """One alert of Alertmanager's webhook (payload version 4) after eda.builtin.event_splitter."""
    return {"status": status, "labels": labels, "annotations": {"summary": "test"},
            "startsAt": "2026-12-04T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z", "fingerprint": "0"}


LABEL_SETS = [(name, labels) for name, sets in sorted(emitted_label_sets().items()) for labels in sets]


def test_every_alert_the_rules_hold_is_checked_here():
    assert {name for name, _labels in LABEL_SETS} == set(health_rules.alert_names(health_rules.rule_groups()))


@pytest.mark.parametrize("name, labels", LABEL_SETS, ids=[name for name, _labels in LABEL_SETS])
def test_the_rulebook_and_the_loop_act_on_each_alert_as_its_labels_say(name, labels):
    assert labels["alertname"] == name and name.startswith("Gpufabric")
    scope, action = labels["gpufabric_scope"], labels["gpufabric_remediation"]
    assert labels["severity"] in ("page", "warning", "info")
    assert (scope, action) in (("node", "drain"), ("node", "none"), ("leaf", "report"), ("rail", "report")), labels
    conditions = rulebook_conditions()
    for status in ("firing", "resolved"):
        alert = webhook_alert(labels, status)
        fired = [rule for rule, condition in conditions if holds(condition, alert)]
        item = remediation.classify(alert)
        if action == "drain":
            assert labels["host"], labels
            assert fired == [DRAIN_RULE if status == "firing" else RETURN_RULE]
            assert (item["kind"], item["host"], item["status"]) == ("drain", labels["host"], status)
        elif action == "report":
            assert labels["leaf" if scope == "leaf" else "rail"], labels
            assert fired == [REPORT_RULE]
            assert item["kind"] == "report"
        else:
            assert fired == [] and item["kind"] == "ignore", (fired, item)


@pytest.mark.skipif(shutil.which("amtool") is None, reason="amtool (prometheus-alertmanager) is not installed")
def test_alertmanager_sends_the_loop_exactly_the_alerts_it_acts_on(tmp_path):
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(health_rules.alertmanager_config("http://127.0.0.1:5000/endpoint"),
                                   sort_keys=False))
    config = yaml.safe_load(path.read_text())
    [receiver] = [item for item in config["receivers"] if item["name"] == "gpufabric-remediation"]
    assert receiver["webhook_configs"] == [{"url": "http://127.0.0.1:5000/endpoint", "send_resolved": True}]
    for name, labels in LABEL_SETS:
        result = subprocess.run(["amtool", "config", "routes", "test", "--config.file", str(path),
                                 *("%s=%s" % item for item in sorted(labels.items()))],
                                capture_output=True, text=True, check=True)
        receivers = result.stdout.strip().split(",")
        wanted = labels["gpufabric_remediation"] in ("drain", "report")
        assert ("gpufabric-remediation" in receivers) == wanted, (name, labels, result.stdout)
