"""Shared fixtures for unit tests."""

import pytest

from fixture_data import read_fixture


@pytest.fixture
def fixture_text():
    return read_fixture
