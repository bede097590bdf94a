"""The ipsec_config module's pure parts: rendering, change plan, the transaction, and the RoCE bypass report.

The RoCE inputs are built from real captures of the QEMU lab (tests/fixtures/lab_qemu/, Soft-RoCE rxe0 on bond0 with
VLAN 100 on it): the GID table as sysfs showed it (lab-qemu-sysfs-gids-rxe0.txt), the link layer and port state
from ibstat (lab-qemu-ibstat-rxe0.txt) and the selectors from the ESP policy strongSwan installed
(lab-qemu-ip-xfrm-policy-kernel-esp.txt). Derived, not edited: the capture's "gids/N:value" lines are put under
class/infiniband/rxe0/ports/1/ as gpufabric.core's sysfs dict holds them (the live reader stores the same relative
paths), and port/link-layer files are written from ibstat's "State: Active" and "Link layer: Ethernet".
"""

import os
import re

import pytest

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.config import (
    LOAD,
    RESTART,
    file_entries,
    gid_address,
    reloads,
    render_charon_conf,
    render_swanctl_conf,
    roce_bypass,
    roce_warning,
)
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.inputs import InputError
from ansible_collections.gpufabric.core.plugins.module_utils.ipsec.mesh import build_mesh
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.sysfs import rdma_devices
from fixture_data import read_fixture


def lab_qemu_sysfs():
    base = "class/infiniband/rxe0/ports/1/"
    sysfs = {}
    for line in read_fixture("lab_qemu/lab-qemu-sysfs-gids-rxe0.txt").splitlines():
        if line:
            path, _colon, content = line.partition(":")
            sysfs[base + path] = content
    ibstat = read_fixture("lab_qemu/lab-qemu-ibstat-rxe0.txt")
    sysfs[base + "link_layer"] = re.search(r"Link layer: (\S+)", ibstat).group(1)
    sysfs[base + "state"] = "4: %s" % re.search(r"State: (\S+)", ibstat).group(1).upper()
    return sysfs


def lab_qemu_local_selectors():
    """This VM's side of the ESP policy: the src of the 'dir out' policy."""
    policy = read_fixture("lab_qemu/lab-qemu-ip-xfrm-policy-kernel-esp.txt")
    return re.findall(r"^src (\S+) dst \S+ \n\tdir out priority \d+ ptype main \n\ttmpl", policy, re.M)


def test_lab_capture_selectors_are_the_vlan_address():
    assert lab_qemu_local_selectors() == ["10.100.0.1/32"]


def test_rxe_on_the_vlan_inside_the_esp_policy_is_reported_unencrypted():
    devices = rdma_devices(lab_qemu_sysfs())
    report = roce_bypass(devices, lab_qemu_local_selectors())
    # GID 1 is ::ffff:10.100.0.1 on bond0.100; GIDs 0 and 2 are link-local (fe80::), which no selector covers.
    assert report == [{"device": "rxe0", "port": 1, "netdev": "bond0.100", "address": "10.100.0.1",
                       "selectors": ["10.100.0.1/32"], "gid_indexes": [1]}]
    assert roce_warning(report[0]) == "RoCE on rxe0 (bond0.100, 10.100.0.1) bypasses kernel IPsec: not encrypted"


def test_selectors_elsewhere_report_nothing():
    devices = rdma_devices(lab_qemu_sysfs())
    assert roce_bypass(devices, ["10.77.0.0/24", "fd00::/64"]) == []
    assert roce_bypass(devices, []) == []


def test_a_subnet_selector_with_a_port_suffix_still_covers_the_rail():
    devices = rdma_devices(lab_qemu_sysfs())
    report = roce_bypass(devices, ["10.100.0.0/24[udp/4791]"])
    found = [(r["netdev"], r["address"], r["selectors"]) for r in report]
    assert found == [("bond0.100", "10.100.0.1", ["10.100.0.0/24"])]


def test_infiniband_link_layer_is_not_an_ip_rail():
    sysfs = lab_qemu_sysfs()
    sysfs["class/infiniband/rxe0/ports/1/link_layer"] = "InfiniBand"
    assert roce_bypass(rdma_devices(sysfs), ["10.100.0.0/24"]) == []


def test_no_rdma_device_no_report():
    """A container: /sys/class/infiniband is absent, so the sysfs dict holds nothing under it."""
    assert roce_bypass(rdma_devices({}), ["10.77.0.1/32"]) == []


