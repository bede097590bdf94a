"""gpufabric.core.alertmanager_webhook's options, and its server driven in-process by aiohttp's test client (the
rulebook runs are tests/integration/test_webhook_auth.py): what reaches the rule engine's queue, what is refused
before it, and that the rule engine being slow never delays an answer."""

import asyncio
import importlib.util
import json
from pathlib import Path

import pytest

aiohttp_test = pytest.importorskip("aiohttp.test_utils")

SOURCE = Path(__file__).resolve().parents[3] / "extensions" / "eda" / "plugins" / "event_source" / "alertmanager_webhook.py"
SPEC = importlib.util.spec_from_file_location("alertmanager_webhook", SOURCE)
webhook = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(webhook)
TOKEN = "c2VjcmV0LXRva2VuLWZvci10ZXN0"


@pytest.mark.parametrize("args, words", [
    ({"host": "0.0.0.0", "port": 5000}, "host 0.0.0.0 is not a loopback address and no token is set"),
    ({"host": "10.0.0.5", "port": 5000, "token": ""}, "Set the token (remediation_webhook_token)"),
    ({"host": "127.0.0.1"}, "port is required"),
    ({"port": "http"}, "port: 'http' is not a number"),
    ({"port": 5000, "max_queued_alerts": 0}, "max_queued_alerts must be 1 or more"),
    ({"port": 5000, "certfile": "/etc/webhook.pem"}, "certfile and keyfile go together"),
])
def test_unusable_options_stop_the_source_naming_them(args, words):
    with pytest.raises(webhook.SettingsError) as raised:
        webhook.settings(args)
    assert words in str(raised.value)


def test_loopback_needs_no_token_and_the_defaults_bound_the_server():
    assert webhook.settings({"port": "5000"}) == {"host": "127.0.0.1", "port": 5000, "token": "",
                                                  "max_body_bytes": 262144, "max_queued_alerts": 64,
                                                  "certfile": "", "keyfile": ""}
    for host in ("::1", "localhost", "127.0.0.2"):
        assert webhook.settings({"host": host, "port": 5000})["host"] == host
    assert webhook.settings({"host": "0.0.0.0", "port": 5000, "token": TOKEN})["token"] == TOKEN


def run(scenario, **args):
    """scenario(client, engine_queue, receiver) against the source's application, in one event loop."""
    async def main():
        options = webhook.settings(dict({"port": 1, "token": TOKEN, "max_queued_alerts": 4, "max_body_bytes": 2048},
                                        **args))
        receiver = webhook.Receiver(options)
        app = webhook.web.Application(client_max_size=options["max_body_bytes"])
        app.router.add_post(r"/{endpoint:.*}", receiver.handle)
        async with aiohttp_test.TestClient(aiohttp_test.TestServer(app)) as client:
            return await scenario(client, asyncio.Queue(1), receiver)
    return asyncio.run(main())


def notification(count):
    return {"version": "4", "alerts": [{"status": "firing", "labels": {"host": "node%d" % n}} for n in range(count)]}


def test_a_slow_engine_fills_the_backlog_and_the_next_notification_is_answered_503_at_once():
    bearer = {"Authorization": "Bearer " + TOKEN}

    async def scenario(client, queue, receiver):
        forwarder = asyncio.create_task(receiver.forward(queue))  # the engine takes nothing: its queue holds one
        statuses = []
        # The first goes to the engine's queue (one slot); the next two wait in the backlog: 4 alerts, its bound.
        for count in (2, 2, 2):
            response = await asyncio.wait_for(client.post("/alertmanager", json=notification(count), headers=bearer), 2)
            statuses.append(response.status)
        refused = await client.post("/alertmanager", json=notification(2), headers=bearer)
        first = await queue.get()
        forwarder.cancel()
        return statuses, refused.status, refused.headers.get("Retry-After"), first, dict(receiver.counts)

    statuses, refused, retry, first, counts = run(scenario)
    assert statuses == [200, 200, 200] and refused == 503 and retry == "10"
    assert first == {"payload": notification(2), "meta": {"endpoint": "alertmanager"}}
    assert counts == {"accepted": 3, "accepted_alerts": 6, "refused_backlog full": 1, "refused_alerts": 2}


@pytest.mark.parametrize("headers, body, status", [
    ({}, json.dumps(notification(1)), 401),
    ({"Authorization": "Bearer wrong"}, json.dumps(notification(1)), 401),
    ({"Authorization": TOKEN}, json.dumps(notification(1)), 401),
    ({"Authorization": "Bearer " + TOKEN}, json.dumps(notification(40)), 413),
    ({"Authorization": "Bearer " + TOKEN}, "[1, 2]", 400),
    ({"Authorization": "Bearer " + TOKEN}, '{"alerts": {"a": 1}}', 400),
    ({"Authorization": "Bearer " + TOKEN}, "{{ lookup('pipe', 'id') }}", 400),
])
def test_refusals_reach_nothing(headers, body, status):
    async def scenario(client, queue, receiver):
        response = await client.post("/alertmanager", data=body, headers=dict(headers, **{
            "Content-Type": "application/json"}))
        return response.status, receiver.backlog.qsize(), receiver.queued_alerts

    assert run(scenario) == (status, 0, 0)
