# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One layout for every host program (the cooling controller, the bonding activation helper, the rdma tuning
program, the health sampler), private to the collection.

A host program is installed under its library directory LIB as:

- LIB/ansible_collections/gpufabric/core/plugins/module_utils/<path>: the collection's module_utils it imports,
  copied unchanged at their path in the collection (subpackages included), with an empty __init__.py in every
  directory of that tree, so that the module_utils import each other on the host exactly as in the collection;
- LIB/<package>/<name>: the program's own files (a package, or a single script when package is empty);
- a launcher (command) that puts LIB first on sys.path and runs the program.

The program imports the collection's code absolutely (ansible_collections.gpufabric.core.plugins.module_utils...):
one import line works from the collection (unit tests, the controller) and on the host. The module that installs
the program plans these entries with the rest of its files, as one file_transaction. Standard library only.
"""

from __future__ import annotations

import posixpath

TREE = "ansible_collections/gpufabric/core/plugins/module_utils"
DOTTED = TREE.replace("/", ".")
DIRECTORY_MODE = 0o755
FILE_MODE = 0o644


def _plain(part):
    return bool(part) and part not in (".", "..") and not part.startswith(".")


def name_problems(files, option, program=False):
    """Problems of the names in files (option names the module option): relative .py paths of the collection's
    module_utils (subpackages allowed; their __init__.py is the installer's own), or with program true plain .py
    names of the program's own package (its __init__.py included)."""
    problems = []
    for name in sorted(files):
        parts = name.split("/")
        if (not name.endswith(".py") or not all(_plain(part) for part in parts)
                or (program and len(parts) > 1) or (not program and parts[-1] == "__init__.py")):
            problems.append("%s: %r is not a plain relative .py file name" % (option, name))
    return problems


def _tree_directories(module_utils):
    """Directories of the module_utils tree, relative to LIB, parents first."""
    parts = TREE.split("/")
    found = ["/".join(parts[:depth]) for depth in range(1, len(parts) + 1)]
    for name in sorted(module_utils):
        sub = posixpath.dirname(name).split("/") if posixpath.dirname(name) else []
        for depth in range(1, len(sub) + 1):
            path = "%s/%s" % (TREE, "/".join(sub[:depth]))
            if path not in found:
                found.append(path)
    return found


def directories(lib_dir, module_utils, package=""):
    """(path, mode) of every directory the program's files live in, parents first."""
    found = [(lib_dir, DIRECTORY_MODE)]
    found += [(posixpath.join(lib_dir, path), DIRECTORY_MODE) for path in _tree_directories(module_utils)]
    if package:
        found.append((posixpath.join(lib_dir, package), DIRECTORY_MODE))
    return found


def entries(lib_dir, module_utils, program=None, package="", mode=FILE_MODE, owner=None):
    """file_transaction entries, in install order: the module_utils tree (with its empty __init__.py files), then
    the program's files (in LIB/package, or LIB itself when package is empty). module_utils and program map relative
    paths to their text. owner, when given, is every entry's (uid, gid)."""
    found = [{"path": posixpath.join(lib_dir, path, "__init__.py"), "content": ""}
             for path in _tree_directories(module_utils)]
    found += [{"path": posixpath.join(lib_dir, TREE, name), "content": module_utils[name]}
              for name in sorted(module_utils)]
    program = program or {}
    found += [{"path": posixpath.join(lib_dir, package, name), "content": program[name]} for name in sorted(program)]
    for entry in found:
        entry["mode"] = mode
        if owner is not None:
            entry["owner"] = owner
    return found


def launcher_text(lib_dir, module, comment_lines, function="main", python="/usr/bin/python3"):
    """A command that puts lib_dir first on sys.path and exits with module.function()'s result. module is dotted,
    relative to lib_dir (a program package's module, or DOTTED + '.x' for a module_utils program)."""
    head = "".join("# %s\n" % line for line in comment_lines)
    return ("#!%s\n%simport sys\n\nsys.path.insert(0, \"%s\")\n\nfrom %s import %s  # noqa: E402\n\n"
            "sys.exit(%s())\n") % (python, head, lib_dir, module, function, function)
