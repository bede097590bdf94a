"""The DOCA-OFED repository path, rendered in check mode with the mirror URL from the inventory.

No mirror is reachable from the lab, so the package cannot be downloaded: this shows what the role would
write and install, and that check mode writes nothing.
"""

import pytest

from conftest import run_playbook, task_results

# podman exec per check (why: tests/molecule_helpers.py)
testinfra_hosts = ["podman://rdma-node1", "podman://rdma-node2"]

# Each node's mirror (molecule.yml): one per Debian release, as DOCA publishes them.
MIRRORS = {
    "rdma-node1": "http://doca-mirror.lab.invalid/doca/2.9.1/debian12/x86_64/",
    "rdma-node2": "http://doca-mirror.lab.invalid/doca/2.9.1/debian13/x86_64/",
}
REPO_TASK = "Add the DOCA-OFED repository (deb822 sources, flat repository signed by its key)"
# Check mode may report these (they would change the host); every other task must report no change.
DOCA_TASKS = {REPO_TASK, "Create the apt keyrings directory"}


@pytest.fixture(scope="module")
def doca_report():
    rc, report, text = run_playbook("doca_check_mode.yml", "--check", "--diff")
    assert rc == 0, text[-4000:]
    return report


@pytest.fixture(params=sorted(MIRRORS))
def node(request):
    return request.param


@pytest.fixture
def doca_preview(doca_report, node):
    return task_results(doca_report, node)


def test_repository_rendered_from_inventory_mirror(doca_preview, node):
    repo = dict(doca_preview)[REPO_TASK]
    assert repo["changed"] is True
    # --diff shows the file check mode did not write.
    diff = repo["diff"][0] if isinstance(repo["diff"], list) else repo["diff"]
    assert diff["before"] == ""  # a new file
    lines = diff["after"].splitlines()
    assert "URIs: %s" % MIRRORS[node] in lines
    assert "Suites: ./" in lines
    assert "Types: deb" in lines
    assert "Signed-By: /etc/apt/keyrings/gpufabric-doca.asc" in lines
    assert not any(line.startswith("Components:") for line in lines)


def test_unreachable_key_reported_not_fatal_in_check_mode(doca_preview):
    fetch = dict(doca_preview)["Fetch the repository signing key"]
    assert fetch["failed"] is True  # ignored in check mode only
    # Reported only when the fetch failed (the debug task is skipped otherwise, and has no msg).
    report = dict(doca_preview)["Report a key URL that check mode could not reach"]
    assert "GPG-KEY-Mellanox.pub could not be reached" in report["msg"]
    assert fetch["msg"] in report["msg"]


def test_package_and_version_announced(doca_preview, node):
    message = dict(doca_preview)["Report what check mode cannot install from a repository not yet configured"]["msg"]
    assert "would install doca-ofed=24.10* from %s" % MIRRORS[node] in message
    install = dict(doca_preview)["Install the DOCA-OFED package (not reinstalled when the wanted version is present)"]
    assert install.get("skipped") is True


def test_nothing_else_would_change(doca_preview):
    changed = {name for name, result in doca_preview if result.get("changed")}
    assert changed <= DOCA_TASKS, changed - DOCA_TASKS


def test_check_mode_wrote_nothing(host):
    assert not host.file("/etc/apt/sources.list.d/gpufabric-doca.sources").exists
    assert not host.file("/etc/apt/keyrings/gpufabric-doca.asc").exists
    assert not host.package("doca-ofed").is_installed
