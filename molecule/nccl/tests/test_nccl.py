"""The files the nccl role wrote from the captured topologies (prepare.yml), read on the lab nodes.

Each podman exec costs a second or more on a loaded controller, so one command collects what the tests read.
"""

import pytest

# podman exec per check (why: tests/molecule_helpers.py)
testinfra_hosts = ["podman://nccl-node1", "podman://nccl-node2"]

NODE1_CONF = [
    "NCCL_DEBUG=WARN",
    # mlx5_1 (an Ethernet ConnectX-6 Dx among InfiniBand rails), mlx5_2 and mlx5_7 (DOWN) are left out.
    "NCCL_IB_HCA==mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1",
    "NCCL_IB_TIMEOUT=22",
    "NCCL_NET_GDR_LEVEL=PIX",
    "NCCL_SOCKET_IFNAME==eth0",
]
NODE2_CONF = [
    "NCCL_ALGO=Tree,Ring",
    "NCCL_IB_HCA==mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1",
    "NCCL_IB_QPS_PER_CONNECTION=4",
    "NCCL_IB_SPLIT_DATA_ON_QPS=0",
    "NCCL_IB_TC=106",
    "NCCL_NET_GDR_LEVEL=PIX",
    "NCCL_SOCKET_IFNAME==eth0",
]
SEPARATOR = "=====nccl-test====="
# The files with owner and mode, a login shell's NCCL environment, and what systemd hands a unit from the env file.
COLLECT = " ; ".join([
    "stat -c '%U %a %n' /etc/nccl.conf /etc/profile.d/nccl.sh /etc/default/nccl /etc/nccl/topo.xml 2>/dev/null",
    "echo " + SEPARATOR, "cat /etc/nccl.conf",
    "echo " + SEPARATOR, "bash -lc 'env' | grep '^NCCL_' | sort",
    "echo " + SEPARATOR, "cat /etc/default/nccl 2>/dev/null",
    "echo " + SEPARATOR, "test -f /etc/default/nccl && systemd-run --wait --pipe --quiet "
    "-p EnvironmentFile=/etc/default/nccl /bin/sh -c 'env' | grep '^NCCL_' | sort",
    "true",
])


def _settings(text):
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def node(host):
    parts = host.check_output(COLLECT).split(SEPARATOR)
    name = host.backend.get_hostname()
    return {
        "name": name,
        "expected": NODE1_CONF if name == "nccl-node1" else NODE2_CONF,
        "stat": {line.split()[2]: line.split()[:2] for line in parts[0].strip().splitlines()},
        "conf": parts[1],
        "login_env": _settings(parts[2]),
        "env_file": parts[3],
        "unit_env": _settings(parts[4]),
    }


def test_nccl_conf_holds_the_derived_variables(node):
    assert node["stat"]["/etc/nccl.conf"] == ["root", "644"]
    assert _settings(node["conf"]) == node["expected"]


def test_stale_variables_of_the_old_file_are_gone(node):
    # prepare.yml left NCCL_GRAPH_FILE, a prefix-match NCCL_IB_HCA and the renamed NCCL_IB_GDR_LEVEL.
    assert "NCCL_GRAPH_FILE" not in node["conf"]
    assert "NCCL_IB_GDR_LEVEL" not in node["conf"]
    assert "NCCL_IB_HCA=mlx5_1\n" not in node["conf"]


def test_login_shells_get_the_same_values(node):
    assert node["stat"]["/etc/profile.d/nccl.sh"] == ["root", "644"]
    assert node["login_env"] == node["expected"]


def test_env_file_only_where_asked(node):
    if node["name"] == "nccl-node1":
        assert node["stat"]["/etc/default/nccl"] == ["root", "644"]
        assert _settings(node["env_file"]) == node["expected"]
        # systemd reads it as an EnvironmentFile: the values arrive unquoted and whole.
        assert node["unit_env"] == node["expected"]
    else:
        assert "/etc/default/nccl" not in node["stat"]


def test_no_topology_file_unless_asked(node):
    assert "/etc/nccl/topo.xml" not in node["stat"]
