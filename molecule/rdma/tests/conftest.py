"""Helpers for tests that run ansible-playbook against the scenario's instance from the verifier (the shared ones in
tests/molecule_helpers.py, bound to this scenario)."""

import sys
from pathlib import Path

SCENARIO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCENARIO_DIR.parents[1] / "tests"))

import molecule_helpers  # noqa: E402

# The tests import both from conftest.
task_results = molecule_helpers.task_results


def run_playbook(playbook, *args):
    """Run a playbook of this scenario on its inventory; return (rc, parsed JSON callback output, text)."""
    return molecule_helpers.run_playbook(SCENARIO_DIR, playbook, *args)
