"""Faults injected into a container lab and the alerts they raise, read through Prometheus's and Alertmanager's HTTP
APIs. Shared by the health Molecule scenario (molecule/health/tests) and the detection benchmark
(benchmarks/bench_health.py): the same injection and the same wait, so that the figures measure what the test
proves.

Every wait polls with a deadline; nothing sleeps a fixed time.
"""

import json
import subprocess
import time
import urllib.parse
import urllib.request

POLL_S = 0.5


class LabError(AssertionError):
    """A lab command failed, or what was waited for did not happen before the deadline."""


def http_json(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


def prometheus_query(prometheus, expr, at=None):
    """The result vector of an instant query."""
    query = {"query": expr}
    if at is not None:
        query["time"] = "%.3f" % at
    answer = http_json("%s/api/v1/query?%s" % (prometheus, urllib.parse.urlencode(query)))
    if answer.get("status") != "success":
        raise LabError("Prometheus refused %s: %s" % (expr, answer))
    return answer["data"]["result"]


def prometheus_alerts(prometheus):
    """Prometheus's alerts (pending and firing): [{labels, state, activeAt, ...}]."""
    return http_json(prometheus + "/api/v1/alerts")["data"]["alerts"]


def alertmanager_alerts(alertmanager):
    """Alertmanager's alerts, inhibited and silenced ones included: [{labels, status: {state, inhibitedBy}, ...}]."""
    return http_json(alertmanager + "/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true")


def matches(labels, wanted):
    """labels hold every wanted label with its value (an empty wanted value: the label is absent)."""
    return all(labels.get(key, "") == value for key, value in wanted.items())


def wait_for(what, probe, timeout, poll=POLL_S):
    """probe() until it returns something true; returns (that, seconds waited). LabError naming what was awaited
    and the last answer when the deadline passes."""
    started = time.monotonic()
    last = None
    while True:
        try:
            last = probe()
        except OSError as exc:  # the API restarting, a connection refused: try again until the deadline
            last = exc
        else:
            if last:
                return last, time.monotonic() - started
        if time.monotonic() - started > timeout:
            raise LabError("after %.0f s, still waiting for %s; last answer: %s" % (timeout, what, last))
        time.sleep(poll)


def firing_in_prometheus(prometheus, alertname, wanted):
    return [alert for alert in prometheus_alerts(prometheus)
            if alert["labels"].get("alertname") == alertname and alert["state"] == "firing"
            and matches(alert["labels"], wanted)]


def in_alertmanager(alertmanager, alertname, wanted, state=None):
    return [alert for alert in alertmanager_alerts(alertmanager)
            if alert["labels"].get("alertname") == alertname and matches(alert["labels"], wanted)
            and (state is None or alert["status"]["state"] == state)]


def wait_alert(prometheus, alertmanager, alertname, wanted, timeout, state="active"):
    """Wait until the alert fires in Prometheus and reaches Alertmanager in state (active, or suppressed for an
    inhibited one). Returns (Alertmanager's alerts, seconds from the call to Alertmanager's)."""
    started = time.monotonic()
    wait_for("%s %s firing in Prometheus" % (alertname, wanted),
             lambda: firing_in_prometheus(prometheus, alertname, wanted), timeout)
    found, _waited = wait_for("%s %s %s in Alertmanager" % (alertname, wanted, state),
                              lambda: in_alertmanager(alertmanager, alertname, wanted, state),
                              max(5.0, timeout - (time.monotonic() - started)))
    return found, time.monotonic() - started


def wait_resolved(prometheus, alertmanager, alertname, wanted, timeout):
    """Wait until the alert is neither pending nor firing in Prometheus and no longer active in Alertmanager
    (Prometheus sends it resolved; Alertmanager then drops it from its active alerts)."""
    started = time.monotonic()
    wait_for("%s %s gone from Prometheus" % (alertname, wanted),
             lambda: not [a for a in prometheus_alerts(prometheus)
                          if a["labels"].get("alertname") == alertname and matches(a["labels"], wanted)], timeout)
    wait_for("%s %s resolved in Alertmanager" % (alertname, wanted),
             lambda: not in_alertmanager(alertmanager, alertname, wanted),
             max(5.0, timeout - (time.monotonic() - started)))
    return time.monotonic() - started


def fired_since(prometheus, since):
    """Every alert (label set) that was firing at any evaluation since `since` (Unix time), from Prometheus's own
    ALERTS series: what the lab raised over that stretch."""
    window = max(1, int(time.time() - since) + 1)
    result = prometheus_query(prometheus, 'max_over_time(ALERTS{alertstate="firing"}[%ds])' % window)
    return [{key: value for key, value in item["metric"].items() if key not in ("alertstate", "__name__")}
            for item in result]


# -- faults in a container lab (podman) ----------------------------------------------------------------------------

def run(argv, timeout=60):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if result.returncode != 0:
        raise LabError("%s failed (%d): %s%s" % (" ".join(argv), result.returncode, result.stdout, result.stderr))
    return result.stdout


def in_container(container, *argv, timeout=60):
    return run(["podman", "exec", container, *argv], timeout=timeout)


def pid_of(container):
    return run(["podman", "inspect", "--format", "{{.State.Pid}}", container]).strip()


def set_link(container, interface, state):
    """A switch port (or a node port) administratively down or up: the cable's far end loses its carrier."""
    in_container(container, "ip", "link", "set", interface, state)


def plug(node, node_port, leaf, leaf_port, mtu=9000, bridge="br0"):
    """A cable: a veth pair with one end in each container's network namespace, both ends up, the leaf's end a
    port of the leaf's bridge (molecule/health/prepare.yml; bridge None for scripts/lab.sh's leaves, which have
    none)."""
    node_pid, leaf_pid = pid_of(node), pid_of(leaf)
    run(["ip", "link", "add", node_port, "netns", node_pid, "mtu", str(mtu), "type", "veth", "peer", "name",
         leaf_port, "netns", leaf_pid, "mtu", str(mtu)])
    run(["nsenter", "-t", node_pid, "-n", "ip", "link", "set", node_port, "up"])
    run(["nsenter", "-t", leaf_pid, "-n", "ip", "link", "set", leaf_port, *(["master", bridge] if bridge else []), "up"])


def unplug(node, node_port):
    """Pull a cable: deleting the node's end of the veth pair removes both ends."""
    run(["nsenter", "-t", pid_of(node), "-n", "ip", "link", "del", node_port])


def recable(node, cables, **plug_options):
    """Pull the node's cables and plug them as cables says: [(node_port, leaf, leaf_port)]."""
    for node_port, _leaf, _leaf_port in cables:
        unplug(node, node_port)
    for node_port, leaf, leaf_port in cables:
        plug(node, node_port, leaf, leaf_port, **plug_options)
