"""Shared fixtures for unit tests."""

import re
from pathlib import Path

import pytest
from hypothesis import settings

from fixture_data import read_fixture

# No per-example deadline: these tests assert what is parsed, never how fast, and they share the CPU with the lab
# (tests/conftest.py), where a 200 ms deadline would fail a correct parser on a busy machine.
settings.register_profile("gpufabric", deadline=None)
settings.load_profile("gpufabric")


@pytest.fixture
def fixture_text():
    return read_fixture


# The unit tests that exercise ansible-core itself (its CLI, module runner, filter and callback plugin APIs, argument
# specs), as opposed to plain Python over module_utils: what the older and newer ansible-core lines of
# scripts/compat.sh rerun (`-m ansible_core`), since the rest does not change with the release. Read from each test
# file's source, so that a new test file needs no marking by hand.
_USES_ANSIBLE_CORE = re.compile(
    r"\b(?:from|import) ansible\b|plugins\.(?:modules|filter|callback|plugin_utils)\b"
    r"|ansible-(?:playbook|doc)|ansible_runner|\"ansible\"")


def pytest_collection_modifyitems(items):
    here = Path(__file__).resolve().parent
    uses_core = {}
    for item in items:
        path = item.path
        if here not in path.parents:
            continue
        if path not in uses_core:
            uses_core[path] = bool(_USES_ANSIBLE_CORE.search(path.read_text(encoding="utf-8")))
        if uses_core[path]:
            item.add_marker(pytest.mark.ansible_core)
