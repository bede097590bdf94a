# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ECMP multipath hash: settings checks, the kernel's keys (captured in the lab), the sysctl.d file, the spread
figure, and the multipath_hash module against a copy of /proc/sys (check, apply, check, apply; a refused value)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.filter.multipath_hash_kernel_problems import FilterModule as KernelFilter
from ansible_collections.gpufabric.core.plugins.filter.routing_problems import FilterModule as RoutingFilter
from ansible_collections.gpufabric.core.plugins.module_utils.routing import multipath_hash as mh

ROOT = Path(__file__).resolve().parents[3]
kernel_filter = KernelFilter().filters()["multipath_hash_kernel_problems"]
routing_problems = RoutingFilter().filters()["routing_problems"]
NAMES = read_fixture("sysctl/lab-bookworm-multipath-hash-names.txt")


def test_desired_values_per_policy():
    assert mh.desired_values("l4", []) == {"net.ipv4.fib_multipath_hash_policy": 1,
                                           "net.ipv6.fib_multipath_hash_policy": 1}
    custom = mh.desired_values("custom", ["src_ip", "dst_ip", "ip_proto", "src_port", "dst_port"])
    # The fields before the policy that uses them; 0x37 as the kernel reads it back (55, captured).
    assert list(custom) == ["net.ipv4.fib_multipath_hash_fields", "net.ipv4.fib_multipath_hash_policy",
                            "net.ipv6.fib_multipath_hash_fields", "net.ipv6.fib_multipath_hash_policy"]
    captured = dict(line.split(" = ") for line in
                    read_fixture("sysctl/lab-bookworm-multipath-hash-custom-values.txt").splitlines())
    assert custom["net.ipv4.fib_multipath_hash_fields"] == int(captured["net.ipv4.fib_multipath_hash_fields"])
    assert custom["net.ipv4.fib_multipath_hash_policy"] == int(captured["net.ipv4.fib_multipath_hash_policy"])


@pytest.mark.parametrize("settings, expected", [
    ({"multipath_hash_policy": "l4", "multipath_hash_fields": []}, []),
    ({"multipath_hash_policy": "l5", "multipath_hash_fields": []},
     ["routing_multipath_hash_policy: 'l5' is not one of l3, l4, l3_inner, custom"]),
    ({"multipath_hash_policy": "custom", "multipath_hash_fields": []}, ["routing_multipath_hash_fields: empty"]),
    ({"multipath_hash_policy": "custom", "multipath_hash_fields": ["src_ip", "sport"]},
     ["routing_multipath_hash_fields: sport not among"]),
    ({"multipath_hash_policy": "l4", "spread_target": 1.0}, ["routing_spread_target: 1.0 is outside (1, 2]"]),
    ({"multipath_hash_policy": "l4", "spread_target": 2.5}, ["routing_spread_target: 2.5 is outside (1, 2]"]),
    ({"multipath_hash_policy": "l4", "spread_target": 2}, []),
])
def test_hash_settings_problems_name_the_variable(settings, expected):
    problems = mh.hash_settings_problems(settings)
    assert len(problems) == len(expected), problems
    for problem, start in zip(problems, expected):
        assert problem.startswith(start), problems


def test_routing_problems_filter_includes_the_hash_settings_when_given():
    from test_routing_problems import GOOD
    assert routing_problems(dict(GOOD, multipath_hash_policy="l4", multipath_hash_fields=[])) == []
    assert routing_problems(dict(GOOD, multipath_hash_policy="fast"))[0].startswith("routing_multipath_hash_policy")


def test_kernel_with_every_key_has_every_policy():
    assert mh.parse_sysctl_names(NAMES) >= {"net.ipv4.fib_multipath_hash_fields", "net.ipv6.fib_multipath_hash_policy"}
    for policy in mh.POLICIES:
        assert kernel_filter(NAMES, policy, "6.18.44") == []


def test_kernel_without_the_fields_refuses_custom_naming_the_variable():
    # The lab's capture without the fields keys: what a kernel before 5.12 lists.
    older = "\n".join(line for line in NAMES.splitlines() if "_fields" not in line)
    assert kernel_filter(older, "l4", "5.10.0-28-amd64") == []
    problems = kernel_filter(older, "custom", "5.10.0-28-amd64")
    assert problems == ["routing_multipath_hash_policy: custom needs net.ipv4.fib_multipath_hash_fields, "
                        "net.ipv6.fib_multipath_hash_fields, which this kernel (5.10.0-28-amd64) does not have "
                        "(Linux 5.12 or later (fib_multipath_hash_fields)); choose a policy it has, such as l4"]


