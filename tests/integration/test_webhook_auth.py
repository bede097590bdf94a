"""The remediation webhook (gpufabric.core.alertmanager_webhook) under the real ansible-rulebook: a POST without
the token refused, a flood answered at once and counted, a non-loopback address without a token refused at start,
the token kept out of the rulebook's output, and Debian's real Alertmanager with the generated receiver delivering
with the token from its file (and refused with a wrong one)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
import yaml

from integration_helpers import LOG_DIR, ROOT, tail

sys.path.insert(0, str(ROOT / "tests"))
from health_lab import ALERTMANAGER, alertmanager_process, free_port  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = pytest.mark.skipif(shutil.which("ansible-rulebook") is None or shutil.which("java") is None,
                                reason="ansible-rulebook (requirements.txt) and Java (scripts/setup.sh) are needed")

TOKEN = "s3cret-t0ken-for-the-test"


def alert(host, index=0):
    return {"status": "firing", "labels": {"alertname": "GpufabricPortDown", "gpufabric_scope": "node",
                                           "gpufabric_remediation": "drain", "host": host, "rail": "rail%d" % index},
            "annotations": {"summary": "test"}, "startsAt": "2026-12-04T10:00:00Z", "endsAt": "0001-01-01T00:00:00Z"}


def post(port, payload, token=None, timeout=10):
    """(HTTP status, seconds) of one POST."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = "Bearer " + token
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    request = urllib.request.Request("http://127.0.0.1:%d/alertmanager" % port, data=data, headers=headers,
                                     method="POST")
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, time.monotonic() - started
    except urllib.error.HTTPError as exc:
        return exc.code, time.monotonic() - started


