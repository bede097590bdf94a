"""The generated monitoring configuration in Debian's real Prometheus and Alertmanager, children of the test: a
node can only speak for itself (its series carry its scrape target's host, whatever it sends), and with web
configurations both refuse anonymous requests while Prometheus still sends its alerts to Alertmanager with the
credentials the role gives it. The node is a small HTTP server of this test serving the text a forged exporter
would."""

import contextlib
import http.server
import shlex
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from ansible_collections.gpufabric.core.plugins.filter.health_monitoring_config import health_monitoring_config

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from health_lab import (  # noqa: E402  pylint: disable=wrong-import-position
    ALERTMANAGER, PROMETHEUS, child_process, free_port, in_alertmanager, local_monitoring, prometheus_alerts,
    prometheus_query, wait_for)

pytestmark = pytest.mark.skipif(PROMETHEUS is None or ALERTMANAGER is None,
                                reason="prometheus and prometheus-alertmanager are not installed (scripts/setup.sh)")

# node10's exporter claims node20's port down, under node20's job and instance too.
FORGED = ('# TYPE gpufabric_port_up gauge\n'
          'gpufabric_port_up{host="node20",rail="rail0",netdev="eth1",leaf="leaf-a",job="x",instance="node20:9100"} 0\n')


@contextlib.contextmanager
def exporter(text):
    """An HTTP server on 127.0.0.1 answering every GET with text (Prometheus's text format); yields its port."""
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_node_serving_another_hosts_label_is_drained_for_itself_never_for_the_other(tmp_path):
    with exporter(FORGED) as port, local_monitoring(tmp_path / "monitoring", [
            {"name": "node10", "address": "127.0.0.1", "port": port, "labels": {}}],
            thresholds={"port_down_for": "1s"}, interval="1s") as urls:
        series, _waited = wait_for("the forged series scraped", lambda: prometheus_query(
            urls["prometheus"], "gpufabric_port_up"), 30)
        assert [item["metric"] for item in series] == [{
            "__name__": "gpufabric_port_up", "host": "node10", "instance": "127.0.0.1:%d" % port,
            "job": "gpufabric", "rail": "rail0", "netdev": "eth1", "leaf": "leaf-a"}]
        found, _waited = wait_for("GpufabricPortDown for node10 in Alertmanager", lambda: in_alertmanager(
            urls["alertmanager"], "GpufabricPortDown", {"host": "node10"}), 60)
        assert found
        assert not [alert for alert in prometheus_alerts(urls["prometheus"])
                    if "node20" in alert["labels"].values()]
        assert not in_alertmanager(urls["alertmanager"], "GpufabricPortDown", {"host": "node20"})


def status_of(url, data=None, auth=None):
    request = urllib.request.Request(url, data=data, method="POST" if data else "GET",
                                     headers=dict({"Content-Type": "application/json"}, **(auth or {})))
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def service_argv(defaults_text):
    """The arguments Debian's unit passes: its /etc/default file's ARGS as systemd reads an EnvironmentFile (quotes
    removed) and splits an unquoted $ARGS (at whitespace)."""
    [line] = [line for line in defaults_text.splitlines() if line.startswith("ARGS=")]
    [value] = shlex.split(line[len("ARGS="):])
    return value.split()


@contextlib.contextmanager
def basic_auth_to(username, password, *urls):
    """urllib's urlopen sending username:password to urls (child_process polls /-/ready through it)."""
    manager = urllib.request.HTTPPasswordMgrWithPriorAuth()
    for url in urls:
        manager.add_password(None, url, username, password, is_authenticated=True)
    urllib.request.install_opener(urllib.request.build_opener(urllib.request.HTTPBasicAuthHandler(manager)))
    try:
        yield
    finally:
        urllib.request.install_opener(None)


def test_with_web_configs_anonymous_requests_are_refused_and_alerts_still_reach_alertmanager(tmp_path):
    import base64

    # The project's venv has it (constraints.txt); the compat venvs, which test ansible-core lines, do not.
    bcrypt = pytest.importorskip("bcrypt")

    password = "the-monitoring-password"
    hashed = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    web = {"basic_auth_users": {"prometheus": hashed}}
    prometheus_port, alertmanager_port = free_port(), free_port()
    files = {name: tmp_path / name for name in ("prometheus.yml", "alertmanager.yml", "rules.yml", "targets.json",
                                                "web.yml", "alertmanager-web.yml", "alertmanager-password")}
    with exporter(FORGED) as port:
        texts = health_monitoring_config(
            [{"name": "node10", "address": "127.0.0.1", "port": port, "labels": {}}], thresholds={"port_down_for": "1s"},
            scrape_interval="1s", evaluation_interval="1s", rules_file=str(files["rules.yml"]),
            targets_file=str(files["targets.json"]), services={
                "prometheus": {"listen_address": "127.0.0.1:%d" % prometheus_port, "web_config": web,
                               "web_config_file": str(files["web.yml"])},
                "alertmanager": {"listen_address": "127.0.0.1:%d" % alertmanager_port, "web_config": web,
                                 "web_config_file": str(files["alertmanager-web.yml"]),
                                 "client": {"username": "prometheus",
                                            "password_file": str(files["alertmanager-password"])}}})
        for kind, name in (("prometheus", "prometheus.yml"), ("alertmanager", "alertmanager.yml"),
                           ("rules", "rules.yml"), ("targets", "targets.json"), ("prometheus_web", "web.yml"),
                           ("alertmanager_web", "alertmanager-web.yml")):
            files[name].write_text(texts[kind])
        files["alertmanager-password"].write_text(password)
        alertmanager = "http://127.0.0.1:%d" % alertmanager_port
        prometheus = "http://127.0.0.1:%d" % prometheus_port
        with basic_auth_to("prometheus", password, alertmanager, prometheus), \
                child_process("Alertmanager", [ALERTMANAGER, "--config.file", str(files["alertmanager.yml"]),
                                               "--storage.path", str(tmp_path / "am-data")]
                              + service_argv(texts["alertmanager_defaults"]), alertmanager + "/-/ready"), \
                child_process("Prometheus", [PROMETHEUS, "--config.file", str(files["prometheus.yml"]),
                                             "--storage.tsdb.path", str(tmp_path / "prom-data")]
                              + service_argv(texts["prometheus_defaults"]), prometheus + "/-/ready"):
            # Alertmanager got the alert from Prometheus, which authenticated with the password file.
            found, _waited = wait_for("GpufabricPortDown in Alertmanager", lambda: in_alertmanager(
                alertmanager, "GpufabricPortDown", {"host": "node10"}), 60)
            assert found
            urllib.request.install_opener(None)
            forged = b'[{"labels": {"alertname": "GpufabricPortDown", "host": "node3"}}]'
            assert status_of(alertmanager + "/api/v2/alerts", forged) == 401
            assert status_of(alertmanager + "/api/v2/alerts") == 401
            assert status_of(prometheus + "/api/v1/alerts") == 401
            wrong = {"Authorization": "Basic " + base64.b64encode(b"prometheus:guess").decode()}
            assert status_of(alertmanager + "/api/v2/alerts", forged, wrong) == 401
            right = {"Authorization": "Basic " + base64.b64encode(("prometheus:" + password).encode()).decode()}
            assert status_of(prometheus + "/api/v1/alerts", auth=right) == 200
