# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark only: the keys under which a module call's recorded answer is kept (fleet_recording writes them,
fleet_recorded reads them)."""

from __future__ import annotations

import ast
import hashlib
import json

MARK = b"_ansiballz_main(\n"
# Arguments that name what a module acts on: a second, looser key, for calls whose other arguments hold values that
# grow with the fleet (peer lists) or differ between hosts.
NAMING = ("path", "dest", "name", "src", "_raw_params", "argv", "cmd", "unit", "service", "key", "filename",
          "device", "interface", "file", "section", "option", "repo", "table")


def module_call(in_data):
    """(module name, its arguments) of a pipelined AnsiballZ payload; None for any other command."""
    if not in_data:
        return None
    start = in_data.rfind(MARK)
    if start < 0:
        return None
    fields = {}
    for line in in_data[start + len(MARK):].split(b"\n"):
        for field in (b"ansible_module", b"params"):
            if line.startswith(field + b"="):
                fields[field.decode()] = ast.literal_eval(line[len(field) + 1:].rstrip(b",").decode())
        if len(fields) == 2:
            break
    args = json.loads(fields.get("params", "{}")).get("ANSIBLE_MODULE_ARGS", {})
    args = {key: value for key, value in args.items() if not key.startswith("_ansible_")}
    return fields.get("ansible_module", "unknown"), args


def _digest(value):
    return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]


def record_keys(module, args):
    """The keys of one call, most specific first."""
    naming = {key: args[key] for key in NAMING if key in args}
    return [module + "-" + _digest(args), module + "-n" + _digest(naming), module]
