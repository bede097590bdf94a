# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn a role's meta/argument_specs.yml into an AWX job template survey.

AWX surveys can express text, numbers and fixed choices, not lists, dicts or real booleans (a survey answer reaches
the play as a string, and "false" is a true string). Options of those types, and options marked no_log, are left
out: they belong in inventory group_vars, where their types survive.

No question carries a default: AWX passes every valid survey default as an extra var, the highest precedence, so a
default would replace the inventory's per-group value on every launch (rdma_expected_rate_gbps 400 -> 0). An
unanswered question passes nothing; the inventory's value, or the role's default, applies. The description says
what the role's default is.
"""

from __future__ import annotations

import re

_QUESTION_TYPES = {"str": "text", "path": "text", "int": "integer", "float": "float"}
# ansible-doc's markup (C(code), V(value), O(option), L(text,URL) ...): AWX shows a survey's text as it is.
_LINK = re.compile(r"\bL\(([^(),]*),[^()]*\)")
_MARKUP = re.compile(r"\b(?:[BCEIMOPUV]|RV)\(([^()]*)\)")


def plain_text(description):
    """An argument spec description as a person reads it in AWX: joined, without ansible-doc's markup."""
    if isinstance(description, list):
        description = " ".join(description)
    return _MARKUP.sub(r"\1", _LINK.sub(r"\1", description))


class SurveyError(ValueError):
    pass


def _question(name, spec):
    choices = spec.get("choices")
    question_type = "multiplechoice" if choices else _QUESTION_TYPES[spec.get("type", "str")]
    description = plain_text(spec.get("description", ""))
    default = spec.get("default")
    # A templated default ("{{ lookup('ansible.builtin.env', 'HOME') }}/...") means something only in the role's
    # defaults/main.yml: it is not shown. First, so that the 1,000 characters AWX keeps never cut it off.
    if default is not None and not (isinstance(default, str) and "{{" in default):
        description = "Left empty: the inventory's value, else the role's default %s. %s" % (default, description)
    question = {
        "question_name": name,
        "question_description": description[:1000],
        "variable": name,
        "type": question_type,
        "required": bool(spec.get("required", False)),
    }
    if choices:
        question["choices"] = [str(choice) for choice in choices]
    return question


def survey_spec(argument_specs, role, entry_point="main"):
    """Return the AWX survey spec for one entry point of a role's argument_specs."""
    try:
        options = argument_specs["argument_specs"][entry_point]["options"]
    except (KeyError, TypeError) as exc:
        raise SurveyError("role %s has no options in argument_specs.%s (missing %s)" % (role, entry_point, exc))
    spec = [
        _question(name, option)
        for name, option in sorted(options.items())
        if not option.get("no_log")
        and (option.get("choices") or option.get("type", "str") in _QUESTION_TYPES)
        and option.get("type", "str") not in ("list", "dict", "bool", "raw")
    ]
    return {
        "name": "%s options" % role,
        "description": "Generated from roles/%s/meta/argument_specs.yml by gpufabric.core.survey_spec." % role,
        "spec": spec,
    }