def test_gid_address_forms():
    assert str(gid_address("0000:0000:0000:0000:0000:ffff:0a64:0001")) == "10.100.0.1"
    assert str(gid_address("fe80:0000:0000:0000:c411:1dff:fefa:f70b")) == "fe80::c411:1dff:fefa:f70b"
    assert gid_address("not a gid") is None


SETTINGS = {"mesh_group": "ipsec", "ike_proposals": ["aes256gcm16-prfsha384-ecp384"],
            "esp_proposals": ["aes256gcm16-ecp384"], "ike_rekey_time": "4h", "child_rekey_time": "1h",
            "dpd_delay": "30s", "mode": "tunnel", "hw_offload": "no", "revocation_policy": "relaxed",
            "conn_prefix": "gf", "certificate": "gpufabric.crt", "ca_certificate": "gpufabric-ca.crt"}
NODES = [{"name": n, "address": a, "id": n, "addresses": [a], "selectors": [], "protect_address": True}
         for n, a in (("gpu-a01", "10.0.0.1"), ("gpu-a02", "10.0.0.2"))]


def test_swanctl_conf_one_connection_per_peer_and_bypass():
    mesh = build_mesh("gpu-a01", NODES, bypass_networks=["10.0.0.0/24"])
    text = render_swanctl_conf(mesh, SETTINGS)
    assert text.count("version = 2") == 1
    assert '    gf-gpu-a02 {\n        # peer "gpu-a02" (' in text
    assert 'local_ts = "10.0.0.1/32"' in text and 'remote_ts = "10.0.0.2/32"' in text
    assert 'certs = "gpufabric.crt"' in text and 'cacerts = "gpufabric-ca.crt"' in text
    assert "gf-bypass {" in text and "mode = pass" in text and 'remote_ts = "10.0.0.0/24"' in text
    assert text.count("{") == text.count("}")


def test_swanctl_conf_refuses_a_value_that_could_add_a_setting():
    mesh = build_mesh("gpu-a01", NODES)
    with pytest.raises(InputError):
        render_swanctl_conf(mesh, dict(SETTINGS, dpd_delay="30s\n        mobike = yes"))


def test_charon_conf_data_path():
    assert "load = yes" in render_charon_conf(True)
    assert "load = no" in render_charon_conf(False)


def desired_files(tmp_path):
    return {str(tmp_path / "conf.d" / "gpufabric.conf"): {"content": "conf\n", "mode": 0o644, "reload": LOAD},
            str(tmp_path / "charon.conf"): {"content": "charon\n", "mode": 0o644, "reload": RESTART}}


def _plan(desired):
    entries = file_entries(desired)
    return ft.plan(entries, ft.read_all(entries))


def test_a_restart_only_for_a_changed_data_path_setting_and_nothing_when_equal(tmp_path):
    desired = desired_files(tmp_path)
    conf, charon = str(tmp_path / "conf.d" / "gpufabric.conf"), str(tmp_path / "charon.conf")
    first = _plan(desired)
    assert reloads(desired, first) == {"restart": True, "load": True}
    ft.apply(first, make_directories=[(str(tmp_path / "conf.d"), 0o755)])
    assert _plan(desired) == [] and reloads(desired, []) == {"restart": False, "load": False}
    (tmp_path / "conf.d" / "gpufabric.conf").write_text("old\n")
    assert [c["path"] for c in _plan(desired)] == [conf] and reloads(desired, _plan(desired))["restart"] is False
    # A new header is no new setting: loaded, not restarted.
    (tmp_path / "charon.conf").write_text("# Ansible managed\ncharon\n")
    assert reloads(desired, [c for c in _plan(desired) if c["path"] == charon]) == {"restart": False, "load": True}
    (tmp_path / "charon.conf").write_text("charon-old\n")
    assert reloads(desired, _plan(desired))["restart"] is True


def test_every_file_is_roots_with_its_mode(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the files are chowned to root")
    desired = desired_files(tmp_path)
    ft.apply(_plan(desired), make_directories=[(str(tmp_path / "conf.d"), 0o755)])
    conf = tmp_path / "conf.d" / "gpufabric.conf"
    os.chmod(conf, 0o666)
    assert [(c["path"], c["action"]) for c in _plan(desired)] == [(str(conf), "mode")]
    os.chmod(conf, 0o644)
    os.chown(conf, 65534, 65534)
    assert [(c["path"], c["action"]) for c in _plan(desired)] == [(str(conf), "owner")]
    ft.apply(_plan(desired))
    assert (os.stat(conf).st_uid, os.stat(conf).st_gid) == (0, 0) and _plan(desired) == []
