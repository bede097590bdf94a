# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl_files renders what the role's templates rendered before gpufabric.core.nccl_env, byte for byte.

The expected texts are the files the templates (nccl.conf.j2, nccl.sh.j2, nccl.env.j2 at commit 8c4effe) wrote
for these variables, so an upgrade of the collection changes no file on a converged host.
"""

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.nccl import files as nf

HEADER = "# Managed by Ansible (gpufabric.core.nccl); derived from the host's topology, edits are overwritten.\n"
VARIABLES = {"NCCL_IB_HCA": "=mlx5_0:1,mlx5_3:1", "NCCL_IB_TIMEOUT": "22", "NCCL_SOCKET_IFNAME": "=eth0"}


def test_conf_lists_the_variables_and_which_came_from_nccl_variables():
    assert nf.conf_text(VARIABLES, ["NCCL_IB_TIMEOUT", "NCCL_DEBUG"], "snapshot /var/lib/x") == (
        HEADER
        + "# Topology: snapshot /var/lib/x. NCCL reads this file at every job start; the environment\n"
        "# wins over it. Change values through nccl_variables (group or host vars), not here.\n"
        "# From nccl_variables: NCCL_IB_TIMEOUT\n"
        "NCCL_IB_HCA==mlx5_0:1,mlx5_3:1\nNCCL_IB_TIMEOUT=22\nNCCL_SOCKET_IFNAME==eth0\n")


def test_conf_without_user_variables_has_no_from_line():
    assert "From nccl_variables" not in nf.conf_text(VARIABLES, [], "live")


def test_profile_script_quotes_for_the_shell():
    assert nf.profile_text({"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_ALGO": "Tree,Ring"}, "/etc/nccl.conf") == (
        HEADER + "# The values of /etc/nccl.conf, for tools that only read the environment.\n"
        "export NCCL_IB_HCA==mlx5_0:1\nexport NCCL_ALGO=Tree,Ring\n")
    assert nf.profile_text({"NCCL_X": "a b"}, "/etc/nccl.conf").endswith("export NCCL_X='a b'\n")


def test_env_file_is_unquoted():
    assert nf.env_file_text({"NCCL_IB_HCA": "=mlx5_0:1"}) == (
        HEADER + "# KEY=VALUE, unquoted: read by Slurm prologs, systemd EnvironmentFile=, docker --env-file and enroot"
        " alike.\nNCCL_IB_HCA==mlx5_0:1\n")


def test_desired_files_writes_and_removes_what_the_options_say():
    params = {"variables": VARIABLES, "user_names": [], "topology_source": "live", "conf_path": "/etc/nccl.conf",
              "profile_script_path": "", "profile_script_remove": "/etc/profile.d/nccl.sh",
              "env_file_path": "/etc/default/nccl", "topology_xml": "", "topology_xml_path": "/etc/nccl/topo.xml"}
    files = {entry["path"]: entry["content"] for entry in nf.desired_files(params)}
    assert set(files) == {"/etc/nccl.conf", "/etc/profile.d/nccl.sh", "/etc/default/nccl", "/etc/nccl/topo.xml"}
    assert files["/etc/profile.d/nccl.sh"] is None and files["/etc/nccl/topo.xml"] is None
    assert files["/etc/default/nccl"].endswith("NCCL_SOCKET_IFNAME==eth0\n")


def test_a_value_with_a_line_break_is_a_problem():
    assert nf.value_problems({"NCCL_IB_TIMEOUT": "22\nNCCL_DEBUG=INFO"}) == [
        "variables.NCCL_IB_TIMEOUT: the value holds a line break"]


def test_conf_read_back_must_hold_exactly_the_variables_and_no_retired_name():
    variables = {"NCCL_IB_HCA": "=mlx5_0:1", "NCCL_SOCKET_IFNAME": "=eth0"}
    text = nf.conf_text(variables, [], "live")
    assert nf.conf_problems(text, variables, ["NCCL_GRAPH_FILE"], "/etc/nccl.conf") == []
    stale = text + "NCCL_GRAPH_FILE=/etc/old.xml\n"
    [problem] = nf.conf_problems(stale, variables, ["NCCL_GRAPH_FILE"], "/etc/nccl.conf")
    assert problem.startswith("/etc/nccl.conf holds [") and "retired, must be absent: NCCL_GRAPH_FILE" in problem
    reordered = "NCCL_SOCKET_IFNAME==eth0\nNCCL_IB_HCA==mlx5_0:1\n"
    assert nf.conf_problems(reordered, variables, [], "/etc/nccl.conf")


def test_nccl_settings_in_shell_fragments_and_environment_files():
    assert nf.sets_nccl_variables("export PATH=/bin\nexport NCCL_DEBUG=WARN\n")
    assert nf.sets_nccl_variables("NCCL_SOCKET_IFNAME=eth0\n")
    assert not nf.sets_nccl_variables("# NCCL_DEBUG=INFO\nexport CUDA_HOME=/usr/local/cuda\n")
    assert not nf.sets_nccl_variables("echo NCCL_DEBUG=INFO\n")
