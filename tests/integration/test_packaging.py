"""The collection as its users get it: `ansible-galaxy collection build`, installed into an empty collections path,
its plugins' docs rendered and a playbook run from the installed copy against a lab node."""

import json
import os
import re
import subprocess
import sys
import tarfile
import time

import pytest
import yaml

from integration_helpers import ROOT, run_logged, tail

LAB = "gpufabric-package-test"
LAB_INVENTORY = ROOT / "inventories" / "lab" / f"{LAB}.yml"
# What a user's tarball must not carry: the lab, caches, tests and the developers' tooling.
NOT_SHIPPED = (".venv", ".venv-compat", ".build", ".lab", ".cache", ".ci", ".config", ".git", "tests", "molecule",
               "scripts", "benchmarks", "reports", "inventories/lab", "docs/site", "Makefile", "conftest.py",
               "pytest.ini", "requirements.txt", "constraints.txt")
PLUGIN_TYPES = ("module", "filter", "callback")
# What galaxy-importer may say that the collection cannot fix. Galaxy lints the uploaded tarball alone, offline,
# without its dependencies: a module of a dependency (galaxy.yml: ansible.posix, community.general,
# community.crypto) or of awx.awx (playbooks/awx_configure.yml, run from the execution environment) cannot be
# resolved, and ansible-lint stops the syntax check of the playbook that reaches it. The project's own
# ansible-lint run checks those playbooks with the dependencies installed.
GALAXY_UNRESOLVABLE = (
    re.compile(r"^WARNING: \S+: syntax-check\[unknown-module\]: couldn't resolve module/action "
               r"'(ansible\.posix|community\.general|community\.crypto|awx\.awx)\.\w+'\."),
    re.compile(r"^WARNING: ERROR +Failed to load \S+ playbook due to failing syntax check\.$"),
)


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """Build the tarball and install it, alone, into an empty collections path."""
    base = tmp_path_factory.mktemp("package")
    rc, out = run_logged("galaxy-build", ["ansible-galaxy", "collection", "build", "--force", "--output-path",
                                          str(base / "dist"), str(ROOT)], timeout=300)
    assert rc == 0, tail(out)
    tarballs = list((base / "dist").glob("gpufabric-core-*.tar.gz"))
    assert len(tarballs) == 1, tarballs
    collections = base / "collections"
    collections.mkdir()
    config = base / "ansible.cfg"
    config.write_text("[defaults]\ncollections_path = %s\nhost_key_checking = false\n" % collections)
    env = dict(os.environ, ANSIBLE_CONFIG=str(config), ANSIBLE_COLLECTIONS_PATH=str(collections))
    env.pop("ANSIBLE_ROLES_PATH", None)
    # --no-deps: the dependencies come from the `ansible` package of this environment (Galaxy is out of reach).
    rc, out = run_logged("galaxy-install", ["ansible-galaxy", "collection", "install", "--no-deps", "-p",
                                            str(collections), str(tarballs[0])], timeout=300, env=env, cwd=base)
    assert rc == 0, tail(out)
    assert (collections / "ansible_collections" / "gpufabric" / "core" / "MANIFEST.json").is_file(), tail(out)
    return {"tarball": tarballs[0], "path": collections / "ansible_collections" / "gpufabric" / "core", "env": env,
            "base": base}


def test_tarball_leaves_out_the_lab_caches_and_tests(installed):
    with tarfile.open(installed["tarball"]) as tarball:
        names = tarball.getnames()
    shipped = [n for n in names if any(n == p or n.startswith(p + "/") for p in NOT_SHIPPED)]
    assert shipped == []
    for wanted in ("MANIFEST.json", "FILES.json", "COPYING", "meta/runtime.yml", "plugins/modules/topology_facts.py",
                   "roles/bonding/tasks/main.yml", "playbooks/site.yml", "inventories/example/hosts.yml"):
        assert wanted in names, wanted
    size = installed["tarball"].stat().st_size
    print("tarball %s: %d bytes, %d members" % (installed["tarball"].name, size, len(names)))
    assert size < 2_000_000


