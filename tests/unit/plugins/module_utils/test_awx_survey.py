# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX surveys generated from the roles' real argument specs leave the inventory in charge.

AWX adds every valid survey default to a launch's extra vars (the highest precedence), so a question with a default
replaced the example inventory's per-group values on every launch of `gpufabric rdma` (rdma_expected_rate_gbps
400 -> 0, rdma_driver_source doca -> inbox). tests/integration/test_awx.py renders the same surveys through the filter.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpufabric.core.plugins.module_utils.inputs.awx_survey import plain_text, survey_spec

ROOT = Path(__file__).resolve().parents[4]
ROLES = sorted(path.parent.parent.name for path in ROOT.glob("roles/*/meta/argument_specs.yml"))


def survey(role):
    specs = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return survey_spec(specs, role)["spec"]


@pytest.mark.parametrize("role", ROLES)
def test_no_question_carries_a_default_or_ansible_doc_markup(role):
    for question in survey(role):
        assert "default" not in question, question
        assert not any(marker in question["question_description"] for marker in ("C(", "V(", "O(", "I(", "L(")), \
            question


def test_the_inventorys_values_survive_an_unanswered_survey_and_the_role_default_is_told():
    questions = {question["variable"]: question for question in survey("rdma")}
    inventory = yaml.safe_load((ROOT / "inventories/example/group_vars/hgx_h100.yml").read_text())
    assert inventory["rdma_expected_rate_gbps"] == 400
    rate = questions["rdma_expected_rate_gbps"]
    assert rate["question_description"].startswith("Left empty: the inventory's value, else the role's default 0. ")
    assert "YAML's .inf and .nan are refused" in rate["question_description"]
    assert questions["rdma_driver_source"]["choices"] and "default" not in questions["rdma_driver_source"]


@pytest.mark.parametrize("text, plain", [
    ("C(ib_write_bw) on V(eth1)", "ib_write_bw on eth1"),
    (["Set O(rdma_roce_trust=dscp),", "see L(the guide,https://example.org/x)."], "Set rdma_roce_trust=dscp, see the guide."),
    ("RV(changed) and B(bold), not ABC(x)", "changed and bold, not ABC(x)"),
])
def test_plain_text_drops_ansible_docs_markup(text, plain):
    assert plain_text(text) == plain
