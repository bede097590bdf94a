# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark only (benchmarks/bench_fleet.py): answers each module with what a converged lab host answered.

Never shipped (galaxy.yml build_ignore: benchmarks) and never used by a test in place of a host. The answers are
recorded from the container lab by benchmarks/fleet/record.sh (the fleet_recording connection, ssh that keeps every
module's output) into benchmarks/fleet/recorded/<lab host>/<key>.json. A simulated host names its lab host in
fleet_bench_source; its own addresses replace the lab host's in every answer (fleet_bench_replace), so that no two simulated hosts
claim one address. A module call is matched by its module and arguments, then by its module and the arguments that
name what it acts on (path, name, ...), then by its module alone; every miss is counted in FLEET_BENCH_MISSES.
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_recorded
short_description: Benchmark only, answers modules with a converged lab host's recorded results
description: Benchmark only, answers modules with a converged lab host's recorded results.
author: gpufabric.core contributors
options:
  source_host:
    description: The address of the lab host whose recorded answers this host gets (replaced by this host's).
    vars:
      - name: fleet_bench_source
  replace:
    description: Addresses of the lab host and this host's own in their place (its SSH and IPsec VLAN addresses).
    type: dict
    vars:
      - name: fleet_bench_replace
"""

import os
import re

from ansible.plugins.connection import ConnectionBase

try:
    from fleet_keys import module_call, record_keys  # pylint: disable=import-error
except ImportError:  # loaded by path: the helper sits beside this file
    import importlib.util
    _SPEC = importlib.util.spec_from_file_location(
        "fleet_keys", os.path.join(os.path.dirname(os.path.abspath(__file__)), "fleet_keys.py"))
    _KEYS = importlib.util.module_from_spec(_SPEC)
    _SPEC.loader.exec_module(_KEYS)
    module_call, record_keys = _KEYS.module_call, _KEYS.record_keys

RECORDED = os.environ.get("FLEET_BENCH_RECORDED", os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "recorded", "answers"))
MISSES = os.environ.get("FLEET_BENCH_MISSES")
CONVERGED = b'{"changed": false}'


class Connection(ConnectionBase):
    transport = "fleet_recorded"
    has_pipelining = True
    always_pipeline_modules = True

    def _connect(self):
        self._connected = True
        return self

    def _answer(self, module, keys):
        source = self.get_option("source_host")
        for key in keys:
            try:
                with open(os.path.join(RECORDED, source, key + ".json"), "rb") as handle:
                    data = handle.read()
                break
            except OSError:
                continue
        else:
            if MISSES:
                with open(MISSES, "a", encoding="utf-8") as handle:
                    handle.write("%s %s\n" % (self._play_context.remote_addr, module))
            return CONVERGED
        for there, here in (self.get_option("replace") or {}).items():
            data = re.sub(br"(?<![0-9.])" + re.escape(there.encode()) + br"(?![0-9])", here.encode(), data)
        return data

    def exec_command(self, cmd, in_data=None, sudoable=True):
        super().exec_command(cmd, in_data=in_data, sudoable=sudoable)
        call = module_call(in_data)
        if call is not None:
            return 0, self._answer(call[0], record_keys(*call)), b""
        # Temporary directories (an action that transfers a file): answer what the shell's echo prints.
        if "ansible-tmp-" in cmd and "mkdir" in cmd:
            name = cmd.split("echo ansible-tmp-", 1)[1].split("=", 1)[0]
            return 0, ("ansible-tmp-%s=/root/.ansible/tmp/ansible-tmp-%s\n" % (name, name)).encode(), b""
        return 0, b"", b""

    def put_file(self, in_path, out_path):
        super().put_file(in_path, out_path)

    def fetch_file(self, in_path, out_path):
        super().fetch_file(in_path, out_path)
        with open(out_path, "wb"):
            pass

    def close(self):
        self._connected = False
