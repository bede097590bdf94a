"""The generated Alertmanager configuration in a real Alertmanager (Debian's prometheus-alertmanager): the leaf
alert inhibits the node alerts behind its leaf and rail, not those behind another leaf; drain alerts reach the
remediation receiver's route."""

import json
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils.health import rules as hr

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from health_lab import ALERTMANAGER, alertmanager_process  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(ALERTMANAGER is None, reason="prometheus-alertmanager is not installed (scripts/setup.sh)")


def api(base, path, payload=None):
    request = urllib.request.Request(base + path, data=None if payload is None else json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST" if payload else "GET")
    with urllib.request.urlopen(request, timeout=5) as response:
        body = response.read()
    return json.loads(body) if body else None


@pytest.fixture
def alertmanager(tmp_path):
    # A webhook nobody listens on: delivery fails and is retried, which changes nothing about inhibition.
    config = yaml.safe_dump(hr.alertmanager_config("http://127.0.0.1:9/hook", group_wait="1s"), sort_keys=False)
    with alertmanager_process(tmp_path, config) as base:
        yield base


def alert(name, scope, remediation, **labels):
    return {"labels": dict(labels, alertname=name, gpufabric_scope=scope, gpufabric_remediation=remediation, severity="page"),
            "annotations": {"summary": name}}


def test_a_leaf_alert_inhibits_the_node_alerts_behind_it(alertmanager):
    api(alertmanager, "/api/v2/alerts", [
        alert("GpufabricLeafDown", "leaf", "report", leaf="leaf-a", rail="rail0"),
        alert("GpufabricPortDown", "node", "drain", host="node1", rail="rail0", netdev="eth1", leaf="leaf-a", leaf_port="swp1"),
        alert("GpufabricPortDown", "node", "drain", host="node2", rail="rail0", netdev="eth1", leaf="leaf-a", leaf_port="swp2"),
        alert("GpufabricPortDown", "node", "drain", host="node3", rail="rail1", netdev="eth2", leaf="leaf-b", leaf_port="swp3"),
    ])
    deadline = time.monotonic() + 20
    while True:
        alerts = api(alertmanager, "/api/v2/alerts")
        states = {(a["labels"]["alertname"], a["labels"].get("host")): a["status"] for a in alerts}
        if len(states) == 4 and all(status["state"] != "unprocessed" for status in states.values()):
            break
        assert time.monotonic() < deadline, states
        time.sleep(0.2)
    assert states[("GpufabricLeafDown", None)]["state"] == "active"
    assert states[("GpufabricPortDown", "node1")]["state"] == "suppressed" and states[("GpufabricPortDown", "node1")]["inhibitedBy"]
    assert states[("GpufabricPortDown", "node2")]["state"] == "suppressed"
    assert states[("GpufabricPortDown", "node3")]["state"] == "active"  # another leaf: not inhibited
