"""docs/alerts.md describes every series the sampler writes and every alert the rules hold, with the alert's scope,
remediation and severity as the rules give them."""

import re
from pathlib import Path

from ansible_collections.gpufabric.core.plugins.module_utils.health import (
    rules as health_rules,
    sample as health_sample,
)

DOC = (Path(__file__).resolve().parents[3] / "docs" / "alerts.md").read_text()


def test_every_series_has_its_line():
    listed = re.findall(r"^\| `(gpufabric_[a-z_]+)` \| (gauge|counter) \|", DOC, re.M)
    assert listed == [(name, kind) for name, kind, _help in health_sample.METRICS]


def test_every_alert_has_its_line_with_its_labels():
    rows = dict(re.findall(r"^\| `(Gpufabric[A-Za-z]+)` \| ([a-z]+, [a-z]+, [a-z]+) \|", DOC, re.M))
    rules = [rule for group in health_rules.rule_groups()["groups"] for rule in group["rules"] if "alert" in rule]
    assert rows == {rule["alert"]: "%(gpufabric_scope)s, %(gpufabric_remediation)s, %(severity)s" % rule["labels"]
                    for rule in rules}
