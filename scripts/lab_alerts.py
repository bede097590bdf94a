#!/usr/bin/env python
"""Print the lab's fabric alerts as Prometheus and Alertmanager hold them; with --wait NAME, first wait (polling,
up to --timeout seconds) until an alert of that name fires and reaches Alertmanager.

    scripts/lab_alerts.py http://MONITOR:9090 http://MONITOR:9093 [--wait GpufabricCablingMismatch] [--timeout 300]
"""

import argparse
import sys
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# tests/health_lab imports the collection: the link scripts/env.sh makes under .build/collections, as conftest.py
# does for pytest (make run calls this script outside pytest).
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / ".build" / "collections")]

from health_lab import LabError, alertmanager_alerts, prometheus_alerts, wait_alert  # noqa: E402


def alerts_page(prometheus):
    """The alerts page of Prometheus's web UI: Debian's package serves its classic UI under /classic, upstream's
    under /; either way / redirects to the graph page beside it."""
    with urllib.request.urlopen(prometheus + "/", timeout=5) as response:
        return response.geturl().rsplit("/graph", 1)[0] + "/alerts"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prometheus")
    parser.add_argument("alertmanager")
    parser.add_argument("--wait", metavar="ALERTNAME")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    if args.wait:
        try:
            _alerts, seconds = wait_alert(args.prometheus, args.alertmanager, args.wait, {}, args.timeout)
        except LabError as exc:
            print("alerts: %s" % exc, file=sys.stderr)
            return 1
        print("alerts: %s reached Alertmanager after %.0f s" % (args.wait, seconds))
    print("alerts: Prometheus's alerts page: %s" % alerts_page(args.prometheus))
    for alert in prometheus_alerts(args.prometheus):
        labels = alert["labels"]
        print("alerts: Prometheus %-8s %s {%s}" % (alert["state"], labels.get("alertname"), ", ".join(
            "%s=%s" % item for item in sorted(labels.items()) if item[0] != "alertname")))
        print("alerts:   %s" % alert["annotations"].get("summary", ""))
    for alert in alertmanager_alerts(args.alertmanager):
        labels = alert["labels"]
        where = labels.get("host", labels.get("leaf", ""))
        print("alerts: Alertmanager %-10s %s %s" % (alert["status"]["state"], labels.get("alertname"), where))
    return 0


if __name__ == "__main__":
    sys.exit(main())
