# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpufabric-health run EXPECTED_STATE | once EXPECTED_STATE | clean EXPECTED_STATE.

run: sample every interval and replace the textfile atomically, until SIGTERM; a sample that fails is logged, the
textfile removed and the next one tried. A value that cannot be read now is absent, never the last one read: the
textfile goes when the sampler fails or stops, and GpufabricHealthStale says the host is blind.
once: one sample to standard output.
clean: remove the textfile (the unit's ExecStopPost: after a crash or a watchdog kill too).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import time

from ansible_collections.gpufabric.core.plugins.module_utils.health import sample as health_sample
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import prometheus_text, systemd_units

LOG = logging.getLogger("gpufabric-health")


def load(path):
    with open(path, encoding="utf-8") as handle:
        expected = json.load(handle)
    if expected.get("version") != health_sample.SCHEMA_VERSION:
        raise ValueError("%s: schema version %r, this program reads %d"
                         % (path, expected.get("version"), health_sample.SCHEMA_VERSION))
    return expected


def main(argv=None):
    parser = argparse.ArgumentParser(prog="gpufabric-health")
    parser.add_argument("action", choices=("run", "once", "clean"))
    parser.add_argument("expected_state")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    expected = load(args.expected_state)
    if args.action == "clean":
        remove_textfile(expected["textfile"])
        return 0
    sampler = health_sample.Sampler(expected, run=health_sample.run_command)
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
            LOG.exception("sample failed, textfile removed: %s", exc)
            remove_textfile(expected["textfile"])
        if not ready:
            systemd_units.sd_notify("READY=1", LOG)
            ready = True
        deadline = started + interval
        while not stopping and time.monotonic() < deadline:
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    remove_textfile(expected["textfile"])
    return 0


def remove_textfile(path):
    """Remove the textfile, so that node_exporter serves no value of this host rather than an old one."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        LOG.error("cannot remove %s: %s", path, exc)


if __name__ == "__main__":
    sys.exit(main())
