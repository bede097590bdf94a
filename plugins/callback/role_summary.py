# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: role_summary
type: aggregate
short_description: Print, after each run, what every role did on how many hosts, and which hosts failed where
description:
  - At the end of a playbook run, prints one line per role (or per play for tasks outside roles) with the number of
    hosts on which its tasks were ok, changed, failed, unreachable or skipped, followed by every failed or unreachable
    host with the task and the first line of the error.
  - On a fleet this is the part of the output an operator reads first, so it names hosts, not counts only.
  - Each line ends with the tasks one host ran in that role or play (the busiest host's count, skipped ones
    included and also counted apart) and, apart, the tasks run once for the whole batch (C(run_once), such as
    checks and reports on the controller), since such a task costs the controller once, not once per host.
  - A failure of a task tagged C(gpufabric_rollout_guard) (the batch guard of this collection's playbooks) is reported
    as the reason the rollout stopped, not as a failed host.
  - Enable it with C(callbacks_enabled) in C(ansible.cfg), as this collection's C(ansible.cfg) does.
requirements:
  - Enabled through C(callbacks_enabled = gpufabric.core.role_summary).
"""

from collections import defaultdict

from ansible.plugins.callback import CallbackBase

_STATES = ("ok", "changed", "failed", "unreachable", "skipped")
_GUARD_TAG = "gpufabric_rollout_guard"


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "gpufabric.core.role_summary"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        # {section: {state: set(host)}}, in the order sections first ran.
        self._sections = {}
        self._problems = []
        self._stops = []
        self._play = ""
        # {section: {host: [tasks, skipped]}}, tasks run once for the batch (run_once) left out
        self._task_counts = defaultdict(lambda: defaultdict(lambda: [0, 0]))
        # {section: {host: tasks run once for the batch}}
        self._once_counts = defaultdict(lambda: defaultdict(int))

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name().strip() or "play"

    def _section(self, result):
        task = result._task
        role = getattr(task, "_role", None)
        return "role %s" % role.get_name() if role else "play %s" % self._play

    def _record(self, result, state, message=None):
        host = result._host.get_name()
        name = self._section(result)
        self._sections.setdefault(name, defaultdict(set))[state].add(host)
        if result._task.run_once:
            self._once_counts[name][host] += 1
        else:
            counts = self._task_counts[name][host]
            counts[0] += 1
            counts[1] += state == "skipped"
        if message is not None:
            first_line = (str(message).strip().splitlines() or [""])[0]
            self._problems.append((state, host, result._task.get_name(), first_line[:240]))

    def v2_runner_on_ok(self, result):
        self._record(result, "changed" if result._result.get("changed") else "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        if _GUARD_TAG in result._task.tags:
            self._stops.append(result._result.get("msg", "rollout stopped"))
        elif not ignore_errors:
            self._record(result, "failed", result._result.get("msg") or result._result.get("stderr") or "failed")

    def v2_runner_on_unreachable(self, result):
        self._record(result, "unreachable", result._result.get("msg") or "unreachable")

    def v2_runner_on_skipped(self, result):
        self._record(result, "skipped")

    def v2_playbook_on_stats(self, stats):
        if not self._sections:
            return
        self._display.banner("GPUFABRIC ROLE SUMMARY")
        width = max(len(name) for name in self._sections)
        for name, states in self._sections.items():
            counts = "  ".join("%s=%d" % (state, len(states.get(state, ()))) for state in _STATES)
            tasks, skipped = max(self._task_counts[name].values(), default=[0, 0])
            once = max(self._once_counts[name].values(), default=0)
            self._display.display("%s  %s  tasks/host=%d (skipped %d)%s" % (
                name.ljust(width), counts, tasks, skipped, "  once=%d" % once if once else ""))
        for state, host, task, message in self._problems:
            self._display.display("%s: %s in task '%s': %s" % (state.upper(), host, task, message), color="red")
        failed_hosts = sorted({host for _state, host, _task, _msg in self._problems})
        if failed_hosts:
            self._display.display("hosts that did not complete: %s" % ", ".join(failed_hosts), color="red")
        for message in self._stops:
            self._display.display("ROLLOUT STOPPED: %s" % message, color="red")
