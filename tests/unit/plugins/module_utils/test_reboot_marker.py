"""plugins/module_utils/hostio/reboot_marker.py: reading the marker, the facts every role exports from it, and the message
said when a reboot is pending and the role will not reboot (the modules rdma_config, cooling_config and
reboot_marker use these, so that no task of its own exports the facts or says why)."""

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import reboot_marker as rm


def test_read_marker_missing_and_present(tmp_path):
    assert rm.read_marker("rdma", str(tmp_path)) is None
    (tmp_path / "rdma-reboot-required").write_text("kernel module options changed\n")
    assert rm.read_marker("rdma", str(tmp_path)) == "kernel module options changed\n"
    # Another role's marker is its own.
    assert rm.read_marker("cooling", str(tmp_path)) is None


def test_exported_facts_name_the_role():
    assert rm.exported_facts("rdma", []) == {"rdma_reboot_reasons": [], "rdma_reboot_required": False}
    assert rm.exported_facts("cooling", ("MIG layout all-1g.10gb not in place",)) == {
        "cooling_reboot_reasons": ["MIG layout all-1g.10gb not in place"], "cooling_reboot_required": True}


def test_exported_facts_of_a_marker_and_this_run():
    # What rdma_config exports: the recorded reasons first, then this run's, each once.
    pending = rm.merge_reasons("a reason\n", ["DOCA installed", "a reason"])
    assert rm.exported_facts("rdma", pending)["rdma_reboot_reasons"] == ["a reason", "DOCA installed"]


def test_why_no_reboot():
    assert rm.why_no_reboot([], "rdma", False, True) is None
    # The role reboots: nothing to say.
    assert rm.why_no_reboot(["x"], "rdma", True, True) is None
    assert rm.why_no_reboot(["x", "y"], "rdma", False, True) == (
        "this host needs a reboot for: x; y. Set rdma_reboot_ok=true (with serial: on the play to reboot in batches)"
        " to let the role reboot it.")
    # A container cannot reboot, whatever rdma_reboot_ok says.
    for reboot_ok in (True, False):
        assert rm.why_no_reboot(["x"], "rdma", reboot_ok, False) == (
            "this host needs a reboot for: x. It is a container: reboot its host instead.")