def test_galaxy_importer_accepts_the_tarball(installed):
    """galaxy-importer on the built tarball as Galaxy runs it at upload: locally, without containers (no ansible-test
    sanity, which the test command runs itself), ansible-doc and ansible-lint (production profile, offline) on the
    tarball alone. The dependencies' collections that the `ansible` package puts on sys.path stay unseen, as on
    Galaxy; seen, ansible-lint also outruns galaxy-importer's fixed 180 s limit on a busy machine."""
    work = installed["base"] / "galaxy-importer"
    empty = work / "empty"
    empty.mkdir(parents=True)
    config = work / "galaxy-importer.cfg"
    config.write_text("[galaxy-importer]\nRUN_ANSIBLE_TEST = False\nANSIBLE_LOCAL_TMP = %s\n" % (work / "tmp"))
    (work / "ansible.cfg").write_text("")
    env = {"GALAXY_IMPORTER_CONFIG": str(config), "ANSIBLE_CONFIG": str(work / "ansible.cfg"),
           "ANSIBLE_COLLECTIONS_PATH": str(empty), "ANSIBLE_ROLES_PATH": str(empty),
           "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false"}
    started = time.monotonic()
    rc, out = run_logged("galaxy-importer", [sys.executable, "-m", "galaxy_importer.main", str(installed["tarball"])],
                         timeout=900, env=env, cwd=work)
    print("galaxy-importer: %.0f s" % (time.monotonic() - started))
    assert rc == 0 and "Importer processing completed successfully" in out, tail(out)
    said = [line for line in out.splitlines() if line.startswith(("WARNING:", "ERROR:", "CRITICAL:"))]
    assert [line for line in said if not any(pattern.search(line) for pattern in GALAXY_UNRESOLVABLE)] == []
    result = json.loads((work / "importer_result.json").read_text())
    assert (result["metadata"]["namespace"], result["metadata"]["name"]) == ("gpufabric", "core")
    modules = sorted(item["name"] for item in result["contents"] if item["content_type"] == "module")
    assert modules == sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
    assert result["requires_ansible"]


def test_ansible_builder_introspect_finds_the_controllers_python_dependencies(installed):
    """An EE build that lists the collection, or a user reading its metadata, learns what the controller-side
    plugins import (meta/execution-environment.yml names meta/ee/)."""
    rc, out = run_logged("builder-introspect", ["ansible-builder", "introspect", str(installed["path"].parents[2])],
                         timeout=120, env=installed["env"], cwd=installed["base"])
    assert rc == 0, tail(out)
    python = [requirement.split()[0] for requirement in yaml.safe_load(out)["python"]]
    assert {"netaddr==1.3.0", "cryptography==50.0.2"} <= set(python), out


def _documented(installed, plugin_type):
    listing = subprocess.run(["ansible-doc", "--list", "--json", "-t", plugin_type, "gpufabric.core"],
                             env=installed["env"], cwd=installed["base"], capture_output=True, text=True, check=True)
    return sorted(json.loads(listing.stdout))


@pytest.mark.parametrize("plugin_type", PLUGIN_TYPES)
def test_every_plugin_renders_its_docs_from_the_installed_copy(installed, plugin_type):
    """Every plugin as users see it, from the installed tarball: ansible-doc renders it without a warning, from that
    copy, with a short description; modules and filters with their examples and return values too."""
    names = _documented(installed, plugin_type)
    source_dir = ROOT / "plugins" / {"module": "modules", "filter": "filter", "callback": "callback"}[plugin_type]
    if plugin_type != "filter":  # filter files may hold several filters
        assert names == sorted("gpufabric.core." + p.stem for p in source_dir.glob("*.py") if p.stem != "__init__")
    assert names
    # One ansible-doc for all of them: each ansible-doc start costs about a second.
    rendered = subprocess.run(["ansible-doc", "--json", "-t", plugin_type] + names, env=installed["env"],
                              cwd=installed["base"], capture_output=True, text=True, check=False)
    assert rendered.returncode == 0 and not rendered.stderr.strip(), rendered.stderr
    docs = json.loads(rendered.stdout)
    assert sorted(docs) == names
    for name in names:
        doc = docs[name]["doc"]
        assert doc["filename"].startswith(str(installed["path"])), doc["filename"]
        assert doc.get("short_description"), name
        if plugin_type in ("module", "filter"):
            assert docs[name].get("examples") and docs[name].get("return"), name


@pytest.fixture(scope="module")
def lab_node():
    env = dict(os.environ, GPUFABRIC_LAB_NAME=LAB, GPUFABRIC_LAB_SUBNET="10.231.30.0/24")
    subprocess.run([str(ROOT / "scripts" / "lab.sh"), "up", "1"], env=env, check=True)
    yield LAB_INVENTORY
    subprocess.run([str(ROOT / "scripts" / "lab.sh"), "down"], env=env, check=False)


def test_a_playbook_of_the_installed_copy_runs_against_the_lab(installed, lab_node):
    reports = installed["base"] / "reports"
    rc, out = run_logged("installed-discover", [
        "ansible-playbook", "-i", str(lab_node), "gpufabric.core.discover",
        "-e", "discover_report_dir=%s" % reports, "-e", "discover_fail_on=never"],
        timeout=600, env=installed["env"], cwd=installed["base"])
    assert rc == 0, tail(out)
    fabric = json.loads((reports / "fabric_map.json").read_text())
    assert sorted(fabric["hosts"]) == ["node01"], fabric.keys()
    assert (reports / "fabric_map.html").read_text().startswith("<!DOCTYPE html>")
