#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: soft_roce
short_description: Make Soft-RoCE (rdma_rxe) devices on netdevs, at once and whenever the netdev appears
version_added: "0.1.0"
description:
  - Brings the host's Soft-RoCE devices to O(devices) - each an C(rdma link add NAME type rxe netdev NETDEV) - for
    hosts whose NICs have no RDMA function (labs, test clusters, storage nodes on plain Ethernet). A Soft-RoCE
    device carries RoCE v2 in software; it is never a substitute for a NIC's own RDMA function, and a netdev that has
    one is refused.
  - The kernel removes a Soft-RoCE device when its netdev goes away (a bond re-created by the network backend, a
    reboot), so each device gets a systemd unit (C(gpufabric-soft-roce-NAME.service)) wanted by and bound to its
    netdev's device unit - systemd makes the device again whenever the netdev appears. The units are written as one
    transaction (C(file_transaction)); systemd is asked through C(systemd_units).
  - Devices of units this module wrote earlier and no longer in O(devices) are removed with their units; other RDMA
    devices are never touched.
  - Before anything changes, a netdev that does not exist, a netdev that already has a hardware RDMA device, and a
    name another RDMA device has are refused, naming the item of O(devices).
  - Returns RV(topology_changed) when a device was made or removed, and then sets
    C(ansible_facts.gpufabric_topology_stale), so that the roles after it run M(gpufabric.core.topology_facts) again
    (C(NCCL_IB_HCA), the GID index and the bandwidth sweep's rails then name the new devices).
options:
  devices:
    description:
      - The Soft-RoCE devices the host must have (the inventory's C(gpufabric_soft_roce)); an empty list removes
        those this module made.
    type: list
    elements: dict
    required: true
    suboptions:
      name:
        description: The RDMA device's name, for example C(rxe0).
        type: str
        required: true
      netdev:
        description: The netdev it runs on (a physical NIC or a bond; the kernel refuses a VLAN).
        type: str
        required: true
  unit_dir:
    description: Where the units are written.
    type: path
    default: /etc/systemd/system
  wait_seconds:
    description: How long to wait, after a change, for each device to appear with an ACTIVE port (a warning names a
      device that has none by then).
    type: int
    default: 30
notes:
  - "Soft-RoCE reports a 1X rate (2.5 Gb/s) whatever the link does: give its rails no bandwidth gate from the rate."
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details: Reports the unit files and systemd actions a run would take, and whether devices would be made.
  diff_mode:
    support: full
    details: Returns the before and after text of every file that changes.
seealso:
  - module: gpufabric.core.topology_facts
author:
  - gpufabric.core contributors (@gpufabric)
"""

EXAMPLES = r"""
- name: Soft-RoCE on the bond the bonding role made
  gpufabric.core.soft_roce:
    devices:
      - {name: rxe0, netdev: bond0}
"""

RETURN = r"""
devices:
  description: The Soft-RoCE devices the host has after the run (before it in check mode), name to netdev.
  returned: always
  type: dict
  sample: {rxe0: bond0}
made:
  description: Devices made by this run (or that would be, in check mode).
  returned: always
  type: list
  elements: str
  sample: [rxe0]
removed:
  description: Devices removed by this run (or that would be, in check mode).
  returned: always
  type: list
  elements: str
  sample: []
changes:
  description: Unit files created, replaced or removed (or that would be), each with C(path) and C(action).
  returned: always
  type: list
  elements: dict
  sample: [{path: /etc/systemd/system/gpufabric-soft-roce-rxe0.service, action: create}]
actions:
  description: What was asked of systemd and the rdma tool.
  returned: always
  type: list
  elements: str
  sample: [daemon-reload, enabled gpufabric-soft-roce-rxe0.service, started gpufabric-soft-roce-rxe0.service]
topology_changed:
  description:
    - Whether a device was made or removed (never in check mode). When true, C(ansible_facts.gpufabric_topology_stale)
      is set too.
  returned: always
  type: bool
  sample: true
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.rdma import soft_roce as sr
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su
from ansible_collections.gpufabric.core.plugins.module_utils.fabric.sysfs import live_rdma_devices

UNIT_MODE = 0o644


def _wait_for(devices, deadline_s):
    """The host's RDMA devices once every wanted Soft-RoCE device is there on its netdev with an ACTIVE port (what
    discovery after this step must see), or when the deadline passes."""
    deadline = time.monotonic() + deadline_s
    while True:
        rdma_devices = live_rdma_devices()
        present = sr.soft_devices(rdma_devices)
        ready = all(present.get(name) == netdev and any(
            port.get("state") == "ACTIVE" for port in rdma_devices[name]["ports"].values())
            for name, netdev in devices.items())
        if ready or time.monotonic() >= deadline:
            return rdma_devices
        time.sleep(0.2)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            devices=dict(type="list", elements="dict", required=True, options=dict(
                name=dict(type="str", required=True), netdev=dict(type="str", required=True))),
            unit_dir=dict(type="path", default="/etc/systemd/system"),
            wait_seconds=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    devices = params["devices"]
    unit_dir = params["unit_dir"]
    problems = sr.problems(devices)
    if problems:
        module.fail_json(msg="Nothing was changed. " + "; ".join(problems))
    wanted = {device["name"]: device["netdev"] for device in devices}
    # The devices of units this module wrote and no longer wanted: removed in this run.
    owned = sorted(name for name in (sr.device_of_unit(f) for f in os.listdir(unit_dir)) if name) \
        if os.path.isdir(unit_dir) else []
    stale = [name for name in owned if name not in wanted]
    rdma_now = live_rdma_devices()
    netdevs = set(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else set()
    problems = sr.conflicts(devices, rdma_now, netdevs, removable=stale)
    if problems:
        module.fail_json(msg="Nothing was changed. " + "; ".join(problems))
    rdma = module.get_bin_path("rdma", required=True)
    modprobe = module.get_bin_path("modprobe", required=True)
    desired = [{"path": os.path.join(unit_dir, sr.unit_name(name)), "mode": UNIT_MODE,
                "content": sr.unit_content(name, netdev, rdma, modprobe)} for name, netdev in sorted(wanted.items())]
    desired += [{"path": os.path.join(unit_dir, sr.unit_name(name)), "mode": UNIT_MODE, "content": None}
                for name in stale]
    try:
        changes = ft.plan(desired, {entry["path"]: ft.read_current(entry["path"]) for entry in desired})
    except (OSError, ValueError) as exc:
        module.fail_json(msg="Nothing was changed: %s" % exc)
    changed_paths = {change["path"] for change in changes}
    before = sr.soft_devices(rdma_now)
    result = dict(changed=False, devices=before, changes=ft.summary(changes), actions=[], topology_changed=False,
                  made=sorted(name for name in wanted if before.get(name) != wanted[name]),
                  removed=sorted(name for name in stale if name in before))
    if module._diff:
        result["diff"] = ft.diff_entries(changes)
    run = module.run_command
    check = module.check_mode
    actions = result["actions"]
    try:
        # Stale devices first: their units stopped and disabled, then the devices deleted, then the files go.
        for name in stale:
            actions += su.ensure_stopped(run, sr.unit_name(name), check_mode=check)
            if name in before:
                if not check:
                    rc, out, err = run([rdma, "link", "delete", name])
                    if rc != 0:
                        module.fail_json(msg="rdma link delete %s failed: %s" % (name, (err or out).strip()),
                                         **result)
                actions.append("deleted %s" % name)
        if changes and not check:
            try:
                ft.apply(changes)
            except OSError as exc:
                module.fail_json(msg="No unit file was changed (every file restored): %s" % exc, **result)
        if changes:
            actions += su.daemon_reload(run, check_mode=check)
        for name in sorted(wanted):
            path = os.path.join(unit_dir, sr.unit_name(name))
            actions += su.ensure_running(run, sr.unit_name(name), restart=path in changed_paths, check_mode=check)
    except su.UnitError as exc:
        module.fail_json(msg=str(exc), **result)
    result["changed"] = bool(changes or actions)
    if not check and result["changed"]:
        rdma_after = _wait_for(wanted, params["wait_seconds"])
        after = sr.soft_devices(rdma_after)
        missing = sorted(name for name in wanted if after.get(name) != wanted[name])
        result["devices"] = after
        result["topology_changed"] = after != before
        if result["topology_changed"]:
            result["ansible_facts"] = {"gpufabric_topology_stale": True}
        if missing:
            module.fail_json(msg="Soft-RoCE devices %s did not appear within %d s: see journalctl -u %s" % (
                ", ".join(missing), params["wait_seconds"], " -u ".join(sr.unit_name(name) for name in missing)),
                **result)
        for name in sorted(wanted):
            states = sorted(set(port.get("state") or "unknown" for port in rdma_after[name]["ports"].values()))
            if "ACTIVE" not in states:
                module.warn("%s on %s is %s after %d s: is %s up and carrying its link?" % (
                    name, wanted[name], "/".join(states) or "without a port", params["wait_seconds"], wanted[name]))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
