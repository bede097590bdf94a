# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Soft-RoCE (rdma_rxe) devices as desired state: which to make, the systemd unit that makes each, what conflicts.

A Soft-RoCE device is made with `rdma link add NAME type rxe netdev NETDEV` and lives until its netdev goes away
(the kernel removes it when the netdev is unregistered: a bond re-created, a reboot). So each device gets a unit of
its own, wanted by and bound to its netdev's systemd device unit (sys-subsystem-net-devices-NETDEV.device): systemd
makes the device whenever the netdev appears, at boot or when a network backend re-creates it, and stops the unit
when the netdev goes. Pure functions here; the module gpufabric.core.soft_roce reads sysfs, writes the units
through file_transaction and asks systemd through systemd_units.
"""

from __future__ import annotations

import re

VARIABLE = "gpufabric_soft_roce"
UNIT_PREFIX = "gpufabric-soft-roce-"
UNIT_SUFFIX = ".service"
# RDMA device names (ib_device.name, at most 63 characters); no shell or unit-file syntax can get into a unit.
DEVICE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,62}")
# Linux interface names (up to 15 characters) of the characters a systemd device unit name takes unescaped, and '-'.
NETDEV_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]{0,14}")
HEADER = "# Managed by Ansible (gpufabric.core.soft_roce); edits are overwritten.\n"


class SoftRoceError(ValueError):
    """The desired devices cannot be made; the message names the variable and what to change."""


def problems(devices, variable=VARIABLE):
    """Every problem of the desired devices ([{name, netdev}]), one sentence each naming the item."""
    if not isinstance(devices, list):
        return ["%s: must be a list of {name, netdev}, got %s" % (variable, type(devices).__name__)]
    found = []
    names, netdevs = {}, {}
    for index, device in enumerate(devices):
        where = "%s[%d]" % (variable, index)
        if not isinstance(device, dict) or set(device) - {"name", "netdev"}:
            found.append("%s: must be a dict with name and netdev only, got %r" % (where, device))
            continue
        name, netdev = device.get("name"), device.get("netdev")
        if not isinstance(name, str) or not DEVICE_NAME.fullmatch(name):
            found.append("%s.name: must be an RDMA device name (a letter, then up to 62 letters, digits or _), "
                         "got %r" % (where, name))
        elif name in names:
            found.append("%s.name: %s is also %s[%d].name" % (where, name, variable, names[name]))
        else:
            names[name] = index
        if not isinstance(netdev, str) or not NETDEV_NAME.fullmatch(netdev):
            found.append("%s.netdev: must be an interface name (1-15 of A-Z a-z 0-9 _ . -, not starting with .), got %r"
                         % (where, netdev))
        elif netdev in netdevs:
            found.append("%s.netdev: %s already carries %s[%d]; the kernel makes one Soft-RoCE device per netdev"
                         % (where, netdev, variable, netdevs[netdev]))
        else:
            netdevs[netdev] = index
    return found


def unit_name(device):
    return "%s%s%s" % (UNIT_PREFIX, device, UNIT_SUFFIX)


def device_of_unit(filename):
    """The device name a unit file of this module is for, or None for any other file."""
    if filename.startswith(UNIT_PREFIX) and filename.endswith(UNIT_SUFFIX):
        name = filename[len(UNIT_PREFIX):-len(UNIT_SUFFIX)]
        return name if DEVICE_NAME.fullmatch(name) else None
    return None


def netdev_device_unit(netdev):
    """systemd's device unit of a netdev (systemd-escape --path /sys/subsystem/net/devices/NETDEV, for the
    characters NETDEV_NAME allows: '-' becomes \\x2d)."""
    return "sys-subsystem-net-devices-%s.device" % netdev.replace("-", "\\x2d")


def unit_content(name, netdev, rdma, modprobe):
    """The unit that makes device name on netdev whenever the netdev exists (rdma and modprobe: absolute paths)."""
    device_unit = netdev_device_unit(netdev)
    return (
        HEADER
        + "[Unit]\n"
        + "Description=Soft-RoCE device %s on %s (gpufabric.core.soft_roce)\n" % (name, netdev)
        # Bound to the netdev: started when it appears, stopped when it goes (the kernel removes the device then).
        + "BindsTo=%s\n" % device_unit
        + "After=%s systemd-modules-load.service\n" % device_unit
        + "\n[Service]\n"
        + "Type=oneshot\n"
        + "RemainAfterExit=yes\n"
        + "ExecStartPre=%s rdma_rxe\n" % modprobe
        # Made only when missing: a restart of the unit (its file changed) must not fail on the existing device.
        + "ExecStart=/bin/sh -c 'test -e /sys/class/infiniband/%s || exec %s link add %s type rxe netdev %s'\n"
        % (name, rdma, name, netdev)
        + "\n[Install]\n"
        + "WantedBy=%s\n" % device_unit
    )


def conflicts(devices, rdma_devices, netdevs, removable=()):
    """Why the desired devices cannot be made on this host, one sentence each (nothing has changed yet).

    rdma_devices: sysfs.rdma_devices() of the host; netdevs: the names under /sys/class/net; removable: the Soft-RoCE
    devices this module made earlier and removes in the same run (their names and netdevs are free again).
    A netdev whose NIC has an RDMA function of its own would be shadowed by a Soft-RoCE device; the kernel makes one
    Soft-RoCE device per netdev; a name another RDMA device has cannot be taken.
    """
    found = []
    hardware, soft = {}, {}
    for name, device in rdma_devices.items():
        if device.get("parent"):
            if name not in removable:
                soft[device["parent"]] = name
            continue
        carried = set(device.get("netdevs") or [])
        for port in (device.get("ports") or {}).values():
            carried.update(gid.get("ndev") for gid in port.get("gids") or [] if gid.get("ndev"))
        for netdev in carried:
            hardware.setdefault(netdev, name)
    for index, wanted in enumerate(devices):
        where = "%s[%d]" % (VARIABLE, index)
        name, netdev = wanted["name"], wanted["netdev"]
        if netdev not in netdevs:
            found.append("%s.netdev: %s does not exist on this host (make it first: a bond or VLAN of the bonding "
                         "role comes before this step)" % (where, netdev))
        if netdev in hardware:
            found.append("%s.netdev: %s already has the RDMA device %s; a Soft-RoCE device would shadow its NIC's "
                         "own RDMA function" % (where, netdev, hardware[netdev]))
        existing = rdma_devices.get(name)
        if existing is not None and name not in removable and existing.get("parent") != netdev:
            found.append("%s.name: the RDMA device %s already exists%s" % (
                where, name, " on %s" % existing["parent"] if existing.get("parent") else " (a hardware device)"))
        if soft.get(netdev) not in (None, name):
            found.append("%s.netdev: %s is the netdev of %s already; the kernel makes one Soft-RoCE device per "
                         "netdev" % (where, netdev, soft[netdev]))
    return found


def soft_devices(rdma_devices):
    """{name: netdev} of the Soft-RoCE devices the host has (an RDMA device with a parent netdev)."""
    return {name: device["parent"] for name, device in rdma_devices.items() if device.get("parent")}
