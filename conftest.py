"""Make `ansible_collections.gpufabric.core` importable for plain pytest runs.

The repository root is the collection root; a symlink under .build/collections gives it the
path Python needs without installing the collection.
"""

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
_COLLECTIONS = ROOT / ".build" / "collections"
_LINK = _COLLECTIONS / "ansible_collections" / "gpufabric" / "core"

if not _LINK.exists():
    _LINK.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(ROOT, _LINK)
if str(_COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(_COLLECTIONS))
