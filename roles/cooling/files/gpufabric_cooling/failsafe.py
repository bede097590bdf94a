# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The first step of every stop: drive each fan in the fail-safe record to full duty.

This file is the stop path's floor and depends on nothing that can fail before it runs: no configuration
file, no validation, no other module of the package, only the standard library. The controller writes the
record (one JSON object per line, one fan group per line) when it starts, from a configuration it has
validated; here each line is read, and its fans driven to full duty, on its own: a line that is corrupt, a
file that cannot be written or a BMC that does not answer costs that group only.

Record lines:
  {"group": "chassis", "backend": "hwmon", "root": "/sys/class/hwmon", "target": "nct6798/pwm1"}
  {"group": "bmc", "backend": "command", "timeout": 12, "commands": [["ipmitool", ...], ...]}
  {"group": "rack", "backend": "redfish_patch", "url": "https://bmc/redfish/v1/...", "body": {...}, ...}
"""

from __future__ import annotations

import base64
import glob
import json
import os
import re
import ssl
import subprocess
import urllib.request

# pwm files only: the record must never make this code write anywhere else.
_PWM_FILE = re.compile(r"pwm[1-9][0-9]?")
_CHIP = re.compile(r"[A-Za-z0-9_.-]{1,64}")
FULL_PWM = "255"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect is refused: credentials go to the recorded BMC URL and nowhere else."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def _under(path, root):
    path, root = os.path.normpath(path), os.path.normpath(root)
    return path.startswith(root.rstrip("/") + "/") and ".." not in path.split("/")


def _hwmon_pwm_path(entry):
    root, target = entry["root"], entry["target"]
    if not os.path.isabs(root) or not _under(os.path.join(root, "x"), root) or root.startswith("/proc"):
        raise ValueError("hwmon root %r is not an absolute directory outside /proc" % root)
    if target.startswith("/"):
        path = target
    else:
        chip, name = target.split("/", 1)
        if not _CHIP.fullmatch(chip) or chip in (".", ".."):
            raise ValueError("hwmon chip name %r is not a plain name" % chip)
        found = []
        for directory in sorted(glob.glob(os.path.join(root, "hwmon*"))):
            try:
                with open(os.path.join(directory, "name"), encoding="ascii") as handle:
                    if handle.read().strip() == chip:
                        found.append(directory)
            except OSError:
                continue
        if len(found) != 1:
            raise ValueError("%d hwmon chips named %r under %s" % (len(found), chip, root))
        path = os.path.join(found[0], name)
    if not _under(path, root) or not _PWM_FILE.fullmatch(os.path.basename(path)):
        raise ValueError("%s is not a pwm file under %s" % (path, root))
    return path


def _write(path, value):
    with open(path, "w", encoding="ascii") as handle:
        handle.write(value + "\n")


def _hwmon_full(entry):
    path = _hwmon_pwm_path(entry)
    if os.path.exists(path + "_enable"):
        _write(path + "_enable", "1")  # manual, so the firmware cannot lower it again
    _write(path, FULL_PWM)
    return "%s = %s" % (path, FULL_PWM)


def _commands_full(entry):
    for argv in entry["commands"]:
        if not isinstance(argv, list) or not argv or not all(isinstance(word, str) for word in argv):
            raise ValueError("a command is not an argument list: %r" % (argv,))
        result = subprocess.run(argv, capture_output=True, text=True, timeout=float(entry["timeout"]), check=False,
                                stdin=subprocess.DEVNULL)
        if result.returncode != 0:
            raise ValueError("%s exited %d: %s" % (argv[0], result.returncode, (result.stderr or result.stdout).strip()[:200]))
    return "%d commands done" % len(entry["commands"])


def _redfish_full(entry):
    url = entry["url"]
    if not url.startswith("https://") and not (url.startswith("http://") and entry.get("allow_insecure_http") is True):
        raise ValueError("refusing %s: not https" % url)
    request = urllib.request.Request(url, data=json.dumps(entry["body"]).encode(), method="PATCH")
    request.add_header("Content-Type", "application/json")
    if entry.get("user"):
        with open(entry["password_file"], encoding="utf-8") as handle:
            secret = "%s:%s" % (entry["user"], handle.read().strip())
        request.add_header("Authorization", "Basic " + base64.b64encode(secret.encode()).decode())
    if url.startswith("https://"):
        context = ssl.create_default_context(cafile=entry.get("ca_file") or None)
        if entry.get("verify_tls") is False:
            context = ssl._create_unverified_context()  # pylint: disable=protected-access
        handlers = [urllib.request.HTTPSHandler(context=context), _NoRedirect()]
    else:
        handlers = [_NoRedirect()]
    with urllib.request.build_opener(*handlers).open(request, timeout=float(entry["timeout"])) as response:
        return "PATCH %s: HTTP %d" % (url, response.status)


_DRIVERS = {"hwmon": _hwmon_full, "command": _commands_full, "redfish_patch": _redfish_full}


def drive_full(record_path, log):
    """Drive every group of the record to full duty. Returns (groups done, [sentences of what failed])."""
    done, failures = [], []
    try:
        with open(record_path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError as exc:
        failures.append("fail-safe record %s unreadable: %s" % (record_path, exc))
        log.error("%s", failures[-1])
        return done, failures
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.startswith("#"):
            continue
        group = "line %d" % number
        try:
            entry = json.loads(line)
            group = str(entry.get("group", group))
            outcome = _DRIVERS[entry["backend"]](entry)
            done.append(group)
            log.warning("fail-safe record: fan group %s set to 100 %% (%s)", group, outcome)
        except Exception as exc:  # pylint: disable=broad-except
            # Whatever this group's fault, the next group still gets its full duty.
            failures.append("fail-safe record %s: fan group %s: %s: %s" % (record_path, group, type(exc).__name__, exc))
            log.error("%s", failures[-1])
    return done, failures
