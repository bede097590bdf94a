"""Bad input stops the role before any change, with a message naming the variable."""

import pytest
import testinfra

from conftest import run_playbook, task_results

# podman exec per check (why: tests/molecule_helpers.py)
testinfra_hosts = ["podman://rdma-node1", "podman://rdma-node2"]

MODPROBE = "/etc/modprobe.d/gpufabric-rdma.conf"


CASES = [
    # Unknown driver source: argument_specs choices.
    ('{"rdma_driver_source": "mlnx_ofed_tarball"}', ["rdma_driver_source", "mlnx_ofed_tarball", "inbox, doca"]),
    # Wrong type: argument_specs type.
    ('{"rdma_irq_affinity": "sometimes"}', ["rdma_irq_affinity", "bool"]),
    # Right types, wrong values: the preflight asserts.
    ('{"rdma_driver_source": "doca", "rdma_doca_repo_url": ""}', ["rdma_doca_repo_url"]),
]


@pytest.fixture(scope="module", params=CASES, ids=["unknown-driver-source", "wrong-type-bool", "doca-without-mirror"])
def bad_run(request):
    """One run of the playbook per bad input, on both nodes at once, with each node's file read before it."""
    extra_vars, expected = request.param
    before = {name: testinfra.get_host(name).file(MODPROBE).content_string for name in testinfra_hosts}
    # A changed option goes with the bad variable: it must not reach the host.
    rc, report, text = run_playbook(
        "bad_vars.yml", "-e", extra_vars, "-e", '{"rdma_module_options": {"ib_uverbs": "disable_raw_qp_encap=0"}}'
    )
    return expected, before, rc, report, text


def test_bad_input_fails_before_any_change(host, bad_run):
    expected, before, rc, report, text = bad_run
    assert rc == 2, text[-3000:]
    node = host.backend.get_hostname()
    stats = report["stats"][node]
    assert stats["failures"] == 1
    assert stats["changed"] == 0
    failed = [result for _name, result in task_results(report, node) if result.get("failed")]
    assert len(failed) == 1
    # A loop task (the per-variable checks) carries the message of each failed item.
    message = " ".join([failed[0]["msg"]] + [item["msg"] for item in failed[0].get("results", []) if item.get("failed")])
    for word in expected:
        assert word in message, message
    assert host.file(MODPROBE).content_string == before["podman://" + node]
