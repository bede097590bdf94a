"""Every host program ships exactly the module_utils it imports (host_program's layout).

The roles list, in vars/main.yml, the collection's module_utils each host program needs on the host; the modules
install them under <lib>/ansible_collections/gpufabric/core/plugins/module_utils. A list shorter than the program's
import closure breaks the program on the host only (the unit tests import the collection's own files); a longer one
ships code nothing runs. The closure is read from the source (tests/unit/import_graph.py).
"""

import pytest
import yaml

from import_graph import MODULE_UTILS, ROOT, closure

ROLES = ROOT / "roles"


def _vars(role):
    return yaml.safe_load((ROLES / role / "vars" / "main.yml").read_text())


def _programs():
    cooling, health = _vars("cooling"), _vars("health")
    return {
        "cooling": ([ROLES / "cooling" / "files" / "gpufabric_cooling" / name for name in cooling["__cooling_package_files"]],
                    cooling["__cooling_module_utils"]),
        "health": ([ROLES / "health" / "files" / "gpufabric_health" / name for name in health["__health_package_files"]],
                   health["__health_module_utils"]),
        "rdma": ([ROLES / "rdma" / "files" / "gpufabric_rdma_tune.py"], _vars("rdma")["__rdma_tune_libraries"]),
        # The helper's command runs module_utils/bonding/activate.py itself.
        "bonding": ([MODULE_UTILS / "bonding" / "activate.py"], _vars("bonding")["__bonding_helper_package"]),
    }


@pytest.mark.parametrize("role", ["bonding", "cooling", "health", "rdma"])
def test_the_shipped_module_utils_are_the_programs_import_closure(role):
    sources, shipped = _programs()[role]
    assert len(shipped) == len(set(shipped)), "listed twice: %s" % sorted(n for n in shipped if shipped.count(n) > 1)
    needed = closure(sources)
    assert needed, "no module_utils import found in %s" % sources
    assert sorted(set(shipped) - needed) == [], "shipped but not imported"
    assert sorted(needed - set(shipped)) == [], "imported but not shipped"


def test_every_shipped_file_exists():
    for role, (_sources, shipped) in _programs().items():
        missing = [name for name in shipped if not (MODULE_UTILS / name).is_file()]
        assert missing == [], role
