# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Command line: run | check-config | once | status | stop-action."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time

from .controller import LOG, Controller
from .cooling_policy import policy_problems


def load_config(path):
    try:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
    except OSError as exc:
        raise SystemExit("gpufabric-cooling: cannot read %s: %s" % (path, exc.strerror)) from None
    except ValueError as exc:
        raise SystemExit("gpufabric-cooling: %s is not valid JSON: %s" % (path, exc)) from None
    problems = policy_problems(config)
    if problems:
        raise SystemExit("gpufabric-cooling: %s is not a usable cooling policy:\n  - %s" % (path, "\n  - ".join(problems)))
    return config


def status(config, max_age):
    """Print the last cycle's state; exit 3 when it is missing or older than max_age (the loop is stuck or down)."""
    path = os.path.join(config.get("state_dir", "/var/lib/gpufabric-cooling"), "state.json")
    limit = max_age if max_age is not None else float(config["stale_after"]) + 3 * float(config["interval"])
    try:
        with open(path, encoding="utf-8") as handle:
            state = json.load(handle)
    except (OSError, ValueError) as exc:
        print("gpufabric-cooling: no state in %s yet: %s" % (path, exc), file=sys.stderr)
        return 3
    age = time.time() - float(state.get("time", 0))
    if age > limit:
        print("gpufabric-cooling: the last control cycle finished %.0f s ago (limit %.0f s): is the service running?" % (age, limit), file=sys.stderr)
        return 3
    json.dump(state, sys.stdout, sort_keys=True, default=str)
    print()
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpufabric-cooling", description=__doc__)
    parser.add_argument("command", choices=("run", "check-config", "once", "status", "stop-action"))
    parser.add_argument("config", nargs="?", default="/etc/gpufabric-cooling/config.json")
    parser.add_argument("--reason", default="service stopped", help="stop-action: why, for the log")
    parser.add_argument("--max-age", type=float, help="status: oldest acceptable state in seconds (default: stale_after + 3 intervals)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    config = load_config(args.config)
    if args.command == "check-config":
        print("%s: %d zones, %d fan groups: OK" % (args.config, len(config["zones"]), len(config["fan_groups"])))
        return 0
    if args.command == "status":
        return status(config, args.max_age)
    controller = Controller(config)
    if args.command == "once":
        json.dump(controller.cycle(), sys.stdout, indent=1, sort_keys=True, default=str)
        print()
        return 0
    if args.command == "stop-action":
        controller.stop_action(args.reason)
        return 0
    stopping = []
    signal.signal(signal.SIGTERM, lambda signum, frame: stopping.append(signum))
    signal.signal(signal.SIGINT, lambda signum, frame: stopping.append(signum))
    LOG.info("gpufabric-cooling running: %d zones, %d fan groups, interval %ss, stale after %ss, on stop %s",
             len(config["zones"]), len(config["fan_groups"]), config["interval"], config["stale_after"], config.get("on_stop", "full"))
    try:
        controller.run(lambda: bool(stopping))
    finally:
        controller.stop_action("service stopping")
    return 0


if __name__ == "__main__":
    sys.exit(main())
