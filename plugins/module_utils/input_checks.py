# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small checks shared by the roles' problems functions (rdma_inputs, nccl_inputs, verify_inputs, rollout).

Each returns a sentence naming the variable, or None when the value is fine. Patterns are matched whole
(re.fullmatch): with re.match and `$`, a value with a trailing newline passes and splits the file it is written
into. Values are already typed by the roles' argument_specs, which accept the strings Ansible converts ("5" for an
int), so numbers are read the same way here.
"""

from __future__ import annotations

import math
import posixpath
import re

# Characters no value written into a one-line setting may hold: line ends and NUL (a \r splits a line for
# some readers just as \n does for all of them).
_LINE_BREAKS = re.compile(r"[\r\n\x00\x0b\x0c\x85\u2028\u2029]")
# What a path a role writes may hold: nothing a shell, a unit file or a config line would read differently.
_PATH = re.compile(r"/[A-Za-z0-9_.+@:,/-]*")


def has_line_break(text):
    return bool(_LINE_BREAKS.search(text))


def full_match_problem(name, value, pattern, rule):
    """`name` must be a string matched whole by `pattern` (a compiled regular expression)."""
    if not isinstance(value, str) or has_line_break(value) or not pattern.fullmatch(value):
        return "%s: %s; got %r" % (name, rule, value)
    return None


def as_int(value):
    """The int argument_specs would accept for value (an int or a string of one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"[+-]?[0-9]+", value.strip()):
        return int(value.strip())
    return None


def as_number(value):
    """The float argument_specs would accept for value, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def int_range_problem(name, value, low=None, high=None, allow_none=False, rule=None):
    """`name` must be an integer within [low, high] (either bound may be None)."""
    if value is None and allow_none:
        return None
    number = as_int(value)
    if number is None or (low is not None and number < low) or (high is not None and number > high):
        if rule is None:
            if low is not None and high is not None:
                rule = "must be an integer from %d to %d" % (low, high)
            elif low is not None:
                rule = "must be an integer of at least %d" % low
            else:
                rule = "must be an integer of at most %d" % high
        return "%s: %s; got %r" % (name, rule, value)
    return None


def path_problems(name, value, under=(), exact=(), allow_empty=False, what="path"):
    """Problems with a path a role writes (or reads): absolute, in normal form, inside `under` or one of `exact`.

    The path is normalised (posixpath.normpath) and must already be written that way, so that what the user reads
    in the inventory is the file that is written; `/etc/nccl/../../etc/passwd` is refused twice, for the `..` and
    because /etc/passwd is outside /etc/nccl. `under` lists directories (the path must be strictly below one),
    `exact` whole paths also allowed; both empty: any absolute path.
    """
    if allow_empty and value == "":
        return []
    if not isinstance(value, str) or not value:
        return ["%s: must be an absolute %s; got %r" % (name, what, value)]
    if not _PATH.fullmatch(value):
        return ["%s: must be an absolute %s of letters, digits and _ . + @ : , - only (no whitespace, line breaks, "
                "quotes or shell characters); got %r" % (name, what, value)]
    problems = []
    normal = posixpath.normpath(value)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    if normal != value:
        problems.append("%s: must be written in normal form, without '..', '.', '//' or a trailing '/' "
                        "(it means %s); got %r" % (name, normal, value))
    inside = any(normal == path for path in exact) or any(normal.startswith(directory.rstrip("/") + "/")
                                                          for directory in under)
    if (under or exact) and not inside:
        places = ["under %s/" % directory.rstrip("/") for directory in under] + list(exact)
        problems.append("%s: must be %s; %s is outside" % (name, " or ".join(places), normal))
    return problems


# Every role's <role>_verify: when its verification phase runs. One type for all roles since 0.2.0; the booleans
# some roles took before are deprecated (accepted until 0.3.0): false meant never, true what that role did then,
# after a change (bonding, cooling, ipsec, nccl) or on every run (routing).
VERIFY_MODES = ("after_change", "always", "never")


def verify_mode(value, name, true_means="after_change"):
    """The mode a <role>_verify value stands for: after_change, always or never; a deprecated false gives never and
    a deprecated true gives true_means. Raises ValueError naming the variable for anything else."""
    if isinstance(value, bool):
        return true_means if value else "never"
    if value in VERIFY_MODES:
        return value
    raise ValueError("%s: must be after_change, always or never (true and false are deprecated); got %r"
                     % (name, value))
