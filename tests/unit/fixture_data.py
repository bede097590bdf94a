"""The real captured command outputs in tests/fixtures, for unit tests.

Import from tests as `from fixture_data import read_fixture, fixture_names` (pytest puts tests/unit on sys.path
through its conftest.py). tests/fixtures/README.md says where each capture came from.
"""

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def read_fixture(relpath):
    """Return a fixture's captured output, without its line-1 provenance header."""
    # Bytes, not read_text(): universal newlines would hide the CRLF endings parsers must handle.
    text = (FIXTURES / relpath).read_bytes().decode("utf-8", errors="replace")
    return text.split("\n", 1)[1] if text.startswith("# source:") else text


def fixture_names(folder):
    return sorted(p.name for p in (FIXTURES / folder).iterdir() if p.is_file())
