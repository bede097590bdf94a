#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: bond_config
short_description: Write validated bond, VLAN and interface configuration as one transaction that rolls itself back
version_added: "0.1.0"
description:
  - Validates bonds, VLANs and plain interfaces, renders them for netplan, systemd-networkd or NetworkManager
    keyfiles, and checks the result with the backend's own tool (C(netplan generate --root-dir),
    C(systemd-networkd) loading the files in a throw-away network and mount namespace, C(nmcli --offline)) before
    any file is touched.
  - When files change, it backs them up, arms a systemd timer (C(gpufabric-bonding-rollback.timer)) that
    restores them and re-activates the previous configuration after O(rollback_timeout) seconds, installs the
    new files and starts the activation in the background (C(gpufabric-bonding-apply.service)), so a change that
    cuts the connection is still undone by the host itself.
  - The rollback units are persistent files in C(/etc/systemd/system), written before any configuration file and
    removed on confirm or rollback. One of them (C(gpufabric-bonding-rollback-boot.service)) runs early at boot,
    before any network service, so a host that restarts before the change is confirmed comes up on its previous
    configuration.
  - One transaction per host. The module holds the host-wide lock C(<state_dir>/lock) from reading the current
    files until the activation is started, and C(<state_dir>/pending) names the armed transaction (which, started
    when, by which run, changing what) until it is confirmed or rolled back. While a transaction is armed, every
    other run fails, naming it, and changes nothing.
  - The caller confirms the change (C(gpufabric-bonding-activate confirm)) once it has reconnected and verified
    the host; the M(gpufabric.core.bond_config) module never confirms by itself. The role
    C(gpufabric.core.bonding) does this.
  - Owns only its own files (O(file_prefix) in O(config_dir)); files of the same prefix that the configuration no
    longer needs are removed.
  - Given O(helper_package), it also installs the activation and rollback helper (the host program
    C(gpufabric-bonding-activate) at O(helper) and its package in O(helper_lib_dir), owner root, missing
    directories created 0755) when it is missing or different, and, when O(activate) is true, makes sure the
    backend's O(service) is enabled and running. Both happen under the lock, after the configuration passed
    validation and before the rollback is armed and the configuration activated; a refused or invalid run touches
    neither.
  - Every file (configuration, backups, rollback units, the helper) is written through the collection's
    file_transaction (fsync, atomic rename; the configuration files all or none), systemd is asked through its
    systemd_units.
requirements:
  - PyYAML on the host for the C(netplan) backend (Debian and Ubuntu C(python3-yaml), which netplan.io depends on)
author:
  - gpufabric.core contributors (@gpufabric)
