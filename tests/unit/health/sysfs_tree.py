"""Lay a sysfs capture (tests/fixtures/sysfs/*.tsv: path, tab, content or '-> symlink target') out as a real tree."""

import os

from fixture_data import read_fixture


def materialize(relpath, root):
    """Write the capture under root (a pathlib.Path) as files and symlinks; returns root.

    A path is relative to /sys, or absolute under /sys as scripts/gpu-capture.sh writes it; anything else is
    refused, so that no capture line can make a test write outside root."""
    for line in read_fixture(relpath).splitlines():
        if not line.strip():
            continue
        path, content = line.split("\t", 1)
        if path.startswith("/sys/"):
            path = path[len("/sys/"):]
        if os.path.isabs(path) or ".." in path.split("/"):
            raise ValueError("%s: %r is not a path under /sys" % (relpath, path))
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        if content.startswith("-> "):
            os.symlink(content[3:], target)
        else:
            target.write_text(content.replace("\\n", "\n") + "\n")
    return root
