"""The remediation lab's moving parts, for the scenario's verifier and for benchmarks/bench_remediation.py: the
rulebook started and stopped by its PID, cables pulled and put back, alerts posted to Alertmanager's API exactly as
the health rules' contract shapes them, Slurm's nodes as scontrol shows them, and polls with deadlines."""

import datetime
import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / ".build" / "collections"))

from molecule_helpers import podman_exec  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.gpufabric.core.plugins.module_utils import slurm_nodes  # noqa: E402  pylint: disable=wrong-import-position

LAB = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
CTL = "remediation-ctl"
PREFIX = "gpufabric:"
# inventory host -> (Slurm node, {rail: (netdev, leaf, leaf port)}), as molecule.yml cables them.
NODES = {
    "remediation-node%d" % index: ("node%d" % index, {
        "rail0": ("eth1", "leaf-a", "swp%d" % index), "rail1": ("eth2", "leaf-b", "swp%d" % index)})
    for index in (1, 2, 3)
}
STATE_DIR = "/var/lib/gpufabric/remediation"


def address(instance):
    return (LAB / ("address-" + instance)).read_text().strip()


def poll(what, check, timeout, interval=1.0):
    """check() until it returns a true value (returned), or fail after timeout seconds naming what and the last
    value seen."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        last = check()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise AssertionError("%s: not within %d s (last seen: %r)" % (what, timeout, last))
        time.sleep(interval)


# Slurm

def scontrol_text():
    return podman_exec(CTL, "scontrol show node")


def nodes():
    return {node["name"]: node for node in slurm_nodes.parse_scontrol_nodes(scontrol_text())}


def drain_by_hand(node, reason):
    podman_exec(CTL, "scontrol update NodeName=%s State=DRAIN 'Reason=%s'" % (node, reason))


def resume_by_hand(node):
    podman_exec(CTL, "scontrol update NodeName=%s State=RESUME" % node)


def ledger():
    text = podman_exec(CTL, "cat %s/ledger.json 2>/dev/null || true" % STATE_DIR)
    return json.loads(text) if text.strip() else {"counters": {}, "nodes": {}, "recent": []}


# Cables

def cable(host, rail, up):
    netdev = NODES[host][1][rail][0]
    podman_exec(host, "ip link set %s %s" % (netdev, "up" if up else "down"))


# Alertmanager

def alertmanager(path, body=None):
    url = "http://%s:9093%s" % (address(CTL), path)
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode()
    return json.loads(text) if text else None


def now_rfc3339(offset=0.0):
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def node_alert(host, rail, alertname="GpufabricPortDown"):
    """A node alert as the health rules emit it (contract: docs/remediation.md)."""
    netdev, leaf, leaf_port = NODES[host][1][rail]
    return {"labels": {"alertname": alertname, "gpufabric_scope": "node", "gpufabric_remediation": "drain",
                       "severity": "page", "host": host, "rail": rail, "netdev": netdev, "leaf": leaf,
                       "leaf_port": leaf_port},
            "annotations": {"summary": "%s %s (%s), cabled to %s port %s is down" % (host, rail, netdev, leaf, leaf_port),
                            "expected": "port up", "actual": "port down"}}


def leaf_alert(leaf, rail):
    return {"labels": {"alertname": "GpufabricLeafDown", "gpufabric_scope": "leaf", "gpufabric_remediation": "report",
                       "severity": "page", "leaf": leaf, "rail": rail},
            "annotations": {"summary": "%s is down on 3 hosts behind leaf %s" % (rail, leaf),
                            "expected": "the leaf's ports up", "actual": "3 hosts' ports down"}}


def fire(alerts, starts_at):
    alertmanager("/api/v2/alerts", [dict(alert, startsAt=starts_at) for alert in alerts])


def resolve(alerts, starts_at):
    alertmanager("/api/v2/alerts", [dict(alert, startsAt=starts_at, endsAt=now_rfc3339()) for alert in alerts])


def active_alerts(**labels):
    query = "&".join("filter=%s" % urllib.parse.quote('%s="%s"' % item) for item in sorted(labels.items()))
    return alertmanager("/api/v2/alerts?active=true&silenced=true&inhibited=true" + ("&" + query if query else ""))


# Prometheus

def prometheus_query(expression):
    url = "http://%s:9090/api/v1/query?query=%s" % (address(CTL), urllib.parse.quote(expression))
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read().decode())["data"]["result"]


# The rulebook, this machine's process

class Rulebook:
    """ansible-rulebook with the collection's rulebook on the scenario's inventory, its webhook on this machine's
    address on the scenario's network; started and stopped by its PID (its own process group: its playbook runs)."""

    def __init__(self, port, log):
        self.port = port
        self.log = log
        self.host = (LAB / "webhook-host").read_text().strip()
        self.proc = None

    def answering(self):
        try:
            urllib.request.urlopen("http://%s:%d/" % (self.host, self.port), timeout=2)
        except urllib.error.HTTPError:
            return True  # 405: the webhook answers (it takes POST only)
        except OSError:
            return False
        return True

    def start(self, timeout=120):
        # Another process on the port would take the alerts and this one would exit: refuse to start instead.
        assert not self.answering(), "something already listens on %s:%d" % (self.host, self.port)
        variables = LAB / "rulebook-vars.json"
        variables.write_text(json.dumps({"remediation_webhook_host": self.host, "remediation_webhook_port": self.port}))
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"),
                   ANSIBLE_ROLES_PATH=str(ROOT / "roles"), ANSIBLE_NOCOLOR="1")
        inventory = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
        with open(self.log, "a") as out:
            self.proc = subprocess.Popen(
                ["ansible-rulebook", "-v", "-r", "gpufabric.core.remediation", "-i", inventory, "--vars", str(variables)],
                cwd=str(LAB), env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

        def listening():
            assert self.proc.poll() is None, "ansible-rulebook exited: %s" % Path(self.log).read_text()[-3000:]
            return self.answering()
        poll("ansible-rulebook's webhook on %s:%d" % (self.host, self.port), listening, timeout, interval=0.5)
        return self

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)
