"""Faults injected into a container lab and the alerts they raise, read through Prometheus's and Alertmanager's HTTP
APIs. Shared by the health Molecule scenario (molecule/health/tests) and the detection benchmark
(benchmarks/bench_health.py): the same injection and the same wait, so that the figures measure what the test
proves. Also Debian's Prometheus and Alertmanager run on this machine as children of a test (local_monitoring: the
VM lab's scenario, whose nodes are reached through forwarded ports; alertmanager_process: the unit tests).

Every wait polls with a deadline; nothing sleeps a fixed time.
"""

import contextlib
import json
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request

from ansible_collections.gpufabric.core.plugins.filter.health_monitoring_config import health_monitoring_config

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


def series_count(prometheus, expr):
    """How many series expr selects now (0 when it selects none)."""
    result = prometheus_query(prometheus, "count(%s)" % expr)
    return int(float(result[0]["value"][1])) if result else 0


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


# -- Prometheus and Alertmanager on this machine, children of the test ---------------------------------------------

PROMETHEUS = shutil.which("prometheus")
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")
START_S = 60


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def child_process(what, argv, ready_url):
    """argv started as a child of this process, yielded once ready_url answers; stopped (SIGTERM, then SIGKILL after
    10 s) on exit. LabError with the end of its output when it exits or does not answer within START_S."""
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT)

        def tail():
            output.seek(0)
            return output.read().decode(errors="replace")[-3000:]

        def ready():
            if process.poll() is not None:
                raise LabError("%s exited with %d: %s" % (what, process.returncode, tail()))
            with urllib.request.urlopen(ready_url, timeout=2) as response:
                return response.status == 200

        try:
            try:
                wait_for("%s ready at %s" % (what, ready_url), ready, START_S)
            except LabError as exc:
                raise LabError("%s; its output: %s" % (exc, tail())) from None
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextlib.contextmanager
def alertmanager_process(workdir, config_text, port=None):
    """Debian's Alertmanager on 127.0.0.1 (port, else a free one) with the configuration config_text (YAML), its
    files in workdir, alone (no cluster port); yields its base URL."""
    config_file = workdir / "alertmanager.yml"
    config_file.write_text(config_text)
    port = port or free_port()
    base = "http://127.0.0.1:%d" % port
    with child_process("Alertmanager", [ALERTMANAGER, "--config.file", str(config_file),
                                        "--storage.path", str(workdir / "alertmanager-data"),
                                        "--web.listen-address", "127.0.0.1:%d" % port, "--cluster.listen-address", ""],
                       base + "/-/ready"):
        yield base


@contextlib.contextmanager
def local_monitoring(workdir, targets, thresholds=None, interval="2s"):
    """Debian's Prometheus and Alertmanager on free ports of 127.0.0.1, children of the test, configured with the
    texts gpufabric.core.health_monitoring_config renders for playbooks/monitoring.yml (targets: name, address, port,
    labels; interval: both the scrape and the evaluation interval); their files in workdir, emptied first. Yields
    {"prometheus": URL, "alertmanager": URL}; both are stopped on exit."""
    shutil.rmtree(workdir, ignore_errors=True)
    workdir.mkdir(parents=True)
    alertmanager_port, prometheus_port = free_port(), free_port()
    rules_file, targets_file = workdir / "gpufabric.rules.yml", workdir / "gpufabric_targets.json"
    texts = health_monitoring_config(targets, thresholds=thresholds, scrape_interval=interval,
                                     evaluation_interval=interval, rules_file=str(rules_file),
                                     targets_file=str(targets_file), alertmanagers=["127.0.0.1:%d" % alertmanager_port])
    rules_file.write_text(texts["rules"])
    targets_file.write_text(texts["targets"])
    (workdir / "prometheus.yml").write_text(texts["prometheus"])
    prometheus = "http://127.0.0.1:%d" % prometheus_port
    with alertmanager_process(workdir, texts["alertmanager"], alertmanager_port) as alertmanager, \
            child_process("Prometheus", [PROMETHEUS, "--config.file", str(workdir / "prometheus.yml"),
                                         "--storage.tsdb.path", str(workdir / "prometheus-data"),
                                         "--web.listen-address", "127.0.0.1:%d" % prometheus_port],
                          prometheus + "/-/ready"):
        yield {"prometheus": prometheus, "alertmanager": alertmanager}
