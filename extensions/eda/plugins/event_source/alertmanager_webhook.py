# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric.core.alertmanager_webhook: the remediation loop's ear, an ansible-rulebook event source receiving
Alertmanager's webhook (payload version 4), authenticated and bounded.

eda.builtin.webhook (ansible-rulebook 1.3.2) is the same server without the bounds: it listens on 0.0.0.0 by
default with no credentials, reads bodies up to aiohttp's 1 MiB, and answers a POST only once the rule engine took
every one of its alerts (its queue holds one event), so that a burst of alerts keeps Alertmanager waiting past its
timeout. This source:
- listens on host (127.0.0.1 by default) and refuses to start on any other address without a token;
- wants `Authorization: Bearer <token>` when a token is set (compared in constant time), 401 otherwise;
- refuses a body over max_body_bytes (413) and one that is not a JSON object (400);
- keeps at most max_queued_alerts alerts waiting for the rule engine and answers 503 (Retry-After: Alertmanager
  sends the notification again) to a notification that would go beyond, at once;
- counts what it accepted and refused, and logs each refusal with the totals; never the token, never the alerts'
  text (data from the fabric).
Events are the builtin's: {"payload": <the body>, "meta": {"endpoint": <path>}}; eda.builtin.event_splitter makes
one event per alert as before.

Alertmanager 0.25 signs nothing (no HMAC of the body), so the bearer token (http_config.authorization) is the
credential; with certfile and keyfile the webhook serves TLS, so that the token does not cross the network in clear.

Options: host, port (required), token, max_body_bytes (262144), max_queued_alerts (64), certfile and keyfile.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import ipaddress
import json
import logging
import ssl

from aiohttp import web

logger = logging.getLogger(__name__)

DEFAULTS = {"host": "127.0.0.1", "token": "", "max_body_bytes": 262144, "max_queued_alerts": 64, "certfile": "",
            "keyfile": ""}
RETRY_AFTER_S = "10"


class SettingsError(ValueError):
    """The source's options are not usable; the rulebook does not start."""


def is_loopback(host):
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def settings(args):
    """The options checked, with their defaults; SettingsError naming the option otherwise."""
    found = dict(DEFAULTS, **{key: value for key, value in args.items() if value not in (None, "")})
    if "port" not in found:
        raise SettingsError("alertmanager_webhook: port is required")
    found["token"] = str(found["token"])
    for name in ("port", "max_body_bytes", "max_queued_alerts"):
        try:
            found[name] = int(found[name])
        except (TypeError, ValueError):
            raise SettingsError("alertmanager_webhook: %s: %r is not a number" % (name, found[name])) from None
        if found[name] < 1:
            raise SettingsError("alertmanager_webhook: %s must be 1 or more" % name)
    if bool(found["certfile"]) != bool(found["keyfile"]):
        raise SettingsError("alertmanager_webhook: certfile and keyfile go together "
                            "(remediation_webhook_tls_cert_file, remediation_webhook_tls_key_file)")
    if not is_loopback(str(found["host"])) and not found["token"]:
        raise SettingsError(
            "alertmanager_webhook: host %s is not a loopback address and no token is set: anyone who reaches it "
            "could drain nodes. Set the token (remediation_webhook_token), or listen on 127.0.0.1" % found["host"])
    return found


class Receiver:
    """The HTTP side: checks a notification and puts it on a bounded backlog the forwarder empties."""

    def __init__(self, options):
        self.options = options
        self.backlog = asyncio.Queue()
        self.queued_alerts = 0
        self.counts = collections.Counter()

    def refuse(self, why, status, alerts=0, **headers):
        self.counts["refused_" + why] += 1
        self.counts["refused_alerts"] += alerts
        logger.warning("alertmanager_webhook: refused a notification (%s, %d alerts, HTTP %d); %d alerts queued of "
                       "%d; so far accepted %d notifications (%d alerts), refused %s", why, alerts, status,
                       self.queued_alerts, self.options["max_queued_alerts"], self.counts["accepted"],
                       self.counts["accepted_alerts"], self.refusals())
        return web.Response(status=status, text=why + "\n", headers=headers)

    def refusals(self):
        return ", ".join("%s %d" % (key[len("refused_"):], value) for key, value in sorted(self.counts.items())
                         if key.startswith("refused_") and value) or "none"

    def authorized(self, request):
        token = self.options["token"]
        if not token:
            return True
        given = request.headers.get("Authorization", "")
        return hmac.compare_digest(given.encode("utf-8", "replace"), ("Bearer " + token).encode("utf-8"))

    async def handle(self, request):
        if not self.authorized(request):
            return self.refuse("unauthorized", 401)
        if (request.content_length or 0) > self.options["max_body_bytes"]:
            return self.refuse("too large", 413)
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            return self.refuse("too large", 413)
        try:
            payload = json.loads(body)
        except ValueError:
            payload = None
        if not isinstance(payload, dict) or not isinstance(payload.get("alerts", []), list):
            return self.refuse("not an Alertmanager notification", 400)
        alerts = max(1, len(payload.get("alerts", [])))
        if self.queued_alerts + alerts > self.options["max_queued_alerts"]:
            return self.refuse("backlog full", 503, alerts, **{"Retry-After": RETRY_AFTER_S})
        self.queued_alerts += alerts
        self.counts["accepted"] += 1
        self.counts["accepted_alerts"] += alerts
        self.backlog.put_nowait(({"payload": payload, "meta": {"endpoint": request.match_info["endpoint"]}},
                                 alerts))
        logger.info("alertmanager_webhook: accepted %d alerts; %d queued of %d", alerts, self.queued_alerts,
                    self.options["max_queued_alerts"])
        return web.Response(text="accepted\n")

    async def forward(self, queue):
        """Hands the backlog to the rule engine, one notification at a time, as fast as it takes them."""
        while True:
            event, alerts = await self.backlog.get()
            try:
                await queue.put(event)
            finally:
                self.queued_alerts -= alerts


def tls_context(options):
    """The server's TLS context with certfile and keyfile, None without."""
    if not options["certfile"]:
        return None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(options["certfile"], options["keyfile"])
    return context


async def main(queue, args):
    """Receive Alertmanager's notifications until cancelled."""
    options = settings(args)
    receiver = Receiver(options)
    # One byte over the limit is enough for aiohttp to refuse a body with no Content-Length.
    app = web.Application(client_max_size=options["max_body_bytes"])
    app.router.add_post(r"/{endpoint:.*}", receiver.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, options["host"], options["port"], ssl_context=tls_context(options))
    await site.start()
    logger.info("alertmanager_webhook: listening on %s:%d (%s), %s, at most %d bytes a body and %d alerts queued",
                options["host"], options["port"], "https" if options["certfile"] else "http",
                "bearer token required" if options["token"] else "no token",
                options["max_body_bytes"], options["max_queued_alerts"])
    forwarder = asyncio.create_task(receiver.forward(queue))
    try:
        await asyncio.Future()
    finally:
        forwarder.cancel()
        await runner.cleanup()
