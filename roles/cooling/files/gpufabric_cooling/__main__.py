# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Command line: run | check-config | once | stop-action."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys

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


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpufabric-cooling", description=__doc__)
    parser.add_argument("command", choices=("run", "check-config", "once", "stop-action"))
    parser.add_argument("config", nargs="?", default="/etc/gpufabric-cooling/config.json")
    parser.add_argument("--reason", default="service stopped", help="stop-action: why, for the log")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    config = load_config(args.config)
    if args.command == "check-config":
        print("%s: %d zones, %d fan groups: OK" % (args.config, len(config["zones"]), len(config["fan_groups"])))
        return 0
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
