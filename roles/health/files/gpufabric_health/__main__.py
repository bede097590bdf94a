# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-health run EXPECTED_STATE | once EXPECTED_STATE.

run: sample every interval and replace the textfile atomically, until SIGTERM; a sample that fails is logged and
the next one tried (the textfile keeps the last good sample, and its timestamp series says how old it is).
once: one sample to standard output.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import subprocess
import sys
import time

from ansible_collections.gpufabric.core.plugins.module_utils import health_sample, prometheus_text, systemd_units

LOG = logging.getLogger("gpufabric-health")
COMMAND_TIMEOUT_S = 10


def run_command(argv):
    """(exit code, stdout) of a read-only command; a missing program or a timeout is an OSError."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as exc:
        raise OSError("%s timed out after %d s" % (argv[0], COMMAND_TIMEOUT_S)) from exc
    return result.returncode, result.stdout


def load(path):
    with open(path, encoding="utf-8") as handle:
        expected = json.load(handle)
    if expected.get("version") != health_sample.SCHEMA_VERSION:
        raise ValueError("%s: schema version %r, this program reads %d"
                         % (path, expected.get("version"), health_sample.SCHEMA_VERSION))
    return expected


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpufabric-health")
    parser.add_argument("action", choices=("run", "once"))
    parser.add_argument("expected_state")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    expected = load(args.expected_state)
    sampler = health_sample.Sampler(expected, run=run_command)
    if args.action == "once":
        sys.stdout.write(sampler.sample().render())
        return 0
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    interval = float(expected["interval"])
    ready = False
    while not stopping:
        started = time.monotonic()
        try:
            prometheus_text.write_textfile(expected["textfile"], sampler.sample().render())
            systemd_units.sd_notify("WATCHDOG=1", LOG)
        except Exception as exc:  # pylint: disable=broad-except
            # The textfile keeps the last good sample; its timestamp series tells Prometheus how old it is.
            LOG.exception("sample failed: %s", exc)
        if not ready:
            systemd_units.sd_notify("READY=1", LOG)
            ready = True
        deadline = started + interval
        while not stopping and time.monotonic() < deadline:
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
