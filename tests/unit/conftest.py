"""Shared fixtures for unit tests."""

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
