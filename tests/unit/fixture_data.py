"""The real captured command outputs in shared/fixtures, for unit tests.

Import from tests as `from fixture_data import read_fixture, fixture_names` (pytest puts tests/unit on sys.path
through its conftest.py).
"""

import os
from pathlib import Path


def _fixtures_dir():
    env = os.environ.get("GPUFABRIC_FIXTURES")
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "fixtures"
        if candidate.is_dir():
            return candidate
    raise RuntimeError("shared/fixtures not found beside the repository; set GPUFABRIC_FIXTURES")


FIXTURES = _fixtures_dir()


def read_fixture(relpath):
    """Return a fixture's captured output, without its line-1 provenance header."""
    # Bytes, not read_text(): universal newlines would hide the CRLF endings parsers must handle.
    text = (FIXTURES / relpath).read_bytes().decode("utf-8", errors="replace")
    return text.split("\n", 1)[1] if text.startswith("# source:") else text


def fixture_names(folder):
    return sorted(p.name for p in (FIXTURES / folder).iterdir() if p.is_file())
