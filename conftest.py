"""Make `ansible_collections.gpufabric.core` importable for plain pytest runs, and keep tests inside the repository.

The repository root is the collection root; a symlink under .build/collections gives it the
path Python needs without installing the collection.

A clean clone must test itself, so no test may read what lies beside the repository (a shared fixtures folder, another
checkout): an audit hook refuses every open or directory listing of a sibling of the repository, and the test that
tried fails with the path it reached for. tests/unit/test_self_contained.py checks the hook and the files that
subprocesses read.
"""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent
_COLLECTIONS = ROOT / ".build" / "collections"
_LINK = _COLLECTIONS / "ansible_collections" / "gpufabric" / "core"

if not _LINK.exists():
    _LINK.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(ROOT, _LINK)
if str(_COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(_COLLECTIONS))

_TEMP = os.path.realpath(tempfile.gettempdir())
_ROOT = str(ROOT)
_PARENT = os.path.dirname(_ROOT)
_WATCHED_EVENTS = frozenset({"open", "os.listdir", "os.scandir"})


def outside_repository(path):
    """Whether `path` lies beside the repository (under its parent folder, not under the repository or the temp dir)."""
    if isinstance(path, int) or path is None or _PARENT in ("/", ""):
        return False
    path = os.fsdecode(path)
    if not os.path.isabs(path):
        path = os.path.join(os.getcwd(), path)
    real = os.path.realpath(path)
    # The temporary directory stays open to tests only where it is the repository's parent (a clone in /tmp).
    open_roots = (_ROOT, _TEMP) if _PARENT == _TEMP else (_ROOT,)
    inside = [root for root in open_roots if real == root or real.startswith(root + os.sep)]
    return not inside and (real == _PARENT or real.startswith(_PARENT + os.sep))


def _refuse_reads_beside_the_repository(event, args):
    if event in _WATCHED_EVENTS and args and outside_repository(args[0]):
        raise PermissionError("a test read outside the repository: %s (copy it into tests/fixtures)" % args[0])


sys.addaudithook(_refuse_reads_beside_the_repository)
