# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validate a whole cooling policy: zones, their sensors and curves, fan groups, BMCs and liquid cooling.

Used twice with the same code: on the Ansible controller by the cooling_policy_problems filter in the
role's preflight (prefix "cooling_", so messages name the inventory variables), and on the host by the
controller's `--check-config` (prefix "", naming the keys of the JSON config), which is the template's
`validate:` command. Stdlib only and relative imports only: the role installs this file unchanged.
"""

from __future__ import annotations

import re

from .cooling_curve import as_number, curve_problems

SENSOR_BACKENDS = ("ipmi", "redfish", "hwmon", "nvml", "nvidia_smi")
FAN_BACKENDS = ("hwmon", "ipmi_raw", "redfish")
AGGREGATES = ("max", "mean")
STOP_ACTIONS = ("full", "bmc")
LIQUID_ACTIONS = ("alert", "power_limit", "shutdown")
_ZONE_NAME = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_RAW_BYTE = re.compile(r"^0x[0-9a-fA-F]{1,2}$|^\{duty\}$|^\{zone\}$")


def _positive(value):
    number = as_number(value)
    return number is not None and number > 0


def _zone_problems(name, zone, path):
    where = "%s.%s" % (path, name)
    if not _ZONE_NAME.match(str(name)):
        return ["%s: zone names are lower-case identifiers (they become metric labels), got %r" % (path, name)]
    if not isinstance(zone, dict):
        return ["%s: a zone is a mapping with sensors and curve, got %r" % (where, zone)]
    problems = []
    min_duty = as_number(zone.get("min_duty", 0))
    if min_duty is None or not 0 <= min_duty <= 100:
        problems.append("%s.min_duty: must be a number 0-100, got %r" % (where, zone.get("min_duty")))
        min_duty = 0.0
    hysteresis = as_number(zone.get("hysteresis", 0))
    if hysteresis is None or not 0 <= hysteresis <= 20:
        problems.append("%s.hysteresis: must be 0-20 degrees C, got %r" % (where, zone.get("hysteresis")))
    if zone.get("aggregate", "max") not in AGGREGATES:
        problems.append("%s.aggregate: must be one of %s, got %r" % (where, ", ".join(AGGREGATES), zone.get("aggregate")))
    problems.extend(curve_problems(zone.get("curve"), where + ".curve", min_duty))
    sensors = zone.get("sensors")
    if not isinstance(sensors, list) or not sensors:
        problems.append("%s.sensors: a zone needs at least one sensor {backend, selector}" % where)
        return problems
    for index, sensor in enumerate(sensors):
        spot = "%s.sensors[%d]" % (where, index)
        if not isinstance(sensor, dict):
            problems.append("%s: a sensor is a mapping {backend, selector}, got %r" % (spot, sensor))
            continue
        if sensor.get("backend") not in SENSOR_BACKENDS:
            problems.append("%s.backend: must be one of %s, got %r" % (spot, ", ".join(SENSOR_BACKENDS), sensor.get("backend")))
        if not isinstance(sensor.get("selector"), str) or not sensor.get("selector").strip():
            problems.append("%s.selector: must name the sensor (IPMI SDR name, Redfish sensor name, hwmon file, GPU index)" % spot)
    return problems


def _group_problems(name, group, zones, bmc, profile, path, zones_path):
    where = "%s.%s" % (path, name)
    if not _ZONE_NAME.match(str(name)):
        return ["%s: fan group names are lower-case identifiers (they become metric labels), got %r" % (path, name)]
    if not isinstance(group, dict):
        return ["%s: a fan group is a mapping with backend, target and zones, got %r" % (where, group)]
    problems = []
    backend = group.get("backend")
    if backend not in FAN_BACKENDS:
        problems.append("%s.backend: must be one of %s, got %r" % (where, ", ".join(FAN_BACKENDS), backend))
    if not isinstance(group.get("target"), str) or not group.get("target"):
        problems.append("%s.target: must name what the duty is written to (hwmon pwm file, profile zone, Redfish URI)" % where)
    group_zones = group.get("zones")
    if not isinstance(group_zones, list) or not group_zones:
        problems.append("%s.zones: list the zones whose duty drives this group" % where)
    else:
        for zone in group_zones:
            if zone not in zones:
                problems.append(
                    "%s.zones: zone %r is not defined in %s (defined: %s)"
                    % (where, zone, zones_path, ", ".join(sorted(zones)) or "none")
                )
    for key in ("max_step_up", "max_step_down"):
        if key in group and not _positive(group[key]):
            problems.append("%s.%s: must be a positive percentage per cycle, got %r" % (where, key, group[key]))
    if backend == "ipmi_raw":
        if not isinstance(bmc.get("ipmi"), dict):
            problems.append("%s: backend ipmi_raw needs an IPMI BMC (bmc.ipmi)" % where)
        if not profile:
            problems.append("%s: backend ipmi_raw needs a vendor raw-command profile (ipmi_profile)" % where)
        elif group.get("target") not in profile.get("zones", {}):
            problems.append(
                "%s.target: %r is not a fan zone of the %s profile (zones: %s)"
                % (where, group.get("target"), profile.get("name"), ", ".join(sorted(profile.get("zones", {}))))
            )
    if backend == "redfish" and not isinstance(bmc.get("redfish"), dict):
        problems.append("%s: backend redfish needs a Redfish BMC (bmc.redfish)" % where)
    return problems


def profile_problems(profile, path):
    """A vendor raw-command profile: manual/set/handback byte lists and named fan zones."""
    if not profile:
        return []
    if not isinstance(profile, dict):
        return ["%s: must be a mapping, got %r" % (path, profile)]
    problems = []
    for key in ("manual", "set_duty", "handback"):
        command = profile.get(key)
        if not isinstance(command, list) or len(command) < 2 or not all(isinstance(b, str) and _RAW_BYTE.match(b) for b in command):
            problems.append("%s.%s: must be a list of at least two bytes like '0x30' ({duty} and {zone} allowed), got %r" % (path, key, command))
    if "{duty}" not in (profile.get("set_duty") or []):
        problems.append("%s.set_duty: must contain the placeholder {duty}" % path)
    zones = profile.get("zones")
    if not isinstance(zones, dict) or not zones or not all(isinstance(v, str) and _RAW_BYTE.match(v) for v in zones.values()):
        problems.append("%s.zones: must map fan zone names to a byte like '0x00', got %r" % (path, zones))
    if profile.get("duty_scale") not in (100, 255):
        problems.append("%s.duty_scale: must be 100 (duty in percent) or 255, got %r" % (path, profile.get("duty_scale")))
    return problems


def _bmc_problems(bmc, path):
    problems = []
    if not isinstance(bmc, dict):
        return ["%s: must be a mapping with optional ipmi and redfish endpoints, got %r" % (path, bmc)]
    ipmi = bmc.get("ipmi")
    if ipmi is not None:
        if not isinstance(ipmi, dict):
            problems.append("%s.ipmi: must be a mapping, got %r" % (path, ipmi))
        elif ipmi.get("interface", "lanplus") not in ("lanplus", "open"):
            problems.append("%s.ipmi.interface: must be lanplus (over the network) or open (local /dev/ipmi0)" % path)
        elif ipmi.get("interface", "lanplus") == "lanplus" and not ipmi.get("host"):
            problems.append("%s.ipmi.host: interface lanplus needs the BMC's address" % path)
    redfish = bmc.get("redfish")
    if redfish is not None:
        if not isinstance(redfish, dict) or not re.match(r"^https?://", str(redfish.get("base_url", ""))):
            problems.append("%s.redfish.base_url: must be the BMC's http(s):// URL, got %r" % (path, (redfish or {}).get("base_url")))
    return problems


def _liquid_problems(liquid, path):
    if not liquid:
        return []
    if not isinstance(liquid, dict):
        return ["%s: must be a mapping, got %r" % (path, liquid)]
    problems = []
    if liquid.get("leak_action", "alert") not in LIQUID_ACTIONS:
        problems.append("%s.leak_action: must be one of %s, got %r" % (path, ", ".join(LIQUID_ACTIONS), liquid.get("leak_action")))
    needs_limit = liquid.get("leak_action") == "power_limit"
    cdus = liquid.get("cdus", {})
    if not isinstance(cdus, dict):
        return problems + ["%s.cdus: must map CDU ids to thresholds, got %r" % (path, cdus)]
    for cdu, limits in cdus.items():
        where = "%s.cdus.%s" % (path, cdu)
        if not isinstance(limits, dict):
            problems.append("%s: must be a mapping of thresholds, got %r" % (where, limits))
            continue
        for key in ("supply_temp_max", "return_temp_max", "delta_temp_max", "flow_min_lpm"):
            if key in limits and as_number(limits[key]) is None:
                problems.append("%s.%s: must be a number, got %r" % (where, key, limits[key]))
        if limits.get("action", "alert") not in LIQUID_ACTIONS:
            problems.append("%s.action: must be one of %s, got %r" % (where, ", ".join(LIQUID_ACTIONS), limits.get("action")))
        needs_limit = needs_limit or limits.get("action") == "power_limit"
    if needs_limit and not _positive(liquid.get("power_limit_watts")):
        problems.append("%s.power_limit_watts: action power_limit needs the per-GPU limit in watts" % path)
    return problems


def policy_problems(policy, prefix=""):
    """Return every problem in a cooling policy, each naming the variable; empty when it is usable.

    policy keys: zones, fan_groups, bmc, ipmi_profile, interval, stale_after, on_stop, liquid.
    prefix is prepended to top-level names ("cooling_" in the role).
    """
    if not isinstance(policy, dict):
        return ["the cooling policy must be a mapping, got %s" % type(policy).__name__]

    def name(key):
        return prefix + key

    problems = []
    zones = policy.get("zones")
    if not isinstance(zones, dict) or not zones:
        problems.append("%s: define at least one zone (cpu, gpu, inlet ...) with sensors and a curve" % name("zones"))
        zones = {}
    for zone_name, zone in zones.items():
        problems.extend(_zone_problems(zone_name, zone, name("zones")))
    bmc = policy.get("bmc") or {}
    problems.extend(_bmc_problems(bmc, name("bmc")))
    profile = policy.get("ipmi_profile") or {}
    problems.extend(profile_problems(profile, name("ipmi_profile")))
    groups = policy.get("fan_groups")
    if not isinstance(groups, dict) or not groups:
        problems.append("%s: define at least one fan group (backend, target, zones)" % name("fan_groups"))
        groups = {}
    for group_name, group in groups.items():
        problems.extend(_group_problems(group_name, group, zones, bmc, profile, name("fan_groups"), name("zones")))
    used = set()
    for group in groups.values():
        if isinstance(group, dict) and isinstance(group.get("zones"), list):
            used.update(group["zones"])
    for zone_name in zones:
        if zone_name not in used:
            problems.append("%s.%s: no fan group uses this zone, so its temperature would cool nothing" % (name("zones"), zone_name))
    for zone_name, zone in zones.items():
        for sensor in (zone or {}).get("sensors") or []:
            backend = sensor.get("backend") if isinstance(sensor, dict) else None
            if backend in ("ipmi", "redfish") and not isinstance(bmc.get(backend), dict):
                problems.append("%s.%s: sensor backend %s needs %s.%s" % (name("zones"), zone_name, backend, name("bmc"), backend))
    interval = as_number(policy.get("interval"))
    stale = as_number(policy.get("stale_after"))
    if interval is None or not 0.5 <= interval <= 60:
        problems.append("%s: must be 0.5-60 seconds, got %r" % (name("interval"), policy.get("interval")))
    if stale is None or interval is None or stale < 2 * interval:
        # One missed cycle must not trip the fail-safe, two must be allowed to.
        problems.append("%s: must be at least twice %s, got %r" % (name("stale_after"), name("interval"), policy.get("stale_after")))
    if policy.get("on_stop", "full") not in STOP_ACTIONS:
        problems.append("%s: must be one of %s, got %r" % (name("on_stop"), ", ".join(STOP_ACTIONS), policy.get("on_stop")))
    problems.extend(_liquid_problems(policy.get("liquid"), name("liquid")))
    return problems