def test_sysctl_file_and_spread():
    text = mh.render_sysctl_file("custom", mh.desired_values("custom", ["src_port"]))
    assert "net.ipv4.fib_multipath_hash_fields = 0x0010\nnet.ipv4.fib_multipath_hash_policy = 3\n" in text
    assert mh.spread({"eth0": 64, "eth1": 0}) == {"total": 64, "fair": 32.0, "busiest": "eth0", "max_over_fair": 2.0}
    assert mh.spread({"eth0": 30, "eth1": 34})["max_over_fair"] == 1.062
    assert mh.spread({})["max_over_fair"] is None


def _proc(tmp_path, fields=True):
    root = tmp_path / "proc"
    for family in mh.FAMILIES:
        (root / "net" / family).mkdir(parents=True)
        (root / "net" / family / "fib_multipath_hash_policy").write_text("0\n")
        if fields:
            (root / "net" / family / "fib_multipath_hash_fields").write_text("7\n")
    return root


def _run_module(args, check=False, diff=False):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".build" / "collections"), ANSIBLE_FORCE_COLOR="false")
    command = [str(Path(sys.executable).parent / "ansible"), "localhost", "-m", "gpufabric.core.multipath_hash",
               "-a", json.dumps(args), "-o"] + (["--check"] if check else []) + (["--diff"] if diff else [])
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, cwd=str(ROOT), check=False)
    text = result.stdout.split("=>", 1)[1] if "=>" in result.stdout else result.stdout
    return result.returncode, json.loads(text.split("---", 1)[0]) if text.strip().startswith("{") else text


def test_module_check_apply_check_apply(tmp_path):
    proc = _proc(tmp_path)
    args = {"policy": "custom", "fields": ["src_ip", "dst_ip", "ip_proto", "src_port", "dst_port"],
            "sysctl_file": str(tmp_path / "sysctl.d" / "90-hash.conf"), "proc_root": str(proc)}
    rc, first = _run_module(args, check=True)
    assert rc == 0 and first["changed"] and first["file_changed"], first
    assert not (tmp_path / "sysctl.d").exists() and (proc / "net/ipv4/fib_multipath_hash_policy").read_text() == "0\n"
    rc, applied = _run_module(args)
    assert rc == 0 and applied["changed"], applied
    assert applied["running"] == {"net.ipv4.fib_multipath_hash_fields": 0x37, "net.ipv4.fib_multipath_hash_policy": 3,
                                  "net.ipv6.fib_multipath_hash_fields": 0x37, "net.ipv6.fib_multipath_hash_policy": 3}
    assert "net.ipv6.fib_multipath_hash_policy = 3\n" in (tmp_path / "sysctl.d" / "90-hash.conf").read_text()
    assert _run_module(args, check=True)[1]["changed"] is False
    assert _run_module(args)[1]["changed"] is False
    # Someone set the running value back: only the kernel changes, shown in the diff.
    (proc / "net/ipv6/fib_multipath_hash_policy").write_text("0\n")
    rc, again = _run_module(args, diff=True)
    assert rc == 0 and again["changed"] and not again["file_changed"], again
    assert again["runtime_changes"] == [{"key": "net.ipv6.fib_multipath_hash_policy", "before": 0, "after": 3}]


def test_module_refuses_custom_on_a_kernel_without_fields_and_changes_nothing(tmp_path):
    proc = _proc(tmp_path, fields=False)
    args = {"policy": "custom", "fields": ["src_port"], "sysctl_file": str(tmp_path / "hash.conf"),
            "proc_root": str(proc)}
    rc, result = _run_module(args)
    assert rc != 0 and "custom needs net.ipv4.fib_multipath_hash_fields" in result["msg"], result
    assert not (tmp_path / "hash.conf").exists()


def test_a_refused_value_puts_back_the_file_and_the_values_written(tmp_path, monkeypatch):
    import errno

    from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction
    from ansible_collections.gpufabric.core.plugins.modules import multipath_hash as module

    proc = _proc(tmp_path)
    (tmp_path / "hash.conf").write_text("old\n")
    real_write = mh.write_runtime

    def kernel_refuses_ipv6(values, proc_root):
        # As the kernel answers a policy it lacks (captured in the lab: echo 4 > ...: EINVAL), after IPv4 took it.
        for key, value in values.items():
            if key.startswith("net.ipv6") and value == 1:
                raise OSError(errno.EINVAL, "Invalid argument")
            real_write({key: value}, proc_root)

    monkeypatch.setattr(module, "write_runtime", kernel_refuses_ipv6)
    desired = mh.desired_values("l4", [])
    running = mh.runtime_changes(mh.read_runtime(list(desired), str(proc)), desired)
    entry = {"path": str(tmp_path / "hash.conf"), "content": mh.render_sysctl_file("l4", desired), "mode": 0o644}
    changes = file_transaction.plan([entry], file_transaction.read_all([entry]))
    with pytest.raises(OSError):
        file_transaction.apply(changes, after=lambda: module.set_running(desired, running, str(proc)))
    assert (tmp_path / "hash.conf").read_text() == "old\n"
    assert (proc / "net/ipv4/fib_multipath_hash_policy").read_text() == "0\n"