options:
  backend:
    description: Which configuration system renders and activates the configuration.
    type: str
    required: true
    choices: [networkd, netplan, networkmanager]
  bonds:
    description:
      - Bonds, as in the role variable C(bonding_bonds); see the role's documentation for the keys.
    type: list
    elements: dict
    default: []
  vlans:
    description: VLAN sub-interfaces, as in the role variable C(bonding_vlans).
    type: list
    elements: dict
    default: []
  ethernets:
    description: Plain interfaces with addresses or routes, as in the role variable C(bonding_ethernets).
    type: list
    elements: dict
    default: []
  bond_defaults:
    description:
      - Defaults for bonds that do not set a key (C(mode), C(miimon), C(lacp_rate), C(xmit_hash_policy),
        C(ad_select), C(min_links), C(mtu)); applied only where the bond's mode reads them.
    type: dict
    default: {}
  variable_prefix:
    description: Prefix of the variable names used in error messages (C(bonding) gives C(bonding_bonds[0]) ...).
    type: str
    default: bonding
  config_dir:
    description:
      - Directory of the backend's configuration. Defaults to C(/etc/systemd/network), C(/etc/netplan) or
        C(/etc/NetworkManager/system-connections).
    type: path
  file_prefix:
    description:
      - Prefix of the files this module owns in O(config_dir). For netplan it is the whole file name without
        C(.yaml). Defaults to C(10-gpufabric-) (networkd), C(60-gpufabric-bonding) (netplan), C(gpufabric-)
        (NetworkManager, also the prefix of the profile names).
    type: str
  netplan_renderer:
    description: Value of C(network.renderer) in the netplan file; empty leaves the host's default.
    type: str
    default: ""
  validate:
    description:
      - Check the rendered files with the backend's own tool before installing them. The module's own checks of
        values that those tools accept silently always run.
    type: bool
    default: true
  activate:
    description:
      - Activate the new configuration after installing it, under the rollback timer. V(false) installs the
        validated files only; they take effect at the next reboot or manual reload, without the safety net.
    type: bool
    default: true
  rollback_timeout:
    description: Seconds after which the host restores the previous files unless the change is confirmed.
    type: int
    default: 180
  state_dir:
    description:
      - Where the transactions (backup, manifest, logs) are kept, one directory each; C(<state_dir>/current) links
        to the latest one.
    type: path
    default: /var/lib/gpufabric/bonding
  helper:
    description: Path of the activation and rollback helper (C(gpufabric-bonding-activate)) the rollback units run.
    type: path
    default: /usr/local/libexec/gpufabric-bonding-activate
  helper_package:
    description:
      - The collection's module_utils the helper imports, path relative to C(plugins/module_utils) to content,
        installed (mode 0644) under O(helper_lib_dir)C(/ansible_collections/gpufabric/core/plugins/module_utils) (the
        layout of every host program of the collection) beside the command O(helper) (mode 0755) that runs
        C(bonding_activate), when missing or different, before anything uses them. The role passes
        C(bonding_activate.py) and its import closure as they are. Listed in RV(changes) and the diff, outside the
        transaction (a rollback does not remove it).
      - Not given, the helper must already be installed at O(helper).
    type: dict
  helper_lib_dir:
    description: Library directory of the helper (the module_utils it imports, under C(ansible_collections/)).
    type: path
    default: /usr/local/lib/gpufabric-bonding
  service:
    description:
      - The backend's systemd unit (C(systemd-networkd.service), C(NetworkManager.service)), enabled and started
        when it is not, before the configuration is activated. Only when O(activate) is true; empty when the
        backend has none (netplan hands over to its renderer).
    type: str
    default: ""
  run_label:
    description:
      - Who runs this change (for example the play and the controller's user), recorded in C(<state_dir>/pending)
        and shown to any run refused while this change is armed.
    type: str
    default: ""
  lock_timeout:
    description: Seconds to wait for the host-wide lock held by another run of this module or by the helper.
    type: int
    default: 30
extends_documentation_fragment:
  - gpufabric.core.attributes
attributes:
  check_mode:
    support: full
    details:
      - Reports the files that would change, with a diff, after validating them, and what would be done to
        O(service); touches nothing.
  diff_mode:
    support: full
    details: Returns the before and after text of every changed file.
notes:
  - Needs root, systemd (C(systemctl), C(systemd-run)) and, for O(validate) with networkd, the right to create mount and network
    namespaces (C(unshare), CAP_SYS_ADMIN).
  - Addresses are checked with Python's C(ipaddress) module, which runs on the host without extra packages. The
    checks of the configuration as a whole (gateways outside their interface's subnets, two default routes in one
    table, overlapping subnets) need netaddr; they run on the controller in P(gpufabric.core.bond_validate#filter)
    and again here only where the host has netaddr.
seealso:
  - module: ansible.posix.sysctl
  - name: netplan generate
    description: The netplan tool that validates the rendered YAML.
    link: https://netplan.readthedocs.io/en/stable/netplan-generate/
"""

EXAMPLES = r"""
- name: Two 100G ports in an LACP bond with a storage VLAN, applied under a 3-minute rollback timer
  gpufabric.core.bond_config:
    backend: networkd
    bonds:
      - name: bond0
        members: [ens1f0np0, ens1f1np1]
        mtu: 9000
    vlans:
      - id: 200
        link: bond0
        addresses: [10.200.0.11/24]
    rollback_timeout: 180
    helper_package: "{{ dict(names | zip(query('ansible.builtin.file', *paths, rstrip=false))) }}"
    service: systemd-networkd.service
  vars:
    names: [bonding_activate.py, bonding_transaction.py, file_transaction.py, systemd_units.py]
    paths: "{{ names | map('regex_replace', '^', '/path/to/ansible_collections/gpufabric/core/plugins/module_utils/') }}"
  register: bond_change

- name: Confirm the change once the host is reachable again
  ansible.builtin.command: /usr/local/libexec/gpufabric-bonding-activate confirm {{ bond_change.transaction }}
  when: bond_change.rollback_armed
  changed_when: true
"""

RETURN = r"""
files:
  description: Paths of the files the configuration consists of.
  returned: always
  type: list
  elements: str
  sample: [/etc/systemd/network/10-gpufabric-bond0.netdev, /etc/systemd/network/10-gpufabric-bond0.network]
changes:
  description:
    - Files created, replaced or removed (or that would be, in check mode); the helper's files first when they
      change (action C(create), C(replace), C(mode) or C(owner)).
  returned: always
  type: list
  elements: dict
  sample: [{action: create, path: /etc/systemd/network/10-gpufabric-bond0.netdev}]
checksums_before:
  description: SHA-1 of each changed configuration file before the change (null when it did not exist), to check
    a revert.
  returned: always
  type: dict
  sample: {/etc/systemd/network/10-gpufabric-bond0.netdev: null}
helper_action:
  description: What was done to the first changed file of the helper (or would be, in check mode); empty when the
    helper was as wanted or O(helper_package) was not given.
  returned: always
  type: str
  sample: create
service_actions:
  description: What was done to O(service) (or would be, in check mode); empty when it was already enabled and
    running, or not asked for.
  returned: always
  type: list
  elements: str
  sample: [enabled systemd-networkd.service, started systemd-networkd.service]
config:
  description: The validated, normalised configuration (defaults applied).
  returned: always
  type: dict
  sample: {bonds: [{name: bond0, mode: 802.3ad, miimon: 100, lacp_rate: fast, mtu: 9000}], vlans: [], ethernets: []}
validation:
  description: Which tool validated the files and what it said.
  returned: always
  type: dict
  sample: {tool: "netplan generate --root-dir", ran: true, warnings: []}
transaction:
  description: Directory of this change's backup, manifest and logs; empty when nothing changed.
  returned: always
  type: str
  sample: /var/lib/gpufabric/bonding/20261201T091500Z-5c1e0a7d
pending:
  description: When the run was refused because another transaction is armed, that transaction's record.
  returned: failure
  type: dict
  sample: {id: 20261201T091500Z-5c1e0a7d, started: "2026-12-01T09:15:00Z", run: "play Converge by root"}
rollback_armed:
  description: Whether the rollback timer was armed (the change must be confirmed).
  returned: always
  type: bool
  sample: true
rollback_deadline:
  description: Epoch seconds at which the host reverts the change unless it is confirmed; 0 when not armed.
  returned: always
  type: int
  sample: 1764500000
activation_started:
  description: Whether the background activation (gpufabric-bonding-apply.service) was started.
  returned: always
  type: bool
  sample: true
topology_changed:
  description:
    - Whether bonds, VLANs or interfaces were (re)configured on the running host, which changes the netdevs, bond
      membership and addresses (so the RoCE GIDs) topology discovery sees; the same as RV(activation_started).
    - When true, C(ansible_facts.gpufabric_topology_stale) is set too, so that the roles after this one run
      M(gpufabric.core.topology_facts) again.
  returned: always
  type: bool
  sample: true
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule, missing_required_lib
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpufabric.core.plugins.module_utils.bonding import addressing as ba
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import plan as bp
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import prerequisites as bpr
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import render_netplan as brp
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import render_networkd as brn
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import render_nm as brm
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import transaction as bt
from ansible_collections.gpufabric.core.plugins.module_utils.bonding import validate as bv
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import file_transaction as ft
from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units as su
from ansible_collections.gpufabric.core.plugins.module_utils.inputs.checks import path_problems

BACKEND_DEFAULTS = {
    "networkd": {"config_dir": "/etc/systemd/network", "file_prefix": "10-gpufabric-", "mode": 0o644},
    "netplan": {"config_dir": "/etc/netplan", "file_prefix": "60-gpufabric-bonding", "mode": 0o600},
    "networkmanager": {"config_dir": "/etc/NetworkManager/system-connections", "file_prefix": "gpufabric-",
                       "mode": 0o600},
}
NETWORKD_DIR = "/etc/systemd/network"
NETWORKD_BINARIES = ("/lib/systemd/systemd-networkd", "/usr/lib/systemd/systemd-networkd")
# Runs inside `unshare --mount --net`: networkd loads a copy of the future configuration directory, logs what
# it rejects, and can touch nothing of the host: private mounts, an empty network namespace, no D-Bus, and no
# privileges at all (the systemd-network user without capabilities; parsing needs none). Debug level: systemd 257
# logs "Enumeration completed." only there (252 at info); the staged files are readable by that user, as the
# installed ones are by the real networkd.
_NETWORKD_SANDBOX = r"""
set -e
mount --make-rprivate /
mount -t tmpfs tmpfs /run/systemd
mkdir -p /run/systemd/network /run/systemd/netif/links /run/systemd/netif/leases /run/systemd/netif/lldp
chown -R systemd-network:systemd-network /run/systemd/netif
mount --bind "$1" "$2"
log=/run/systemd/validate.log
setpriv --reuid=systemd-network --regid=systemd-network --clear-groups --inh-caps=-all --bounding-set=-all \
    env SYSTEMD_LOG_TARGET=console SYSTEMD_LOG_LEVEL=debug SYSTEMD_LOG_COLOR=0 \
    DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent "$3" >"$log" 2>&1 &
networkd=$!
# The files are loaded before the links are enumerated: stop as soon as networkd says so (at most 20 s).
tries=0
while [ "$tries" -lt 200 ] && kill -0 "$networkd" 2>/dev/null && ! grep -q "Enumeration completed" "$log"; do
    sleep 0.1
    tries=$((tries + 1))
done
kill "$networkd" 2>/dev/null || true
wait "$networkd" 2>/dev/null || true
cat "$log"
"""


def owned(backend, name, prefix):
    if backend == "networkd":
        return name.startswith(prefix) and name.endswith((".netdev", ".network"))
    if backend == "netplan":
        return name == prefix + ".yaml"
    return name.startswith(prefix) and name.endswith(".nmconnection")


def read_owned(backend, directory, prefix):
    """{file name: (text, mode, owner)} of the files this module owns in directory."""
    files = {}
    if not os.path.isdir(directory):
        return files
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isfile(path) and not os.path.islink(path) and owned(backend, name, prefix):
            files[name] = ft.read_current(path, with_owner=True)
    return files


def file_changes(changes, directory, mode, current):
    """bonding_plan's changes (by file name) as file_transaction changes (by path), each new file with mode and
    each old one with the mode and owner it has, so that an undo puts them back."""
    result = []
    for change in changes:
        dummy, before_mode, before_owner = current.get(change["name"], (None, None, None))
        result.append({"path": os.path.join(directory, change["name"]), "action": change["action"],
                       "before": change["before"], "after": change["after"], "mode": mode,
                       "before_mode": before_mode, "owner": None, "before_owner": before_owner, "secret": False})
    return result


class Validator:
    def __init__(self, module, backend, directory, desired):
        self.module = module
        self.backend = backend
        self.directory = directory
        self.desired = desired
        self.result = {"tool": None, "ran": False, "warnings": [], "output": ""}

    def unavailable(self, why):
        """The tool is missing: an error, except in check mode before the role has installed it."""
        if self.module.check_mode:
            self.result["warnings"].append("%s; not validated by the tool in check mode" % why)
            return []
        return ["%s; install it or set validate=false to rely on this module's own checks only" % why]

    def run(self, changes):
        """changes: file_transaction changes, every one inside the configuration directory."""
        if self.backend == "networkd":
            return self.networkd(changes)
        if self.backend == "netplan":
            return self.netplan(changes)
        return self.networkmanager(changes)

    def netplan(self, changes):
        self.result["tool"] = "netplan generate --root-dir"
        netplan = self.module.get_bin_path("netplan")
        if not netplan:
            return self.unavailable("netplan is not installed")
        with ft.staged_directory(self.directory, changes, self.directory.lstrip("/")) as root:
            rc, out, err = self.module.run_command([netplan, "generate", "--root-dir", root])
        self.result.update(ran=True, output=(out + err).strip())
        if rc != 0:
            return ["netplan generate rejected the configuration: %s" % (err or out).strip()]
        return []

    def networkd(self, changes):
        self.result["tool"] = "systemd-networkd (isolated namespace)"
        binary = next((path for path in NETWORKD_BINARIES if os.path.exists(path)), None)
        unshare = self.module.get_bin_path("unshare")
        if not binary or not unshare:
            return self.unavailable("systemd-networkd or unshare is not available")
        with ft.staged_directory(self.directory, changes, "network") as stage:
            rc, out, err = self.module.run_command([unshare, "--mount", "--net", "/bin/sh", "-c", _NETWORKD_SANDBOX,
                                                    "sandbox", os.path.join(stage, "network"), NETWORKD_DIR, binary])
            output = out + err
        self.result.update(ran=True, output=output.strip())
        if "Enumeration completed" not in output:
            return ["systemd-networkd could not be run in an isolated namespace to validate the files (it needs "
                    "root with CAP_SYS_ADMIN for unshare); its output: %s" % output.strip()[-600:]]
        # networkd always reads /etc/systemd/network: the staged copy is mounted there, whatever config_dir is.
        ours = brn.networkd_file_problems(output, self.desired, NETWORKD_DIR)
        existing = os.listdir(self.directory) if os.path.isdir(self.directory) else []
        others = [line for line in brn.networkd_file_problems(output, existing, NETWORKD_DIR) if line not in ours]
        self.result["warnings"].extend("systemd-networkd, file not managed by this module: %s" % line
                                       for line in others)
        return ["systemd-networkd would ignore a setting: %s" % line for line in ours]

    def networkmanager(self, changes):
        self.result["tool"] = "nmcli --offline connection modify"
        nmcli = self.module.get_bin_path("nmcli")
        if not nmcli:
            return self.unavailable("nmcli is not installed")
        problems = []
        outputs = []
        for change in changes:
            if change["after"] is None:
                continue
            name = os.path.basename(change["path"])
            profile_id = name[:-len(".nmconnection")]
            # Setting the id to its own value makes nmcli read, normalise and print the keyfile, offline.
            rc, out, err = self.module.run_command([nmcli, "--offline", "connection", "modify", "connection.id",
                                                    profile_id], data=change["after"], binary_data=True)
            outputs.append("%s: rc=%d %s" % (name, rc, err.strip()))
            if rc != 0 and "offline" in err.lower() and "unknown" in err.lower():
                return self.unavailable("nmcli is older than 1.42 and has no --offline mode")
            if rc != 0:
                problems.append("nmcli rejected %s: %s" % (name, (err or out).strip()))
                continue
            problems.extend("%s: %s" % (name, problem)
                            for problem in brm.keyfile_dropped_settings(change["after"], out))
        self.result.update(ran=True, output="\n".join(outputs))
        return problems


class Transaction:
    """One change's directory in the state directory: what the helper needs to activate, undo or confirm it."""

    def __init__(self, backend, directory, changes, files, path):
        self.backend = backend
        self.directory = directory
        self.changes = changes
        self.files = files
        self.path = path

    def write_state(self):
        self.put("backend", self.backend + "\n")
        self.put("config_dir", self.directory + "\n")
        manifest = bt.manifest_text(self.changes, self.directory)
        for line, change in zip(manifest.splitlines(), self.files):
            backup = line.split("\t")[2]
            if backup != "-":
                # The previous file as it was, with its mode and owner: what the helper puts back.
                ft.write_atomically(os.path.join(self.path, "files", backup),
                                    change["before"].encode("utf-8", errors="surrogateescape"),
                                    change["before_mode"], owner=change["before_owner"])
        if self.backend == "networkd":
            apply, revert = bp.networkd_netdevs_to_delete(self.changes)
            self.put("apply.delete", "".join(name + "\n" for name in apply))
            self.put("revert.delete", "".join(name + "\n" for name in revert))
        if self.backend == "networkmanager":
            apply, revert = bp.networkmanager_profiles_to_activate(self.changes)
            self.put("apply.up", "".join(name + "\n" for name in apply))
            self.put("revert.up", "".join(name + "\n" for name in revert))
        # The manifest last: the helper treats a transaction without one as empty.
        self.put(bt.MANIFEST, manifest)

    def put(self, name, text):
        ft.write_atomically(os.path.join(self.path, name), text.encode("utf-8", errors="surrogateescape"), 0o600)

    def install(self):
        """The new files as one file_transaction: on a failure the files already written are put back."""
        ft.apply(self.files, make_directories=[(self.directory, 0o755)])


def arm_rollback(module, hosts, transaction, record):
    """Write the pending marker and the persistent units, then start the timer. Returns an error or None."""
    run = module.run_command
    hosts.write_pending(record)
    try:
        bt.install_units(module.params["helper"], transaction.path, module.params["rollback_timeout"], record["id"])
    except (IOError, OSError) as error:
        return "could not write the rollback units in %s: %s" % (bt.UNIT_DIR, to_text(error))
    for unit in (bt.ROLLBACK_UNIT + ".timer", bt.ROLLBACK_UNIT + ".service", bt.APPLY_UNIT + ".service"):
        su.reset_failed(run, unit)
    try:
        su.daemon_reload(run)
        su.start(run, bt.ROLLBACK_UNIT + ".timer")
    except su.UnitError as error:
        return "could not arm the rollback timer: %s" % to_text(error)
    return None


def disarm_after_failure(module, hosts, transaction):
    bt.remove_units(module.run_command)
    hosts.clear_pending(transaction.path)


def start_activation(module, transaction):
    try:
        su.run_transient(module.run_command, bt.APPLY_UNIT, [module.params["helper"], "apply", transaction.path],
                         "gpufabric.core.bonding: activate the new network configuration")
    except su.UnitError as error:
        return "could not start the activation: %s" % to_text(error)
    return None


def refuse_if_busy(module, hosts, result):
    """Under the lock: fail naming the armed transaction; clear the marker of one that finished."""
    try:
        finished = hosts.check_not_armed()
    except bt.TransactionBusy as error:
        module.fail_json(msg=to_text(error), pending=hosts.pending(), **result)
    if finished and not module.check_mode:
        bt.remove_units(module.run_command)
        hosts.clear_pending(finished["directory"])
    if module.get_bin_path("systemctl"):
        # A transient timer armed by an older version of this module keeps no pending marker.
        timer = bt.ROLLBACK_UNIT + ".timer"
        if su.is_active(module.run_command, timer):
            module.fail_json(msg="A previous bonding change on this host is still waiting for confirmation and "
                                 "will be reverted by %s (next elapse: %s). Wait until it has fired (systemctl "
                                 "list-timers %s), then run again."
                                 % (timer, su.unit_property(module.run_command, timer, "NextElapseUSecRealtime"),
                                    timer), **result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            backend=dict(type="str", required=True, choices=list(bv.BACKENDS)),
            bonds=dict(type="list", elements="dict", default=[]),
            vlans=dict(type="list", elements="dict", default=[]),
            ethernets=dict(type="list", elements="dict", default=[]),
            bond_defaults=dict(type="dict", default={}),
            variable_prefix=dict(type="str", default="bonding"),
            config_dir=dict(type="path"),
            file_prefix=dict(type="str"),
            netplan_renderer=dict(type="str", default=""),
            validate=dict(type="bool", default=True),
            activate=dict(type="bool", default=True),
            rollback_timeout=dict(type="int", default=180),
            state_dir=dict(type="path", default="/var/lib/gpufabric/bonding"),
            helper=dict(type="path", default="/usr/local/libexec/gpufabric-bonding-activate"),
            helper_package=dict(type="dict"),
            helper_lib_dir=dict(type="path", default=bpr.LIB_DIR),
            service=dict(type="str", default=""),
            run_label=dict(type="str", default=""),
            lock_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    backend = params["backend"]
    defaults = BACKEND_DEFAULTS[backend]
    directory = params["config_dir"] or defaults["config_dir"]
    prefix = params["file_prefix"] or defaults["file_prefix"]
    result = dict(changed=False, files=[], changes=[], checksums_before={}, config={}, transaction="",
                  rollback_armed=False, rollback_deadline=0, activation_started=False, topology_changed=False,
                  helper_action="",
                  service_actions=[],
                  validation={"tool": None, "ran": False, "warnings": [], "output": ""})

    if backend == "netplan" and not brp.HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML (python3-yaml, a dependency of netplan.io)",
                                                  reason="to write the netplan YAML"),
                         exception=str(brp.YAML_IMPORT_ERROR), **result)
    # These reach the rollback units (ExecStart, RequiresMountsFor), run as root: a space, a quote or a line break
    # would add arguments or lines there.
    paths = [problem for name in ("state_dir", "helper", "helper_lib_dir")
             for problem in path_problems(name, params[name])]
    if paths:
        module.fail_json(msg="Nothing was changed: %s" % "; ".join(paths), **result)
    if params["rollback_timeout"] < 30:
        module.fail_json(msg="rollback_timeout is %d s; it must be at least 30 s so that the controller can "
                             "reconnect and confirm before the host reverts" % params["rollback_timeout"], **result)
    try:
        config = bv.normalize(params["bonds"], params["vlans"], params["ethernets"], params["bond_defaults"],
                              prefix=params["variable_prefix"])
        if ba.HAS_NETADDR:
            # The controller ran these already (bond_validate); again here where the host has netaddr.
            problems = ba.addressing_problems(config, prefix=params["variable_prefix"])
            if problems:
                raise bv.BondingConfigError(problems)
        if backend == "networkd":
            desired = brn.render_networkd(config, file_prefix=prefix)
        elif backend == "netplan":
            desired = brp.render_netplan(config, file_name=prefix + ".yaml", renderer=params["netplan_renderer"])
        else:
            desired = brm.render_networkmanager(config, profile_prefix=prefix)
    except bv.BondingConfigError as error:
        module.fail_json(msg=str(error), problems=error.problems, **result)
    result["config"] = config
    result["files"] = [os.path.join(directory, name) for name in sorted(desired)]

    # One transaction per host: everything from reading the current files to starting the activation runs under
    # the host-wide lock, and a transaction still armed (not confirmed, not rolled back) refuses this one.
    hosts = bt.HostTransactions(params["state_dir"])
    if not module.check_mode:
        # Check mode writes nothing, not even the lock file: it only reads the marker.
        try:
            hosts.acquire(timeout=params["lock_timeout"])
        except bt.TransactionBusy as error:
            module.fail_json(msg="%s; this run is refused and changed nothing" % to_text(error), **result)
    if os.path.isdir(params["state_dir"]):
        refuse_if_busy(module, hosts, result)

    try:
        current = read_owned(backend, directory, prefix)
    except (ValueError, OSError) as error:
        module.fail_json(msg="Cannot read %s: %s" % (directory, to_text(error)), **result)
    changes = bp.plan_changes(dict((name, entry[0]) for name, entry in current.items()), desired)
    files = file_changes(changes, directory, defaults["mode"], current)
    config_changes = [{"action": c["action"], "path": c["path"]} for c in files]
    helper = []
    if params["helper_package"] is not None:
        problems = bpr.package_problems(params["helper_package"])
        if problems:
            module.fail_json(msg="; ".join(problems), **result)
        try:
            helper = bpr.plan_helper(params["helper"], params["helper_lib_dir"], params["helper_package"])
        except (ValueError, OSError) as error:
            module.fail_json(msg="Cannot install the helper: %s" % to_text(error), **result)
    result["changes"] = ft.summary(helper) + config_changes
    result["checksums_before"] = {c["path"]: bp.sha1(c["before"]) for c in files}
    result["helper_action"] = helper[0]["action"] if helper else ""
    if module._diff:
        result["diff"] = ft.diff_entries(helper) + bp.diff_entries(changes, directory)
    result["changed"] = bool(result["changes"])

    if changes and params["validate"]:
        validator = Validator(module, backend, directory, list(desired))
        problems = validator.run(files)
        result["validation"] = validator.result
        for warning in validator.result["warnings"]:
            module.warn(warning)
        if problems:
            result["changed"] = False
            module.fail_json(msg="The rendered %s configuration did not pass validation; nothing was changed:\n- %s"
                                 % (backend, "\n- ".join(problems)), problems=problems, **result)
    # The helper and the backend's service before anything uses them: the rollback units run the helper, and the
    # service runs before the configuration is activated.
    if helper and not module.check_mode:
        try:
            bpr.install_helper(helper, params["helper"], params["helper_lib_dir"])
        except (IOError, OSError) as error:
            result["changed"] = False
            module.fail_json(msg="Writing the helper %s failed (%s); nothing was changed"
                                 % (params["helper"], to_text(error)), **result)
    try:
        result["service_actions"] = bpr.service_actions(module.run_command, params["service"], params["activate"],
                                                        check_mode=module.check_mode)
    except su.UnitError as error:
        result["changed"] = bool(helper)
        module.fail_json(msg="%s; no configuration file was changed" % to_text(error), **result)
    result["changed"] = result["changed"] or bool(result["service_actions"])
    if module.check_mode or not changes:
        module.exit_json(**result)

    started = time.time()
    tx_id = bt.transaction_id(started, os.urandom(4).hex())
    transaction = Transaction(backend, directory, changes, files, hosts.new_transaction(tx_id))
    transaction.write_state()
    result["transaction"] = transaction.path
    if params["activate"]:
        record = {
            "id": tx_id, "directory": transaction.path, "started": bt.iso(started),
            "deadline": bt.iso(started + params["rollback_timeout"]), "run": params["run_label"],
            # The controller's address as sshd saw it, when the module runs over SSH.
            "client": (os.environ.get("SSH_CONNECTION") or os.environ.get("SSH_CLIENT") or "").split(" ")[0],
            "changes": ", ".join("%s %s" % (c["action"], c["path"]) for c in config_changes),
        }
        error = arm_rollback(module, hosts, transaction, record)
        if error:
            disarm_after_failure(module, hosts, transaction)
            result["changed"] = False
            module.fail_json(msg=error + "; no configuration file was changed", **result)
        result["rollback_armed"] = True
        result["rollback_deadline"] = int(started) + params["rollback_timeout"]
    try:
        transaction.install()
    except (IOError, OSError) as error:
        if result["rollback_armed"]:
            disarm_after_failure(module, hosts, transaction)
        module.fail_json(msg="Writing %s failed (%s); the files already written were restored and nothing was "
                             "activated" % (directory, to_text(error)), **result)
    if params["activate"]:
        error = start_activation(module, transaction)
        if error:
            # Nothing was activated: put the files back now instead of waiting for the timer. The helper takes
            # the host lock itself.
            hosts.release()
            rc, out, err = module.run_command([params["helper"], "rollback", transaction.path])
            module.fail_json(msg="%s; the previous files were restored (helper exit status %d) and nothing was "
                                 "activated" % (error, rc), **result)
        result["activation_started"] = result["topology_changed"] = True
        result["ansible_facts"] = {"gpufabric_topology_stale": True}
    hosts.release()
    module.exit_json(**result)


if __name__ == "__main__":
    main()
