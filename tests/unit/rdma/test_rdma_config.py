"""plugins/module_utils/rdma/config.py: modinfo -p on real captures, option checks, rendering, the file transaction
(all or nothing, check mode writes nothing), and the reboot marker of module_utils/hostio/reboot_marker.py."""

import os

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.rdma import config as rc
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import reboot_marker as rm
from fixture_data import read_fixture

CAPTURE = "modinfo/lab-qemu-modinfo-p-%s.txt"


def _raise_runtime_error():
    raise RuntimeError("the check after writing failed")


# ---------------------------------------------------------------- modinfo -p (Debian 12, kernel 6.1.0-57-amd64)


def test_modinfo_mlx5_core_parameters():
    assert rc.parse_modinfo_parameters(read_fixture(CAPTURE % "mlx5_core")) == ["debug_mask", "prof_sel"]


def test_modinfo_ib_core_parameters():
    assert rc.parse_modinfo_parameters(read_fixture(CAPTURE % "ib_core")) == [
        "send_queue_size", "recv_queue_size", "netns_mode", "force_mr"]


def test_modinfo_ib_uverbs_has_no_parameters_on_the_inbox_kernel():
    # The capture is empty: Debian's 6.1 ib_uverbs accepts no option at all.
    assert read_fixture(CAPTURE % "ib_uverbs").strip() == ""
    assert rc.parse_modinfo_parameters(read_fixture(CAPTURE % "ib_uverbs")) == []


def test_modinfo_multiline_descriptions_are_not_parameters():
    # mlx4_core's num_vfs and probe_vf descriptions continue on a line of their own ("num_vfs=port1,...").
    names = rc.parse_modinfo_parameters(read_fixture(CAPTURE % "mlx4_core"))
    assert names[:4] == ["debug_level", "msi_x", "num_vfs", "probe_vf"]
    assert len(names) == 14
    assert all("=" not in name for name in names)


def test_modinfo_bonding_parameters():
    names = rc.parse_modinfo_parameters(read_fixture(CAPTURE % "bonding"))
    assert {"mode", "miimon", "lacp_rate", "xmit_hash_policy"} <= set(names)
    assert len(names) == len(set(names)) == 24


def test_modinfo_not_found_recognised():
    assert rc.modinfo_not_found(read_fixture(CAPTURE % "not-found"))
    assert not rc.modinfo_not_found(read_fixture(CAPTURE % "mlx5_core"))


def test_unknown_option_refused_naming_variable_path():
    known = {"ib_uverbs": rc.parse_modinfo_parameters(read_fixture(CAPTURE % "ib_uverbs")),
             "mlx5_core": rc.parse_modinfo_parameters(read_fixture(CAPTURE % "mlx5_core"))}
    problems, unchecked = rc.check_module_options(
        {"ib_uverbs": "disable_raw_qp_encap=1", "mlx5_core": "prof_sel=2"}, known)
    assert unchecked == []
    assert len(problems) == 1
    assert problems[0].startswith("rdma_module_options.ib_uverbs: option 'disable_raw_qp_encap'")
    assert "lists none" in problems[0]


def test_known_options_pass_and_dashes_match_underscores():
    known = {"mlx4_core": rc.parse_modinfo_parameters(read_fixture(CAPTURE % "mlx4_core"))}
    problems, _unchecked = rc.check_module_options({"mlx4_core": "log_num_mgm_entry_size=-1 enable-qos=1"}, known)
    assert problems == []


def test_module_modinfo_does_not_know_is_reported_unchecked_not_passed():
    problems, unchecked = rc.check_module_options({"mlx5_core": "bogus=1", "nvidia_peermem": "x=1"},
                                                  {"mlx5_core": ["prof_sel"], "nvidia_peermem": None})
    assert unchecked == ["nvidia_peermem"]
    assert [p.split(":")[0] for p in problems] == ["rdma_module_options.mlx5_core"]


def test_option_without_a_name_refused():
    with pytest.raises(rc.ConfigError):
        rc.option_names("=1")


# ---------------------------------------------------------------- rendering


