"""The layers of plugins/module_utils (docs/developing.md, "Layers"), asserted from the real imports.

A package may import its own modules and those of a lower layer, never one of its own layer or above: the graph
between packages has no cycle and no upward or sideways edge. The imports are read from the source
(tests/unit/import_graph.py), imports inside functions included.
"""

import ast

import pytest

from import_graph import MODULE_UTILS, ROOT, module_utils_imports

# Lowest first. hostio and inputs use the standard library only; health (day 2) watches what the roles deployed.
LAYERS = (
    ("hostio", "inputs"),
    ("parsers",),
    ("fabric",),
    ("bonding", "cooling", "ipsec", "nccl", "rdma", "routing", "verify"),
    ("health",),
)
LAYER = {package: level for level, packages in enumerate(LAYERS) for package in packages}


def _package_edges():
    edges = {}
    for path in sorted(MODULE_UTILS.rglob("*.py")):
        source = path.relative_to(MODULE_UTILS)
        for target in module_utils_imports(path):
            if target.split("/")[0] != source.parts[0]:
                edges.setdefault((source.parts[0], target.split("/")[0]), []).append("%s -> %s" % (source.as_posix(), target))
    return edges


def test_every_module_lives_in_a_known_package_without_init():
    files = sorted(MODULE_UTILS.rglob("*.py"))
    assert [f.name for f in files if f.parent == MODULE_UTILS] == [], "module_utils holds packages only"
    assert [f for f in files if f.name == "__init__.py"] == [], "no facade __init__.py (it travels with every module)"
    assert sorted({f.relative_to(MODULE_UTILS).parts[0] for f in files}) == sorted(LAYER)


@pytest.mark.parametrize("edge", sorted(_package_edges()), ids=lambda edge: "%s->%s" % edge)
def test_a_package_imports_only_lower_layers(edge):
    source, target = edge
    assert LAYER[target] < LAYER[source], "%s (layer %d) imports %s (layer %d): %s" % (
        source, LAYER[source], target, LAYER[target], _package_edges()[edge])


def test_module_utils_import_no_plugin():
    """module_utils are the bottom of the collection: modules, filters and the rest import them, not the reverse."""
    found = []
    for path in sorted(MODULE_UTILS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [
                alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            found += ["%s: %s" % (path.relative_to(ROOT), name) for name in names
                      if name.startswith("ansible_collections.gpufabric.core.plugins.")
                      and not name.startswith("ansible_collections.gpufabric.core.plugins.module_utils")]
    assert found == []
