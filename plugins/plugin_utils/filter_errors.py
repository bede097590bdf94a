# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side helper shared by the collection's filters."""

from __future__ import annotations

import functools

from ansible.errors import AnsibleFilterError


def raising_filter_error(name, func, errors):
    """Return func as the filter gpufabric.core.<name>: the given errors become AnsibleFilterError.

    The message is the error's own sentence prefixed with the filter's name, without the Python traceback
    (`from None`), which tells a playbook author nothing.
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except errors as exc:
            raise AnsibleFilterError("gpufabric.core.%s: %s" % (name, exc)) from None

    return wrapper


def settings_problems_filter(name, problems, what=""):
    """FilterModule.filters()' entry for a problems filter over a role's variables by name: the input must be a dict
    ("the input must be a dict of <what>, got <type>"), further arguments go to problems(settings, ...) unchanged,
    and a TypeError (the input's or problems') becomes the AnsibleFilterError of gpufabric.core.<name>."""

    def check(settings, *args, **kwargs):
        if not isinstance(settings, dict):
            raise TypeError("the input must be a dict%s, got %s" % (" of " + what if what else "",
                                                                    type(settings).__name__))
        return problems(settings, *args, **kwargs)

    return {name: raising_filter_error(name, check, (TypeError,))}
