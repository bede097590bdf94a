"""The inbox RDMA stack and host tuning as the rdma role leaves the lab nodes (Debian 12 and 13 containers)."""

import json

import pytest

# podman exec per check (why: tests/molecule_helpers.py)
testinfra_hosts = ["podman://rdma-node1", "podman://rdma-node2"]

INBOX_PACKAGES = ["rdma-core", "ibverbs-utils", "ibverbs-providers", "perftest", "infiniband-diags", "rdmacm-utils"]
UNITS = ["gpufabric-rdma-irq-affinity", "gpufabric-rdma-roce", "gpufabric-rdma-pcie"]


@pytest.mark.parametrize("name", INBOX_PACKAGES + ["pciutils"])
def test_inbox_package_installed(host, name):
    assert host.package(name).is_installed


def test_tools_installed_and_report_no_device(host):
    # No RDMA kernel support in the lab: the tool runs and says so, exit 255 (see docs).
    result = host.run("ibv_devinfo")
    assert result.rc == 255
    assert "Failed to get IB devices list" in result.stderr
    assert host.exists("ib_write_bw")


def test_modprobe_options_file(host):
    options = host.file("/etc/modprobe.d/gpufabric-rdma.conf")
    assert options.mode == 0o644
    assert options.user == "root"
    lines = [line for line in options.content_string.splitlines() if not line.startswith("#")]
    assert lines == ["options ib_uverbs disable_raw_qp_encap=1", "options mlx5_core prof_sel=2"]


def test_modules_loaded_at_boot(host):
    content = host.file("/etc/modules-load.d/gpufabric-rdma.conf").content_string
    modules = [line for line in content.splitlines() if line and not line.startswith("#")]
    # No NVIDIA driver in the lab, so nvidia_peermem (auto) is not added.
    assert modules == ["ib_umad", "rdma_ucm"]


def test_memlock_limits_file(host):
    limits = host.file("/etc/security/limits.d/90-gpufabric-rdma.conf")
    assert limits.mode == 0o644
    entries = [line.split() for line in limits.content_string.splitlines() if line and not line.startswith("#")]
    assert entries == [
        [domain, kind, "memlock", "unlimited"] for domain in ("*", "root", "@rdma") for kind in ("soft", "hard")
    ]


def test_systemd_default_memlock_applied(host):
    # Whether a process then gets the limit cannot be shown here: raising RLIMIT_MEMLOCK needs
    # CAP_SYS_RESOURCE, which lab containers cannot get, so processes keep the container's 8 MiB.
    dropin = host.file("/etc/systemd/system.conf.d/90-gpufabric-rdma-memlock.conf")
    assert "DefaultLimitMEMLOCK=infinity" in dropin.content_string
    # daemon-reexec ran: the running manager has the new default.
    assert host.check_output("systemctl show -p DefaultLimitMEMLOCK") == "DefaultLimitMEMLOCK=infinity"


def test_tuning_configuration(host):
    config = json.loads(host.file("/etc/gpufabric/rdma-tune.json").content_string)
    assert config["irq_affinity"] == {"exclude_cpus": "0"}
    assert config["roce"] == {"mode": "RoCE v2", "tos": 106, "traffic_class": 106, "trust": "dscp"}
    assert config["pcie_relaxed_ordering"] == "enable"
    assert config["devices"] == []
    assert host.run("/usr/local/sbin/gpufabric-rdma-tune check-config").rc == 0


@pytest.mark.parametrize("unit", UNITS)
def test_tuning_unit_enabled_and_ran(host, unit):
    service = host.service(unit)
    assert service.is_enabled
    props = dict(
        line.split("=", 1)
        for line in host.check_output(
            "systemctl show %s -p Type -p RemainAfterExit -p ActiveState -p ExecMainStatus -p WantedBy" % unit
        ).splitlines()
    )
    assert props["Type"] == "oneshot"
    assert props["RemainAfterExit"] == "yes"
    assert props["ActiveState"] == "active"
    assert props["ExecMainStatus"] == "0"
    assert "multi-user.target" in props["WantedBy"]


def test_irq_affinity_logs_no_device(host):
    journal = host.check_output("journalctl -u gpufabric-rdma-irq-affinity.service -o cat --no-pager")
    assert "no RDMA device found under /sys/class/infiniband; IRQ affinity left alone" in journal


def test_reboot_reason_kept_until_reboot(host):
    marker = host.file("/run/gpufabric/rdma-reboot-required")
    assert marker.content_string.splitlines() == [
        "kernel module options changed in /etc/modprobe.d/gpufabric-rdma.conf"
    ]
