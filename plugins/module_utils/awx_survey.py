# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Turn a role's meta/argument_specs.yml into an AWX job template survey.

AWX surveys can express text, numbers and fixed choices, not lists, dicts or real booleans (a survey answer reaches
the play as a string, and "false" is a true string). Options of those types, and options marked no_log, are left
out: they belong in inventory group_vars, where their types survive.
"""

from __future__ import annotations

_QUESTION_TYPES = {"str": "text", "path": "text", "int": "integer", "float": "float"}


class SurveyError(ValueError):
    pass


def _question(name, spec):
    choices = spec.get("choices")
    question_type = "multiplechoice" if choices else _QUESTION_TYPES[spec.get("type", "str")]
    description = spec.get("description", "")
    if isinstance(description, list):
        description = " ".join(description)
    question = {
        "question_name": name,
        "question_description": description[:1000],
        "variable": name,
        "type": question_type,
        "required": bool(spec.get("required", False)),
    }
    if choices:
        question["choices"] = [str(choice) for choice in choices]
    default = spec.get("default")
    # A templated default ("{{ lookup('ansible.builtin.env', 'HOME') }}/...") means something only in the role's
    # defaults/main.yml; left out, an unanswered question keeps the role's default.
    if default is not None and not (isinstance(default, str) and "{{" in default):
        question["default"] = str(default) if question_type in ("text", "multiplechoice") else default
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
