"""The remediation half of the health lab, for the scenario's verifier and for benchmarks/bench_remediation.py: the
rulebook started and stopped by its PID, cables pulled and put back at the leaf (the node's port loses its carrier;
Prometheus raises the health rules' alert and Alertmanager routes it to the rulebook), Alertmanager's and the
loop's state as their APIs and files show them, Slurm's nodes as scontrol shows them, and polls with deadlines."""

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
from ansible_collections.gpufabric.core.plugins.module_utils.fabric import (  # noqa: E402  pylint: disable=wrong-import-position
    slurm_nodes,
)

LAB = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent"))
CTL = "health-mon"
PREFIX = "gpufabric:"
# inventory host -> (Slurm node, {rail: (netdev, leaf, leaf port)}), as molecule.yml cables them.
NODES = {
    "health-node%d" % index: ("node%d" % index, {
        "rail0": ("eth1", "leaf-a", "swp%d" % index), "rail1": ("eth2", "leaf-b", "swp%d" % index)})
    for index in (1, 2, 3)
}
STATE_DIR = "/var/lib/gpufabric/remediation"
# As molecule.yml sets remediation_webhook_token (Alertmanager's receiver sends it; the rulebook wants it).
WEBHOOK_TOKEN = "gpufabric-molecule-health-webhook-token"


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
    """The rail's cable pulled or put back: its leaf port down or up, the node's port loses or regains its carrier."""
    _netdev, leaf, leaf_port = NODES[host][1][rail]
    podman_exec("health-" + leaf, "ip link set %s %s" % (leaf_port, "up" if up else "down"))


# Alertmanager

def alertmanager(path):
    with urllib.request.urlopen("http://%s:9093%s" % (address(CTL), path), timeout=10) as response:
        text = response.read().decode()
    return json.loads(text) if text else None


def alertmanager_ready():
    try:
        with urllib.request.urlopen("http://%s:9093/-/ready" % address(CTL), timeout=5) as response:
            return response.status == 200
    except OSError:
        return False


def restart_alertmanager():
    """A fresh Alertmanager (alerts are in its memory only): the notifications it could not deliver while no
    rulebook listened (the health tests' resolved alerts) must not reach the loop when the rulebook starts.
    Prometheus sends it whatever is still firing at its next evaluation."""
    podman_exec(CTL, "systemctl restart prometheus-alertmanager")
    poll("Alertmanager ready again", alertmanager_ready, 60)


def active_alerts(**labels):
    query = "&".join("filter=%s" % urllib.parse.quote('%s="%s"' % item) for item in sorted(labels.items()))
    return alertmanager("/api/v2/alerts?active=true&silenced=true&inhibited=true" + ("&" + query if query else ""))


def alert_starts(**labels):
    """startsAt of the one active alert with these labels, as Prometheus gave it to Alertmanager."""
    alerts = active_alerts(**labels)
    return alerts[0]["startsAt"] if len(alerts) == 1 else None


# The loop's counters, as the controller's node_exporter exports them (its textfile collector)

def exported_actions():
    with urllib.request.urlopen("http://%s:9100/metrics" % address(CTL), timeout=10) as response:
        text = response.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("gpufabric_remediation_actions_total{"):
            labels, value = line[len("gpufabric_remediation_actions_total{"):].rsplit("} ", 1)
            pairs = dict(item.split("=", 1) for item in labels.split(","))
            values[(pairs["action"].strip('"'), pairs["reason"].strip('"'))] = float(value)
    return values


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
        variables.write_text(json.dumps({"remediation_webhook_host": self.host, "remediation_webhook_port": self.port,
                                         "remediation_webhook_token": WEBHOOK_TOKEN}))
        variables.chmod(0o600)
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