class Rulebook:
    """ansible-rulebook with the collection's rulebook, its output in a log under LOG_DIR."""

    def __init__(self, tmp_path, name, variables):
        (tmp_path / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"gpu_nodes": {}}}}))
        (tmp_path / "vars.yml").write_text(yaml.safe_dump(dict({"remediation_reconcile_interval": 0}, **variables)))
        LOG_DIR.mkdir(parents=True, exist_ok=True)
        self.log = LOG_DIR / ("rulebook-%s.log" % name)
        env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_CACHE_PLUGIN="ansible.builtin.memory")
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(["ansible-rulebook", "-v", "-r", "gpufabric.core.remediation", "-i",
                                          str(tmp_path / "hosts.yml"), "--vars", str(tmp_path / "vars.yml")],
                                         cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def text(self):
        return self.log.read_text()

    def wait_for(self, probe, what, timeout=120):
        deadline = time.monotonic() + timeout
        while True:
            try:
                found = probe()
            except OSError:
                found = None
            if found:
                return found
            assert time.monotonic() < deadline, "%s did not happen: %s" % (what, tail(self.text(), 60))
            time.sleep(0.5)

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(30)


@pytest.fixture
def rulebook(tmp_path):
    started = []

    def start(name, **variables):
        started.append(Rulebook(tmp_path, name, variables))
        return started[-1]

    yield start
    for item in started:
        item.stop()


def test_a_post_without_the_token_is_refused_and_the_token_never_logged(rulebook):
    port = free_port()
    book = rulebook("token", remediation_webhook_port=port, remediation_webhook_token=TOKEN)
    status = book.wait_for(lambda: post(port, {"alerts": [alert("node1")]})[0], "the webhook answering")
    assert status == 401
    assert post(port, {"alerts": [alert("node1")]}, token="wrong")[0] == 401
    assert post(port, {"alerts": []}, token=TOKEN)[0] == 200
    book.wait_for(lambda: "accepted 1 alerts" in book.text(), "the accepted notification logged")
    text = book.text()
    assert "refused a notification (unauthorized, 0 alerts, HTTP 401)" in text
    assert "refused unauthorized 2" in text
    assert TOKEN not in text


def test_a_flood_is_answered_at_once_and_counted(rulebook):
    port = free_port()
    book = rulebook("flood", remediation_webhook_port=port, remediation_webhook_max_queued_alerts=8,
                    remediation_webhook_max_body_bytes=65536)
    book.wait_for(lambda: post(port, {"alerts": []})[0], "the webhook answering")
    # 40 firing drains for hosts outside the (empty) inventory: the playbook runs refuse them, slowly enough
    # (an ansible-playbook start each) that the backlog fills.
    answers = [post(port, {"alerts": [alert("node%d" % n, rail) for rail in range(4)]}) for n in range(10)]
    statuses = [status for status, _seconds in answers]
    assert set(statuses) == {200, 503}, statuses
    assert max(seconds for _status, seconds in answers) < 2, answers
    assert post(port, b"{" + b" " * 70000 + b"}")[0] == 413
    assert post(port, b"[1, 2]")[0] == 400
    text = book.wait_for(lambda: "refused a notification (too large" in book.text() and book.text(), "413 logged")
    assert "refused a notification (backlog full, 4 alerts, HTTP 503)" in text
    assert "refused alerts %d, backlog full %d" % (4 * statuses.count(503), statuses.count(503)) in text


@pytest.mark.parametrize("token", ["", None])
def test_a_non_loopback_address_without_a_token_stops_the_rulebook_at_start(rulebook, token):
    variables = {"remediation_webhook_host": "0.0.0.0", "remediation_webhook_port": free_port()}
    if token is not None:
        variables["remediation_webhook_token"] = token
    book = rulebook("open", **variables)
    book.proc.wait(120)
    assert book.proc.returncode != 0
    assert "host 0.0.0.0 is not a loopback address and no token is set" in book.text()
    assert "remediation_webhook_token" in book.text()


@pytest.mark.skipif(ALERTMANAGER is None, reason="prometheus-alertmanager is not installed (scripts/setup.sh)")
@pytest.mark.parametrize("alertmanager_token, delivered", [(TOKEN, True), ("an0ther-t0ken-entirely", False)])
def test_alertmanager_s_generated_receiver_delivers_with_the_token_file(rulebook, tmp_path, alertmanager_token,
                                                                        delivered):
    from ansible_collections.gpufabric.core.plugins.filter.health_monitoring_config import health_monitoring_config

    port = free_port()
    book = rulebook("alertmanager", remediation_webhook_port=port, remediation_webhook_token=TOKEN)
    book.wait_for(lambda: post(port, {"alerts": []}, token=TOKEN)[0], "the webhook answering")
    token_file = tmp_path / "remediation_webhook_token"
    token_file.write_text(alertmanager_token)
    config = health_monitoring_config(
        [{"name": "node1", "address": "127.0.0.1", "port": 9}], webhook_url="http://127.0.0.1:%d/alertmanager" % port,
        webhook_token_file=str(token_file), alertmanager_timing={"group_wait": "0s"})["alertmanager"]
    (tmp_path / "am").mkdir()
    with alertmanager_process(tmp_path / "am", config) as alertmanager:
        post_report_alert(alertmanager)
        if delivered:
            book.wait_for(lambda: book.text().count("accepted 1 alerts") >= 2, "Alertmanager's notification accepted", 60)
        else:
            book.wait_for(lambda: "refused a notification (unauthorized" in book.text(), "Alertmanager refused", 60)
            assert book.text().count("alertmanager_webhook: accepted") == 1  # the test's own probe alone
    assert TOKEN not in book.text() and alertmanager_token not in book.text()


def post_report_alert(alertmanager):
    """An alert no rule acts on but the receiver's route sends, posted to Alertmanager: delivery is the test, not a
    drain."""
    labels = {"alertname": "GpufabricLeafDown", "gpufabric_scope": "leaf", "gpufabric_remediation": "report",
              "leaf": "leaf-x", "rail": "rail9"}
    request = urllib.request.Request(alertmanager + "/api/v2/alerts", data=json.dumps([{"labels": labels}]).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    urllib.request.urlopen(request, timeout=5).read()


@pytest.mark.skipif(ALERTMANAGER is None or shutil.which("openssl") is None,
                    reason="prometheus-alertmanager and openssl are needed")
def test_alertmanager_delivers_over_https_checking_the_webhook_s_certificate(rulebook, tmp_path):
    from ansible_collections.gpufabric.core.plugins.filter.health_monitoring_config import health_monitoring_config

    cert, key = tmp_path / "webhook.pem", tmp_path / "webhook-key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    port = free_port()
    book = rulebook("https", remediation_webhook_port=port, remediation_webhook_token=TOKEN,
                    remediation_webhook_tls_cert_file=str(cert), remediation_webhook_tls_key_file=str(key))
    book.wait_for(lambda: "listening on 127.0.0.1:%d (https)" % port in book.text(), "the webhook serving https")
    with pytest.raises(OSError):  # plain http is not spoken there
        post(port, {"alerts": []}, token=TOKEN)
    token_file = tmp_path / "remediation_webhook_token"
    token_file.write_text(TOKEN)
    config = health_monitoring_config(
        [{"name": "node1", "address": "127.0.0.1", "port": 9}], webhook_url="https://127.0.0.1:%d/alertmanager" % port,
        webhook_token_file=str(token_file), webhook_ca_file=str(cert),
        alertmanager_timing={"group_wait": "0s"})["alertmanager"]
    (tmp_path / "am").mkdir()
    with alertmanager_process(tmp_path / "am", config) as alertmanager:
        post_report_alert(alertmanager)
        book.wait_for(lambda: "accepted 1 alerts" in book.text(), "Alertmanager's notification over https", 60)
    assert TOKEN not in book.text()
