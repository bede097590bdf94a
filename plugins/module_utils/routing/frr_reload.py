# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What `frr-reload.py --test FILE` says it would change in the running FRR configuration.

frr-reload.py compares a configuration file with `show running-config` and prints two sections on stdout,
"Lines To Delete" and "Lines To Add", each a list of commands under their context (`router bgp 65001`,
` neighbor eth1 bfd`). Nothing to change prints nothing (an empty line). Its INFO log goes to stderr.
"""

from __future__ import annotations

SECTIONS = {"Lines To Delete": "delete", "Lines To Add": "add"}


class FrrReloadError(ValueError):
    """frr-reload.py printed something this parser does not know."""


def parse_reload_test(text):
    """{'delete': [lines], 'add': [lines]} from frr-reload.py --test's stdout; lines keep their indentation."""
    result = {"delete": [], "add": []}
    current = None
    lines = (text or "").splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].rstrip("\r")
        if line in SECTIONS:
            current = SECTIONS[line]
            # The heading is underlined with '=' signs.
            if index + 1 < len(lines) and set(lines[index + 1].strip()) == {"="}:
                index += 1
        elif line.strip():
            if current is None:
                raise FrrReloadError("frr-reload.py --test: unexpected output before any section: %r" % line)
            result[current].append(line)
        index += 1
    return result


def changes_pending(parsed):
    """Whether applying the file would change the running configuration."""
    return bool(parsed["delete"] or parsed["add"])


def diff_text(parsed):
    """A readable before/after of the running configuration's lines, for Ansible's diff."""
    before = "".join("- %s\n" % line for line in parsed["delete"])
    after = "".join("+ %s\n" % line for line in parsed["add"])
    return before, after


def enable_daemons(text, names):
    """The daemons file (/etc/frr/daemons) with NAME=yes for each of names: a NAME= line is set (the last, as
    watchfrr's shell reading of the file lets the last one win), a missing one is added at the end."""
    lines = (text or "").splitlines()
    for name in names:
        found = [index for index, line in enumerate(lines) if line.startswith(name + "=")]
        if found:
            lines[found[-1]] = name + "=yes"
        else:
            lines.append(name + "=yes")
    return "\n".join(lines) + "\n"
