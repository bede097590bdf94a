"""Bad input stops the role before any change, with a message naming the variable."""

import pytest

from conftest import run_playbook, task_results

HOST = "rdma-node1"
MODPROBE = "/etc/modprobe.d/gpufabric-rdma.conf"


@pytest.mark.parametrize(
    "extra_vars, expected",
    [
        # Unknown driver source: argument_specs choices.
        ('{"rdma_driver_source": "mlnx_ofed_tarball"}', ["rdma_driver_source", "mlnx_ofed_tarball", "inbox, doca"]),
        # Wrong type: argument_specs type.
        ('{"rdma_irq_affinity": "sometimes"}', ["rdma_irq_affinity", "bool"]),
        ('{"rdma_modules_load": {"ib_umad": 1}}', ["rdma_modules_load", "list"]),
        # Right types, wrong values: the preflight asserts.
        ('{"rdma_driver_source": "doca", "rdma_doca_repo_url": ""}', ["rdma_doca_repo_url"]),
        ('{"rdma_memlock_limit": "lots"}', ["rdma_memlock_limit", "lots"]),
    ],
    ids=["unknown-driver-source", "wrong-type-bool", "wrong-type-list", "doca-without-mirror", "bad-memlock"],
)
def test_bad_input_fails_before_any_change(host, extra_vars, expected):
    before = host.file(MODPROBE).content_string
    # A changed option goes with the bad variable: it must not reach the host.
    rc, report, text = run_playbook(
        "bad_vars.yml", "-e", extra_vars, "-e", '{"rdma_module_options": {"ib_uverbs": "disable_raw_qp_encap=0"}}'
    )
    assert rc == 2, text[-3000:]
    stats = report["stats"][HOST]
    assert stats["failures"] == 1
    assert stats["changed"] == 0
    failed = [(name, result) for name, result in task_results(report, HOST) if result.get("failed")]
    assert len(failed) == 1
    message = failed[0][1]["msg"]
    for word in expected:
        assert word in message, message
    assert host.file(MODPROBE).content_string == before
