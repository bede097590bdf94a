# Copyright: (c) 2026, gpufabric.core maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A clean clone tests itself: nothing a test reads lies outside the repository."""

import subprocess
import tempfile
from pathlib import Path

import pytest

from fixture_data import FIXTURES, fixture_bytes, fixture_names

ROOT = Path(__file__).resolve().parents[2]


def test_fixtures_are_inside_the_repository():
    assert FIXTURES == ROOT / "tests" / "fixtures"
    assert fixture_names("perftest"), "tests/fixtures/perftest is empty"


def test_every_fixture_keeps_its_source_line():
    captures = [str(p.relative_to(FIXTURES)) for p in FIXTURES.rglob("*.txt*")]
    assert len(captures) >= 40
    missing = [name for name in captures if not fixture_bytes(name.removesuffix(".gz")).startswith(b"# source:")]
    assert missing == []


def test_crlf_captures_keep_their_line_endings():
    text = fixture_bytes("nccl_tests/deepops-dgx-a100-2node-8x200g-k8s-allreduce-old-format.txt")
    assert text.count(b"\r\n") == 37


def test_reading_beside_the_repository_is_refused():
    """The audit hook of the root conftest.py fails any test that reaches past the repository."""
    if ROOT.parent == Path(tempfile.gettempdir()).resolve():
        pytest.skip("the repository's parent is the temporary directory, which tests may use (conftest.py), so nothing"
                    " beside this clone is refused")
    sibling = ROOT.parent / "shared" / "fixtures" / "README.md"
    with pytest.raises(PermissionError, match="outside the repository"):
        sibling.read_bytes()
    with pytest.raises(PermissionError, match="outside the repository"):
        list(ROOT.parent.iterdir())
    with pytest.raises(PermissionError, match="outside the repository"):
        open(ROOT / ".." / ROOT.name / ".." / "x", encoding="utf-8")
    # Inside the repository, and the temporary directory, stay readable.
    assert (ROOT / "README.md").read_bytes()


def test_no_tracked_file_points_beside_the_repository():
    """What subprocesses read (Molecule, ansible-playbook, scripts) cannot be audited in-process: no tracked file
    names a path beside the repository."""
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True, capture_output=True).stdout
    offenders = []
    for name in tracked.decode().split("\0"):
        path = ROOT / name
        if not name or name.startswith("tests/fixtures/") or not path.is_file() or path == Path(__file__):
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        for marker in ("../shared", "GPUFABRIC_FIXTURES"):
            if marker in text:
                offenders.append("%s: %s" % (name, marker))
    assert offenders == []
