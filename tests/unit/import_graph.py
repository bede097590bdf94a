"""The collection's module_utils import graph, read from the source (ast), not from a list typed by hand.

module_utils_imports(path) names the module_utils files (paths relative to plugins/module_utils) that one Python
file imports, absolutely (ansible_collections.gpufabric.core.plugins.module_utils...) or relatively from inside
module_utils, at any depth of the file (imports inside functions and try blocks count: a host program runs them).
closure(paths) follows those edges to every module_utils file a program needs on a host.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODULE_UTILS = ROOT / "plugins" / "module_utils"
DOTTED = "ansible_collections.gpufabric.core.plugins.module_utils"


def _file_of(parts):
    """The module_utils file (relative path) of a dotted module below module_utils, or None."""
    if not parts:
        return None
    candidate = MODULE_UTILS.joinpath(*parts).with_suffix(".py")
    return candidate.relative_to(MODULE_UTILS).as_posix() if candidate.is_file() else None


def _package_parts(path):
    """The dotted parts of the module_utils package holding path (a file under module_utils), else None."""
    try:
        return list(Path(path).resolve().relative_to(MODULE_UTILS).parent.parts)
    except ValueError:
        return None


def module_utils_imports(path):
    """Relative paths of the module_utils files path imports."""
    tree = ast.parse(Path(path).read_text(), str(path))
    found = set()
    prefix = DOTTED.split(".")
    for node in ast.walk(tree):
        targets = []
        if isinstance(node, ast.Import):
            targets = [(alias.name.split("."), []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [alias.name for alias in node.names]
            if node.level:
                package = _package_parts(path)
                if package is None:
                    continue
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                targets = [(prefix + base + (node.module.split(".") if node.module else []), names)]
            else:
                targets = [((node.module or "").split("."), names)]
        for parts, names in targets:
            if parts[:len(prefix)] != prefix:
                continue
            rest = parts[len(prefix):]
            module = _file_of(rest)
            if module:
                found.add(module)
            for name in names:
                member = _file_of(rest + [name])
                if member:
                    found.add(member)
    return found


def closure(paths):
    """Every module_utils file (relative path) the given files import, directly or through each other; a given
    module_utils file counts itself."""
    seen = set()
    todo = []
    for path in paths:
        path = Path(path).resolve()
        try:
            seen.add(path.relative_to(MODULE_UTILS).as_posix())
        except ValueError:
            pass
        todo.append(path)
    done = set()
    while todo:
        path = todo.pop()
        if path in done:
            continue
        done.add(path)
        for name in module_utils_imports(path):
            seen.add(name)
            todo.append(MODULE_UTILS / name)
    return seen