def spec(tmp_path, **changes):
    value = {
        "module_options": {"mlx5_core": "prof_sel=2"},
        "modules_effective": ["ib_umad", "rdma_ucm"],
        "memlock_domains": ["*", "root"],
        "memlock_limit": "unlimited",
        "memlock_systemd": True,
        "tune_program": "print('tune')\n",
        "tune_libraries": {"sysfs_text.py": "# lib\n"},
        "python": "/usr/bin/python3",
        "tune_config": {"devices": [], "pcie_relaxed_ordering": "keep"},
        "units": [{"name": "gpufabric-rdma-roce", "action": "roce", "description": "RoCE", "enabled": True},
                  {"name": "gpufabric-rdma-pcie", "action": "pcie-relaxed-ordering", "description": "PCIe",
                   "enabled": False}],
        "paths": {"modprobe": str(tmp_path / "etc/modprobe.d/gpufabric-rdma.conf"),
                  "modules_load": str(tmp_path / "etc/modules-load.d/gpufabric-rdma.conf"),
                  "limits": str(tmp_path / "etc/security/limits.d/90-gpufabric-rdma.conf"),
                  "systemd_memlock": str(tmp_path / "etc/systemd/system.conf.d/90-memlock.conf"),
                  "tune_config": str(tmp_path / "etc/gpufabric/rdma-tune.json"),
                  "tune_script": str(tmp_path / "usr/local/sbin/gpufabric-rdma-tune"),
                  "tune_lib_dir": str(tmp_path / "usr/local/lib/gpufabric"),
                  "unit_dir": str(tmp_path / "etc/systemd/system")},
    }
    value.update(changes)
    return value


def snapshot(root):
    return {str(path): (path.read_bytes(), oct(path.stat().st_mode))
            for path in sorted(root.rglob("*")) if path.is_file()}


def test_rendered_files(tmp_path):
    files, absent = rc.desired_files(spec(tmp_path))
    paths = spec(tmp_path)["paths"]
    lines = [line for line in files[paths["modprobe"]][0].splitlines() if not line.startswith("#")]
    assert lines == ["options mlx5_core prof_sel=2"]
    limits = [line.split() for line in files[paths["limits"]][0].splitlines() if not line.startswith("#")]
    assert limits == [["*", "soft", "memlock", "unlimited"], ["*", "hard", "memlock", "unlimited"],
                      ["root", "soft", "memlock", "unlimited"], ["root", "hard", "memlock", "unlimited"]]
    assert "DefaultLimitMEMLOCK=infinity" in files[paths["systemd_memlock"]][0]
    assert files[paths["tune_script"]][1] == 0o755
    assert os.path.join(paths["unit_dir"], "gpufabric-rdma-pcie.service") in absent
    assert "ExecStart=%s roce --config %s" % (paths["tune_script"], paths["tune_config"]) in \
        files[os.path.join(paths["unit_dir"], "gpufabric-rdma-roce.service")][0]
    tree = os.path.join(paths["tune_lib_dir"], "ansible_collections", "gpufabric", "core", "plugins", "module_utils")
    assert os.path.join(tree, "sysfs_text.py") in files and files[os.path.join(tree, "__init__.py")] == ("", 0o644)
    assert os.path.join(paths["tune_lib_dir"], "gpufabric_rdma_tune.py") in files


def test_no_module_options_removes_the_modprobe_file(tmp_path):
    _files, absent = rc.desired_files(spec(tmp_path, module_options={}))
    assert spec(tmp_path)["paths"]["modprobe"] in absent


# ---------------------------------------------------------------- transaction


def test_transaction_writes_then_second_plan_is_empty(tmp_path):
    files, absent = rc.desired_files(spec(tmp_path))
    changes = rc.plan_changes(files, absent)
    assert {c["state"] for c in changes} == {"write"}
    rc.apply(changes)
    assert rc.plan_changes(files, absent) == []
    assert (tmp_path / "usr/local/sbin/gpufabric-rdma-tune").stat().st_mode & 0o777 == 0o755


