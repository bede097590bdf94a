# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every module says in its documentation how it behaves in check mode and diff mode (ansible-doc's ATTRIBUTES):
a user deciding whether `--check --diff` is safe on a fleet reads it there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "plugins" / "modules").glob("*.py"))


def documentation(path):
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no DOCUMENTATION" % path.name)


@pytest.mark.parametrize("path", MODULES, ids=[path.stem for path in MODULES])
def test_module_documents_check_mode_and_diff_mode(path):
    attributes = documentation(path).get("attributes") or {}
    for attribute in ("check_mode", "diff_mode"):
        documented = attributes.get(attribute, {})
        assert documented.get("support") in ("full", "partial", "none"), (path.name, attribute)
        # "none" explains itself; full or partial support says what check or diff mode then shows.
        assert documented["support"] == "none" or documented.get("description") or documented.get("details"), \
            (path.name, attribute)
    # The attributes' common text and the platform come from one doc fragment; the module says its own support.
    assert "gpufabric.core.attributes" in documentation(path).get("extends_documentation_fragment", []), path.name
