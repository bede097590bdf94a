"""The fabric map discover.yml wrote on the controller during converge."""

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
