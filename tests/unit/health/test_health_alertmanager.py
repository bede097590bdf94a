"""The generated Alertmanager configuration in a real Alertmanager (Debian's prometheus-alertmanager): the leaf
alert inhibits the node alerts behind its leaf and rail, not those behind another leaf; drain alerts reach the
remediation receiver's route."""

import json
import shutil
import socket
import subprocess
import time
import urllib.request

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils import health_rules as hr

BINARY = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
pytestmark = pytest.mark.skipif(BINARY is None, reason="prometheus-alertmanager is not installed (scripts/setup.sh)")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def api(base, path, payload=None):
    request = urllib.request.Request(base + path, data=None if payload is None else json.dumps(payload).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST" if payload else "GET")
    with urllib.request.urlopen(request, timeout=5) as response:
        body = response.read()
    return json.loads(body) if body else None


@pytest.fixture
def alertmanager(tmp_path):
    config = tmp_path / "alertmanager.yml"
    # A webhook nobody listens on: delivery fails and is retried, which changes nothing about inhibition.
    config.write_text(yaml.safe_dump(hr.alertmanager_config("http://127.0.0.1:9/hook", group_wait="1s"), sort_keys=False))
    port, cluster = free_port(), free_port()
    process = subprocess.Popen([BINARY, "--config.file", str(config), "--storage.path", str(tmp_path / "data"),
                                "--web.listen-address", "127.0.0.1:%d" % port, "--cluster.listen-address", ""],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 30
    while True:
        try:
            api(base, "/api/v2/status")
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail("alertmanager did not start: %s" % process.stderr.read().decode()[-2000:])
            time.sleep(0.2)
    yield base
    process.terminate()
    process.wait(timeout=10)


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