def test_check_mode_plan_writes_nothing(tmp_path):
    # Check mode is plan_changes and diff_of without apply: they read and never write.
    (tmp_path / "etc").mkdir()
    before = snapshot(tmp_path)
    files, absent = rc.desired_files(spec(tmp_path))
    changes = rc.plan_changes(files, absent)
    diff = rc.diff_of(changes)
    assert len(diff) == len(changes) > 0
    assert snapshot(tmp_path) == before
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["etc"]


def test_failed_write_restores_every_file_already_replaced(tmp_path):
    first, absent = rc.desired_files(spec(tmp_path))
    rc.apply(rc.plan_changes(first, absent))
    units = [dict(unit, enabled=True) for unit in spec(tmp_path)["units"]]
    wanted, absent = rc.desired_files(spec(tmp_path, module_options={"mlx5_core": "prof_sel=1"},
                                           memlock_limit="1024", units=units))
    changes = rc.plan_changes(wanted, absent)
    # A real failure, no mock: after the plan, the unit path of a newly wanted service became a non-empty directory,
    # so its rename fails (EISDIR) after the files sorted before it were already replaced.
    blocked = tmp_path / "etc/systemd/system/gpufabric-rdma-pcie.service"
    blocked.mkdir(parents=True)
    (blocked / "keep").write_text("x")
    before = snapshot(tmp_path)
    paths = [c["path"] for c in changes]
    assert paths.index(str(blocked)) > 0  # something is replaced before the failure
    with pytest.raises(OSError):
        rc.apply(changes)
    assert snapshot(tmp_path) == before
    assert not list(tmp_path.rglob(".gpufabric-*"))


def test_a_directory_in_a_files_place_is_refused_before_anything_is_written(tmp_path):
    blocked = tmp_path / "etc/systemd/system/gpufabric-rdma-roce.service"
    blocked.mkdir(parents=True)
    files, absent = rc.desired_files(spec(tmp_path))
    with pytest.raises(ValueError, match="exists and is not a regular file"):
        rc.plan_changes(files, absent)


def test_failed_check_after_writing_rolls_back_new_files_and_directories(tmp_path):
    files, absent = rc.desired_files(spec(tmp_path))

    def refuse():
        raise rc.ConfigError("the tuning program refuses its configuration")

    with pytest.raises(rc.ConfigError):
        rc.apply(rc.plan_changes(files, absent), after=refuse)
    assert list(tmp_path.iterdir()) == []


def test_removal_is_rolled_back_too(tmp_path):
    files, absent = rc.desired_files(spec(tmp_path))
    rc.apply(rc.plan_changes(files, absent))
    before = snapshot(tmp_path)
    files, absent = rc.desired_files(spec(tmp_path, module_options={}, memlock_systemd=False))
    with pytest.raises(RuntimeError):
        rc.apply(rc.plan_changes(files, absent), after=_raise_runtime_error)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------- reboot reasons and marker


def test_reboot_reasons_from_changes():
    paths = {"modprobe": "/etc/modprobe.d/gpufabric-rdma.conf"}
    assert rc.reboot_reasons([{"path": paths["modprobe"]}], paths, []) == [
        "kernel module options changed in /etc/modprobe.d/gpufabric-rdma.conf"]
    assert rc.reboot_reasons([{"path": "/etc/other"}], paths, []) == []
    assert "mlx5_core" in rc.reboot_reasons([], paths, ["mlx5_core"])[0]


def test_modules_with_changed_options():
    old = "# header\noptions mlx5_core prof_sel=2\noptions ib_core netns_mode=0\n"
    assert rc.modules_with_changed_options(old, {"mlx5_core": "prof_sel=2", "ib_ipoib": "x=1"}) == [
        "ib_core", "ib_ipoib"]


def test_reboot_marker_location_and_merge():
    assert rm.marker_path("rdma") == "/run/gpufabric/rdma-reboot-required"
    assert rm.marker_path("cooling") == "/run/gpufabric/cooling-reboot-required"
    with pytest.raises(ValueError):
        rm.marker_path("../etc")
    assert rm.merge_reasons("a\n\nb\n", ["b", "c  d"]) == ["a", "b", "c d"]
    assert rm.marker_text(["a", "b"]) == "a\nb\n"
