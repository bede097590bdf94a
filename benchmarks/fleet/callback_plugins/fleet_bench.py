# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark only (benchmarks/bench_fleet.py, benchmarks/fleet/record.sh); never shipped.

FLEET_BENCH_TASKS=FILE     per task: the controller CPU it took (this process and its reaped workers, from the task's
                           start to the next one's) and how many hosts ran it; written as JSON at the end.
FLEET_BENCH_PROFILE=DIR    every worker runs its task under cProfile and leaves DIR/<pid>.prof (slow: a separate run).
FLEET_BENCH_RECORD=DIR     the ssh connection keeps every pipelined module's answer in DIR/<address>/<key>.json, the
                           answers benchmarks/fleet/connection_plugins/fleet_recorded.py gives simulated hosts.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_bench
type: aggregate
short_description: Benchmark only, per-task controller CPU, worker profiles and recorded module answers
description: Benchmark only, per-task controller CPU, worker profiles and recorded module answers.
author: gpufabric.core contributors
options: {}
"""

import json
import os
import sys

from ansible.plugins.callback import CallbackBase

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "connection_plugins"))
from fleet_keys import module_call, record_keys  # noqa: E402  pylint: disable=import-error,wrong-import-position


def _cpu():
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _record(directory):
    from ansible.plugins.loader import connection_loader
    ssh = connection_loader.get("ssh", class_only=True)
    original = ssh.exec_command

    def exec_command(self, cmd, in_data=None, sudoable=True):
        rc, stdout, stderr = original(self, cmd, in_data=in_data, sudoable=sudoable)
        call = module_call(in_data)
        if call is not None and rc == 0:
            host_dir = os.path.join(directory, str(self.get_option("host")))
            os.makedirs(host_dir, exist_ok=True)
            for key in record_keys(*call):
                with open(os.path.join(host_dir, key + ".json"), "wb") as handle:
                    handle.write(stdout)
        return rc, stdout, stderr

    ssh.exec_command = exec_command


def _profile(directory):
    import cProfile
    from ansible.executor.task_executor import TaskExecutor
    original = TaskExecutor.run

    def run(self):
        profile = cProfile.Profile()
        try:
            return profile.runcall(original, self)
        finally:
            profile.dump_stats(os.path.join(directory, "%d.prof" % os.getpid()))

    TaskExecutor.run = run


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "fleet_bench"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tasks = []
        self._current = None
        self._start = None
        if os.environ.get("FLEET_BENCH_RECORD"):
            _record(os.environ["FLEET_BENCH_RECORD"])
        if os.environ.get("FLEET_BENCH_PROFILE"):
            os.makedirs(os.environ["FLEET_BENCH_PROFILE"], exist_ok=True)
            _profile(os.environ["FLEET_BENCH_PROFILE"])

    def _close(self):
        if self._current is not None:
            self._current["cpu_s"] = round(_cpu() - self._start, 4)
            self._tasks.append(self._current)
            self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        self._current = {"task": task.get_name(), "role": task._role.get_name() if task._role else "",
                         "run_once": bool(task.run_once), "hosts": 0, "skipped": 0}
        self._start = _cpu()

    v2_playbook_on_handler_task_start = v2_playbook_on_task_start

    def _count(self, result, skipped=False):
        if self._current is not None:
            self._current["hosts"] += 1
            self._current["skipped"] += int(skipped)

    def v2_runner_on_ok(self, result):
        self._count(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._count(result)

    def v2_runner_on_skipped(self, result):
        self._count(result, skipped=True)

    def v2_runner_on_unreachable(self, result):
        self._count(result)

    def v2_playbook_on_stats(self, stats):
        self._close()
        if os.environ.get("FLEET_BENCH_TASKS"):
            with open(os.environ["FLEET_BENCH_TASKS"], "w", encoding="utf-8") as handle:
                json.dump(self._tasks, handle)
