"""The real captured command outputs in tests/fixtures, for unit tests.

Import from tests as `from fixture_data import read_fixture, fixture_names` (pytest puts tests/unit on sys.path
through its conftest.py). tests/fixtures/README.md says where each capture came from.

A capture with CRLF line endings is kept gzip-compressed (`NAME.txt.gz`), so that nothing on the way (git's
autocrlf, an editor, ansible-test's line-endings check) rewrites the bytes a parser must handle; it is read and
listed under its plain name.
"""

import gzip
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture_bytes(relpath):
    """The capture's bytes, provenance header included."""
    path = FIXTURES / relpath
    if not path.exists() and path.with_name(path.name + ".gz").exists():
        return gzip.decompress(path.with_name(path.name + ".gz").read_bytes())
    return path.read_bytes()


def read_fixture(relpath):
    """Return a fixture's captured output, without its line-1 provenance header."""
    # Bytes, not read_text(): universal newlines would hide the CRLF endings parsers must handle.
    text = fixture_bytes(relpath).decode("utf-8", errors="replace")
    return text.split("\n", 1)[1] if text.startswith("# source:") else text


def fixture_names(folder):
    return sorted(p.name[:-3] if p.name.endswith(".gz") else p.name for p in (FIXTURES / folder).iterdir() if p.is_file())


# sysfs of the container lab's two veth "cables" eth1 and eth2 (scripts/lab.sh), as the kernel prints it; the
# lab's LLDP captures (lldp/lab-*) were taken on them.
LAB_CABLES_SYSFS = {"class/net/%s/%s" % (name, key): value for name in ("eth1", "eth2") for key, value in (
    ("type", "1"), ("operstate", "up"), ("speed", "10000"), ("mtu", "1500"), ("uevent", "DEVTYPE=veth"))}
