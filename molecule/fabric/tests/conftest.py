"""What converge wrote on the controller: the fabric map of discover.yml and the Slurm files of
playbooks/scheduler.yml."""

import json
import os
from pathlib import Path

import pytest

REPORTS = Path(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "/nonexistent")) / "reports"


@pytest.fixture(scope="session")
def fabric_map():
    return json.loads((REPORTS / "fabric_map.json").read_text())


@pytest.fixture(scope="session")
def fabric_html():
    return (REPORTS / "fabric_map.html").read_text()


@pytest.fixture(scope="session")
def slurm_result():
    return json.loads((REPORTS / "slurm_topology.json").read_text())


@pytest.fixture(scope="session")
def reports():
    return REPORTS
