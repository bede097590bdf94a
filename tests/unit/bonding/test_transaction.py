# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning a change of configuration files as one transaction, and what activation and undo must do."""

from __future__ import annotations

from ansible_collections.gpufabric.core.plugins.module_utils.bonding import config as bc

BOND = {"name": "bond0", "members": ["ens1f0np0", "ens1f1np1"]}


def render(**kwargs):
    return bc.render_networkd(bc.normalize(**kwargs))


def test_no_change_when_files_match():
    files = render(bonds=[BOND])
    assert bc.plan_changes(files, dict(files)) == []


def test_create_replace_remove_and_what_networkd_must_delete():
    before = render(bonds=[BOND], vlans=[{"id": 100, "link": "bond0"}])
    after = render(bonds=[dict(BOND, mtu=1500)], vlans=[{"id": 200, "link": "bond0"}])
    changes = bc.plan_changes(before, after)
    actions = {c["name"]: c["action"] for c in changes}
    assert actions == {
        "10-gpufabric-bond0.100.netdev": "remove", "10-gpufabric-bond0.100.network": "remove",
        "10-gpufabric-bond0.200.netdev": "create", "10-gpufabric-bond0.200.network": "create",
        "10-gpufabric-bond0.netdev": "replace", "10-gpufabric-bond0.network": "replace"}
    apply, revert = bc.networkd_netdevs_to_delete(changes)
    # networkd never updates an existing netdev: the changed bond and the removed VLAN go before the reload...
    assert apply == ["bond0", "bond0.100"]
    # ...and the undo deletes what the change created or altered, so the reload recreates the old ones.
    assert revert == ["bond0", "bond0.200"]


def test_manifest_and_diff():
    changes = bc.plan_changes({"a.network": "old\n", "b.network": "gone\n"}, {"a.network": "new\n", "c.netdev": "x\n"})
    manifest = bc.manifest_text(changes, "/etc/systemd/network/")
    assert manifest.splitlines() == ["replace\t/etc/systemd/network/a.network\t000-a.network",
                                     "remove\t/etc/systemd/network/b.network\t001-b.network",
                                     "create\t/etc/systemd/network/c.netdev\t-"]
    diff = bc.diff_entries(changes, "/etc/systemd/network")
    assert diff[1] == {"before_header": "/etc/systemd/network/b.network",
                       "after_header": "/etc/systemd/network/b.network (removed)", "before": "gone\n", "after": ""}
    assert diff[2]["before_header"] == "/etc/systemd/network/c.netdev (absent)"


def test_networkmanager_activation_order_parents_first():
    files = bc.render_networkmanager(bc.normalize(bonds=[BOND], vlans=[{"id": 100, "link": "bond0"}],
                                                  ethernets=[{"name": "eth9", "addresses": ["192.0.2.1/24"]}]))
    changes = bc.plan_changes({}, files)
    apply, revert = bc.networkmanager_profiles_to_activate(changes)
    assert apply == ["gpufabric-eth9", "gpufabric-bond0", "gpufabric-bond0-port-ens1f0np0",
                     "gpufabric-bond0-port-ens1f1np1", "gpufabric-bond0.100"]
    # Nothing existed before: the undo only removes files, NetworkManager drops their profiles on reload.
    assert revert == []


def test_sha1_of_absent_file_is_none():
    assert bc.sha1(None) is None
    assert bc.sha1("abc") == "a9993e364706816aba3e25717850c26c9cd0d89d"
