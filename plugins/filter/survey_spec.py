# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: survey_spec
short_description: Build an AWX job template survey from a role's argument_specs
version_added: 0.1.0
description:
  - Turns the options of one entry point of a role's C(meta/argument_specs.yml) into the survey spec that
    M(awx.awx.job_template) takes, so that surveys never drift from the roles' documented variables.
  - String and path options become text questions, integers and floats numeric questions, options with C(choices)
    multiple-choice questions; descriptions are carried over without ansible-doc's markup.
  - No question has a default. AWX passes every survey default as an extra var, which would replace the inventory's
    per-group values on every launch; an unanswered question passes nothing, and its description names the role's
    default.
  - Lists, dicts, booleans and C(no_log) options are left out. AWX survey answers reach the play as strings, so
    those belong in inventory variables.
positional: _input, role
options:
  _input:
    description: The parsed content of a role's C(meta/argument_specs.yml).
    type: dict
    required: true
  role:
    description: The role's name, used in the survey's name and error messages.
    type: str
    required: true
  entry_point:
    description: The entry point whose options become questions.
    type: str
    default: main
"""

EXAMPLES = r"""
- name: Job template with a survey generated from the rdma role
  awx.awx.job_template:
    name: gpufabric rdma
    playbook: playbooks/rdma.yml
    project: gpufabric.core
    inventory: GPU fleet
    survey_enabled: true
    survey_spec: >-
      {{ lookup('ansible.builtin.file', 'roles/rdma/meta/argument_specs.yml') | ansible.builtin.from_yaml
         | gpufabric.core.survey_spec('rdma') }}
"""

RETURN = r"""
_value:
  description: The survey spec, with C(name), C(description) and C(spec), a list of questions.
  type: dict
  sample:
    name: rdma options
    description: Generated from roles/rdma/meta/argument_specs.yml by gpufabric.core.survey_spec.
    spec:
      - question_name: rdma_driver_source
        question_description: "Left empty: the inventory's value, else the role's default inbox. Where the RDMA stack comes from."
        variable: rdma_driver_source
        type: multiplechoice
        required: false
        choices: [inbox, doca]
"""

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.awx_survey import SurveyError, survey_spec
from ansible_collections.gpufabric.core.plugins.plugin_utils.filter_errors import raising_filter_error


class FilterModule:
    def filters(self):
        return {"survey_spec": raising_filter_error("survey_spec", survey_spec, SurveyError)}
