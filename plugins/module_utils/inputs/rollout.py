# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rolling-batch settings of the collection's playbooks (gpufabric_serial, gpufabric_max_fail_percentage).

Ansible runs every host at once for a `serial` of 0 or below and stops with a Python traceback for a word, so a
mistyped batch size would either roll a change onto the whole fleet at once or fail with nothing a person can act
on. These checks run before the first task (site.yml's first play, and the `serial:` line of each playbook).
"""

from __future__ import annotations

import re

PERCENT = re.compile(r"([0-9]+)%")
DIGITS = re.compile(r"[+-]?[0-9]+")


class RolloutError(ValueError):
    """A rolling-batch setting is unusable; the message names the variable."""


def _batch_problem(name, value):
    if isinstance(value, bool):
        return "%s: must be a number of hosts (1 or more) or a percentage such as 10%%; got %r" % (name, value)
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and DIGITS.fullmatch(value.strip()):
        number = int(value.strip())
    elif isinstance(value, str) and PERCENT.fullmatch(value.strip()):
        percent = int(PERCENT.fullmatch(value.strip()).group(1))
        if not 1 <= percent <= 100:
            return "%s: a percentage of the play's hosts must be from 1%% to 100%%; got %r" % (name, value)
        return None
    else:
        return ("%s: must be a number of hosts (1 or more) or a whole percentage such as 10%%; got %r"
                % (name, value))
    if number < 1:
        # Ansible would run every host in one batch: the opposite of what a batch size asks for.
        return ("%s: must be at least 1 host per batch (Ansible runs every host at once for %r); use 100%% for "
                "one batch" % (name, value))
    return None


def serial_problems(value, name="gpufabric_serial"):
    """Problems with a play's serial: one batch size, or a list of them (Ansible's growing batches)."""
    if isinstance(value, list):
        if not value:
            return ["%s: an empty list gives no batch size; use 100%% for one batch" % name]
        found = [_batch_problem("%s[%d]" % (name, index), item) for index, item in enumerate(value)]
        return [problem for problem in found if problem]
    problem = _batch_problem(name, value)
    return [problem] if problem else []


def max_fail_percentage_problems(value, name="gpufabric_max_fail_percentage"):
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and DIGITS.fullmatch(value.strip()):
        number = int(value.strip())
    if number is None or not 0 <= number <= 100:
        return ["%s: must be a whole percentage from 0 to 100 of the play's hosts that may fail; got %r"
                % (name, value)]
    return []


def rollout_problems(settings):
    """Problems with the rollout variables present in settings (a dict of name: value)."""
    problems = []
    if "gpufabric_serial" in settings:
        problems.extend(serial_problems(settings["gpufabric_serial"]))
    if "gpufabric_max_fail_percentage" in settings:
        problems.extend(max_fail_percentage_problems(settings["gpufabric_max_fail_percentage"]))
    return problems


def checked_serial(value, name="gpufabric_serial"):
    """value, when it is a usable serial; else RolloutError naming the variable."""
    problems = serial_problems(value, name)
    if problems:
        raise RolloutError("; ".join(problems))
    return value
