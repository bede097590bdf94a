# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Command line: run | check-config | check-actions | once | status | stop-action."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time

# failsafe first and alone: stop-action must work even when the rest of the package cannot be imported.
from . import failsafe

DEFAULT_RECORD = "/var/lib/gpufabric-cooling/failsafe.record"


def stop_action(config_path, record_path, reason):
    """Every fan to full duty, whatever else fails; exit status 1 after that when anything did fail.

    1. the fail-safe record, with the trivial code of failsafe.py (no configuration, no validation);
    2. the configuration file as far as it can be read (on_stop bmc hands back; groups the record missed).
    """
    log = logging.getLogger("gpufabric-cooling")
    done, failures = failsafe.drive_full(record_path, log)
    try:
        with open(config_path, encoding="utf-8") as handle:
            config = json.load(handle)
        if not isinstance(config, dict):
            raise ValueError("not a JSON object")
    except Exception as exc:  # pylint: disable=broad-except
        failures.append("%s: configuration %s unusable (%s: %s); only the fail-safe record was applied"
                        % (reason, config_path, type(exc).__name__, exc))
        log.error("%s", failures[-1])
        config = None
    if config is not None:
        try:
            from .controller import stop_from_config  # pylint: disable=import-outside-toplevel

            failures.extend(stop_from_config(config, reason, done))
        except Exception as exc:  # pylint: disable=broad-except
            failures.append("%s: applying on_stop from %s failed: %s: %s" % (reason, config_path, type(exc).__name__, exc))
            log.error("%s", failures[-1])
    if failures:
        log.error("%s: stop path finished with %d problem(s); fan groups at 100 %% from the record: %s",
                  reason, len(failures), ", ".join(done) or "none")
        return 1
    log.warning("%s: stop path finished: every fan group is safe", reason)
    return 0


def load_config(path):
    from ansible_collections.gpufabric.core.plugins.module_utils.cooling.policy import policy_problems  # pylint: disable=import-outside-toplevel

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
    parser.add_argument("command", choices=("run", "check-config", "check-actions", "once", "status", "stop-action"))
    parser.add_argument("config", nargs="?", default="/etc/gpufabric-cooling/config.json")
    parser.add_argument("--reason", default="service stopped", help="stop-action: why, for the log")
    parser.add_argument("--failsafe-record", default=DEFAULT_RECORD,
                        help="run: where to write the fail-safe record; stop-action: the record to apply first")
    parser.add_argument("--max-age", type=float, help="status: oldest acceptable state in seconds (default: stale_after + 3 intervals)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    if args.command == "stop-action":
        return stop_action(args.config, args.failsafe_record, args.reason)
    config = load_config(args.config)
    from .controller import LOG, Controller, action_command_problems, write_failsafe_record  # pylint: disable=import-outside-toplevel
    if args.command == "check-config":
        print("%s: %d zones, %d fan groups: OK" % (args.config, len(config["zones"]), len(config["fan_groups"])))
        return 0
    if args.command == "check-actions":
        problems = action_command_problems(config)
        for problem in problems:
            print("gpufabric-cooling: %s" % problem, file=sys.stderr)
        return 1 if problems else 0
    if args.command == "status":
        return status(config, args.max_age)
    controller = Controller(config)
    if args.command == "once":
        json.dump(controller.cycle(), sys.stdout, indent=1, sort_keys=True, default=str)
        print()
        return 0
    # Before any fan is set below full duty: what stop-action drives to 100 % if this process dies.
    write_failsafe_record(args.failsafe_record, config)
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
