# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The control loop: read sensors, map zones through their curves, write fan duties, watch the coolant.

Fail-safe rules, in order of precedence:
  * a sensor that cannot be read, or whose last good reading is older than stale_after, puts every
    fan group fed by its zone at 100 % and logs which sensor and why;
  * a duty that cannot be written puts the group in fail-safe: 100 % is tried, then the BMC's own
    control (hand-back); the error from the BMC is logged, the service keeps running and retries;
  * stopping (SIGTERM, or ExecStopPost after a crash) first drives every fan in the fail-safe record to
    100 % (failsafe.py, which needs neither this module nor a valid configuration), then applies on_stop
    with the full configuration as far as it can be used: 100 % ("full") or hand-back to the BMC ("bmc").
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import time

from ansible_collections.gpufabric.core.plugins.module_utils.hostio import systemd_units
from .backends import BackendError, Ipmitool, IpmiRawFan, Redfish, RedfishFan, Sensors, build_fan
from ansible_collections.gpufabric.core.plugins.module_utils.cooling.curve import FULL_DUTY, GroupOutput, ZoneController
from ansible_collections.gpufabric.core.plugins.module_utils.cooling.sensors import (
    parse_redfish_coolant_connector,
    parse_redfish_cooling_unit,
    parse_redfish_leak_detection,
    parse_redfish_leak_detector,
    parse_redfish_pump,
)
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.file_transaction import make_directory, write_atomically
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError
from ansible_collections.gpufabric.core.plugins.module_utils.hostio.prometheus_text import Exposition, MetricError, write_textfile

LOG = logging.getLogger("gpufabric-cooling")
# Seconds between attempts to write to a fan backend that refused or did not answer (the group stays in fail-safe).
WRITE_RETRY_S = 30.0
_BACKEND_ORDER = {"hwmon": 0, "redfish": 1, "ipmi_raw": 2}


def _atomic_write(path, text, mode=0o644):
    make_directory(os.path.dirname(path) or ".", 0o755)
    write_atomically(path, text.encode("utf-8"), mode)


def group_order(groups):
    """Local fans first: a BMC that times out must not delay the fans the host drives itself."""
    def key(name):
        group = groups[name]
        return (_BACKEND_ORDER.get(group.get("backend") if isinstance(group, dict) else None, 9), str(name))
    return sorted(groups, key=key)


def stop_fans(config, why, fan_for, already_full=()):
    """Full duty (on_stop full) or hand-back (on_stop bmc) for each fan group, each failure its own group's.

    already_full: groups the fail-safe record has set to 100 % already (skipped for on_stop full).
    Returns one sentence per group that could not be made safe here.
    """
    groups = config.get("fan_groups") if isinstance(config, dict) else None
    if not isinstance(groups, dict):
        return ["%s: the configuration names no fan groups" % why]
    on_stop = config.get("on_stop", "full")
    failures = []
    for name in group_order(groups):
        if name in already_full and on_stop != "bmc":
            continue
        try:
            fan = fan_for(name)
            if on_stop == "bmc":
                try:
                    fan.handback()
                    LOG.warning("%s: fan group %s handed back to the BMC", why, name)
                    continue
                except Exception as exc:  # pylint: disable=broad-except
                    LOG.error("%s: fan group %s hand-back failed (%s); writing 100 %% instead", why, name, exc)
            fan.write(FULL_DUTY)
            LOG.warning("%s: fan group %s set to 100 %%", why, name)
        except Exception as exc:  # pylint: disable=broad-except
            # Any fault (a BMC's garbage, a bad number, a missing file) is this group's only: go on to the next.
            if name in already_full:
                LOG.error("%s: fan group %s: %s (it is at 100 %% from the fail-safe record)", why, name, exc)
                continue
            failures.append("%s: fan group %s could not be made safe: %s: %s" % (why, name, type(exc).__name__, exc))
            LOG.error("%s", failures[-1])
    return failures


class _NoSharedClients:  # pylint: disable=too-few-public-methods
    ipmi = None
    redfish = None


def stop_from_config(config, why, already_full=()):
    """Best-effort stop with the full configuration, validated or not (the fail-safe record ran first)."""
    try:
        controller = Controller(config)
    except Exception as exc:  # pylint: disable=broad-except
        LOG.error("%s: the configuration cannot build a controller (%s: %s); trying each fan group alone", why, type(exc).__name__, exc)
        state_dir = config.get("state_dir", "/var/lib/gpufabric-cooling") if isinstance(config, dict) else "/var/lib/gpufabric-cooling"
        saved = _read_json(os.path.join(str(state_dir), "saved-fan-modes.json"))
        clients = _NoSharedClients()
        return stop_fans(config, why, lambda name: build_fan(config["fan_groups"][name], config, clients, saved), already_full)
    return controller.stop_action(why, already_full)


def _read_json(path):
    try:
        with open(path, encoding="utf-8") as handle:
            value = json.load(handle)
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}


def failsafe_record(config):
    """The fail-safe record of a validated configuration (failsafe.py drives it): full duty, one group a line."""
    lines = ["# gpufabric-cooling fail-safe record: written when the controller starts, read first by stop-action"]
    groups = config["fan_groups"]
    for name in group_order(groups):
        group = groups[name]
        if group["backend"] == "hwmon":
            entry = {"backend": "hwmon", "root": config.get("hwmon_root", "/sys/class/hwmon"), "target": group["target"]}
        elif group["backend"] == "ipmi_raw":
            ipmi = Ipmitool(config["bmc"]["ipmi"])
            fan = IpmiRawFan(ipmi, config["ipmi_profile"], group["target"])
            raw = ipmi.base_command() + ["raw"]
            entry = {"backend": "command", "timeout": ipmi.timeout * (ipmi.retries + 1) + 5,
                     "commands": [raw + fan.command(config["ipmi_profile"]["manual"]),
                                  raw + fan.command(config["ipmi_profile"]["set_duty"], FULL_DUTY)]}
        else:
            settings = config["bmc"]["redfish"]
            redfish = Redfish(settings)
            entry = {"backend": "redfish_patch", "url": redfish.url(group["target"]),
                     "body": RedfishFan(redfish, group["target"], group.get("body"), None).body_for(FULL_DUTY),
                     "timeout": redfish.timeout, "allow_insecure_http": settings.get("allow_insecure_http", False) is True}
            for key in ("user", "password_file", "verify_tls", "ca_file"):
                if key in settings:
                    entry[key] = settings[key]
        entry["group"] = name
        lines.append(json.dumps(entry, sort_keys=True))
    return "\n".join(lines) + "\n"


def write_failsafe_record(path, config):
    _atomic_write(path, failsafe_record(config), 0o600)


def action_commands(config):
    """[(name, argv)] of every command a liquid-cooling alarm can run with this configuration."""
    liquid = config.get("liquid") or {}
    if not liquid:
        return []
    actions = {liquid.get("leak_action", "alert")}
    actions.update(limits.get("action", "alert") for limits in (liquid.get("cdus") or {}).values())
    commands = []
    if liquid.get("alert_command"):
        commands.append(("alert_command", list(liquid["alert_command"])))
    if "power_limit" in actions:
        commands.append(("power_limit", ["nvidia-smi", "--power-limit=%d" % int(liquid.get("power_limit_watts") or 0)]))
    if "shutdown" in actions:
        commands.append(("shutdown_command", list(liquid.get("shutdown_command") or ["systemctl", "poweroff"])))
    return commands


def action_command_problems(config, which=shutil.which):
    """One sentence per action command whose program does not resolve to an executable on this host."""
    problems = []
    for name, argv in action_commands(config):
        found = which(argv[0])
        if not found:
            problems.append("liquid.%s: %s is not an executable on this host (PATH %s)" % (name, argv[0], os.environ.get("PATH", "")))
    return problems


class Controller:
    def __init__(self, config, clock=time.monotonic):
        self.config = config
        self.clock = clock
        self.interval = float(config["interval"])
        self.stale_after = float(config["stale_after"])
        self.sensors = Sensors(config)
        self.zones = {
            name: ZoneController(zone["curve"], zone.get("min_duty", 0), zone.get("hysteresis", 0))
            for name, zone in config["zones"].items()
        }
        self.outputs = {
            name: GroupOutput(group.get("max_step_up", 100), group.get("max_step_down", 100), group.get("min_duty", 0))
            for name, group in config["fan_groups"].items()
        }
        self.state_dir = config.get("state_dir", "/var/lib/gpufabric-cooling")
        self.saved_modes = self._load_saved_modes()
        self.fans = {}
        self.last_good = {}
        self.last_reasons = {}
        self.liquid_alarms = {}
        self.write_errors = {}
        self.write_retry_at = {}
        self.snapshot = {}

    # -- persistence of the firmware's own fan modes, so a later stop can hand them back -----------
    def _modes_path(self):
        return os.path.join(self.state_dir, "saved-fan-modes.json")

    def _load_saved_modes(self):
        try:
            with open(self._modes_path(), encoding="utf-8") as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return {}

    def _store_saved_modes(self):
        try:
            _atomic_write(self._modes_path(), json.dumps(self.saved_modes, sort_keys=True), 0o600)
        except OSError as exc:
            LOG.warning("cannot save the fans' firmware modes to %s: %s", self._modes_path(), exc)

    def fan(self, name):
        if name not in self.fans:
            self.fans[name] = build_fan(self.config["fan_groups"][name], self.config, self.sensors, self.saved_modes)
        return self.fans[name]

    # -- one control cycle --------------------------------------------------------------------------
    def read_zones(self):
        """Return {zone: (temperature or None, [readings], reason or None)}."""
        wanted = sorted({(s["backend"], s["selector"]) for zone in self.config["zones"].values() for s in zone["sensors"]})
        started = self.clock()
        results = self.sensors.read(wanted)
        now = self.clock()
        for key, value in results.items():
            if not isinstance(value, BackendError):
                # Stamp with the start of the read: a BMC that took long to answer gave old data.
                self.last_good[key] = (value, started)
        zones = {}
        for name, zone in self.config["zones"].items():
            values, readings, reason = [], [], None
            for sensor in zone["sensors"]:
                key = (sensor["backend"], sensor["selector"])
                result = results[key]
                if isinstance(result, BackendError):
                    reason = reason or "sensor %s:%s unreadable: %s" % (key[0], key[1], result)
                    readings.append({"backend": key[0], "sensor": key[1], "value": None, "ok": False})
                    continue
                age = now - self.last_good[key][1]
                if age > self.stale_after:
                    reason = reason or "sensor %s:%s data is %.1f s old (stale_after %.1f s)" % (key[0], key[1], age, self.stale_after)
                values.append(result)
                readings.append({"backend": key[0], "sensor": key[1], "value": result, "ok": age <= self.stale_after})
            temperature = None
            if values:
                temperature = max(values) if zone.get("aggregate", "max") == "max" else sum(values) / len(values)
            zones[name] = (temperature, readings, reason)
        return zones

    def cycle(self):
        zones = self.read_zones()
        zone_duties = {}
        for name, (temperature, unused_readings, reason) in zones.items():
            critical = self.config["zones"][name].get("critical_temp")
            if reason or temperature is None or (critical is not None and temperature >= critical):
                zone_duties[name] = FULL_DUTY
            else:
                zone_duties[name] = self.zones[name].duty(temperature)
        groups = {}
        failed = []
        # Local fans first: a BMC that times out must not delay the fail-safe of the fans the host drives itself.
        order = group_order(self.config["fan_groups"])
        now = self.clock()
        for name in order:
            group = self.config["fan_groups"][name]
            reasons = [zones[zone][2] for zone in group["zones"] if zones[zone][2]]
            target = max(zone_duties[zone] for zone in group["zones"])
            failsafe = bool(reasons)
            duty = self.outputs[name].step(target, failsafe)
            written = False
            if now < self.write_retry_at.get(name, 0):
                # A backend that refused recently is retried every WRITE_RETRY_S, not hammered every cycle.
                reasons.append(self.write_errors[name] + " (retrying in %.0f s)" % (self.write_retry_at[name] - now))
                failsafe = True
            else:
                try:
                    self.fan(name).write(duty)
                    written = True
                    self.write_errors.pop(name, None)
                except BackendError as exc:
                    self.write_errors[name] = "writing the duty of fan group %s failed: %s" % (name, exc)
                    self.write_retry_at[name] = now + WRITE_RETRY_S
                    reasons.append(self.write_errors[name])
                    failsafe = True
                    failed.append(name)
            changed = self._log_transition(name, reasons)
            groups[name] = {"duty": FULL_DUTY if failsafe else duty, "target": target, "failsafe": failsafe,
                            "written": written, "reasons": reasons, "log_level": logging.ERROR if changed else logging.DEBUG}
        # Fallbacks (full duty, then hand-back) only after every group had its normal write.
        for name in failed:
            self._fail_safe_write(name, groups[name]["log_level"])
        for group in groups.values():
            group.pop("log_level")
        self._store_saved_modes()
        liquid = self.check_liquid() if self.config.get("liquid") else {}
        self.snapshot = {"time": time.time(), "zones": {n: {"temperature": z[0], "readings": z[1], "reason": z[2],
                                                            "duty": zone_duties[n]} for n, z in zones.items()},
                         "groups": groups, "liquid": liquid}
        self.write_metrics()
        self.write_state()
        return self.snapshot

    def _fail_safe_write(self, name, level):
        """After a failed write: try full duty, then the BMC's own control. Log what each answered."""
        try:
            fan = self.fan(name)
        except BackendError as exc:
            LOG.log(level, "fan group %s: cannot reach its fan backend for fail-safe: %s", name, exc)
            return
        try:
            fan.write(FULL_DUTY)
            LOG.log(level, "fan group %s: fail-safe 100 %% written", name)
            return
        except BackendError as exc:
            LOG.log(level, "fan group %s: fail-safe 100 %% refused: %s", name, exc)
        try:
            fan.handback()
            LOG.log(level, "fan group %s: control handed back to the BMC", name)
        except BackendError as exc:
            LOG.log(level, "fan group %s: hand-back to the BMC refused too: %s; the BMC's own policy stays in charge", name, exc)

    def _log_transition(self, name, reasons):
        previous = self.last_reasons.get(name)
        changed = reasons != previous
        if reasons and changed:
            LOG.error("fan group %s: FAIL-SAFE 100 %%: %s", name, "; ".join(reasons))
        elif not reasons and previous:
            LOG.warning("fan group %s: sensors readable again, leaving fail-safe", name)
        self.last_reasons[name] = reasons
        return changed

    # -- stop path ---------------------------------------------------------------------------------
    def stop_action(self, why, already_full=()):
        """Apply on_stop to every fan group; returns what failed. See stop_fans."""
        try:
            return stop_fans(self.config, why, self.fan, already_full)
        finally:
            if self.sensors.redfish is not None:
                problem = self.sensors.redfish.logout()
                if problem:
                    LOG.warning("%s: closing the Redfish session: %s", why, problem)

    # -- liquid cooling ----------------------------------------------------------------------------
    def _liquid_events(self, redfish, cdu, limits):
        """Return (readings, [(kind, sentence)]) for one CDU."""
        base = "/redfish/v1/ThermalEquipment/CDUs/%s" % cdu
        unit = parse_redfish_cooling_unit(redfish.get(base))
        events, readings = [], {"health": unit["health"], "connectors": [], "pumps": [], "leaks": []}
        if unit["health"] in ("Warning", "Critical"):
            events.append(("coolant", "CDU %s health %s" % (cdu, unit["health"])))
        connector_uris = []
        for collection in (unit["primary_connectors"], unit["secondary_connectors"]):
            if collection:
                connector_uris.extend(redfish.members(collection))
        for uri in connector_uris:
            connector = parse_redfish_coolant_connector(redfish.get(uri))
            readings["connectors"].append(connector)
            checks = (("supply_temp", "supply_temp_max", "supply temperature %.1f C above %.1f C", 1),
                      ("return_temp", "return_temp_max", "return temperature %.1f C above %.1f C", 1),
                      ("delta_temp", "delta_temp_max", "delta temperature %.1f C above %.1f C", 1),
                      ("flow_lpm", "flow_min_lpm", "flow %.1f L/min below %.1f L/min", -1))
            for key, limit_key, sentence, sign in checks:
                if limit_key in limits and connector[key] is not None and sign * (connector[key] - float(limits[limit_key])) > 0:
                    events.append(("coolant", "CDU %s %s: %s" % (cdu, connector["name"], sentence % (connector[key], float(limits[limit_key])))))
        if unit["pumps"]:
            for uri in redfish.members(unit["pumps"]):
                pump = parse_redfish_pump(redfish.get(uri))
                readings["pumps"].append(pump)
                if limits.get("pumps_required", True) and (pump["state"] not in (None, "Enabled") or pump["health"] in ("Warning", "Critical")):
                    events.append(("coolant", "CDU %s pump %s is %s/%s" % (cdu, pump["name"], pump["state"], pump["health"])))
        if unit["leak_detection"]:
            events.extend(self._leak_events(redfish, unit["leak_detection"], "CDU %s" % cdu, readings["leaks"]))
        return readings, events

    def _leak_events(self, redfish, uri, where, sink):
        detection = parse_redfish_leak_detection(redfish.get(uri))
        detectors = []
        if detection["detectors_uri"]:
            detectors = [parse_redfish_leak_detector(redfish.get(member)) for member in redfish.members(detection["detectors_uri"])]
        else:
            detectors = [{"name": d["name"], "detector_state": d["detector_state"]} for d in detection["detectors"]]
        events = []
        for detector in detectors:
            sink.append(detector)
            if detector["detector_state"] not in ("OK", None):
                events.append(("leak", "%s leak detector %s DetectorState=%s" % (where, detector["name"], detector["detector_state"])))
        return events

    def check_liquid(self):
        liquid = self.config["liquid"]
        redfish = self.sensors.redfish
        report = {}
        sources = [("cdu:%s" % cdu, limits) for cdu, limits in (liquid.get("cdus") or {}).items()]
        sources += [("leak:%s" % uri, {}) for uri in liquid.get("leak_detection_uris") or []]
        for source, limits in sources:
            try:
                if redfish is None:
                    raise BackendError("liquid cooling needs bmc.redfish")
                if source.startswith("cdu:"):
                    readings, events = self._liquid_events(redfish, source[4:], limits)
                else:
                    readings = {"leaks": []}
                    events = self._leak_events(redfish, source[5:], source[5:], readings["leaks"])
                readable = True
            except (BackendError, ParseError) as exc:
                readings, events, readable = {}, [("telemetry", "%s unreadable: %s" % (source, exc))], False
            action = limits.get("action", "alert")
            for kind, sentence in events:
                key = (source, kind, sentence.split(":")[0])
                if key not in self.liquid_alarms:
                    self.liquid_alarms[key] = sentence
                    self.run_action(liquid.get("leak_action", "alert") if kind == "leak" else action if kind == "coolant" else "alert", kind, sentence)
            active = {(k[0], k[1], k[2]) for k in ((source, kind, sentence.split(":")[0]) for kind, sentence in events)}
            for key in [k for k in self.liquid_alarms if k[0] == source and k not in active]:
                LOG.warning("liquid cooling: cleared: %s", self.liquid_alarms.pop(key))
            report[source] = {"readable": readable, "readings": readings, "events": [{"kind": k, "reading": s} for k, s in events]}
        return report

    def run_action(self, action, kind, sentence):
        """Run the configured action once per new alarm, logging the reading that triggered it."""
        LOG.critical("liquid cooling %s: %s; action %s", kind.upper(), sentence, action)
        environment = dict(os.environ, GPUFABRIC_COOLING_EVENT=kind, GPUFABRIC_COOLING_READING=sentence, GPUFABRIC_COOLING_ACTION=action)
        known = dict(action_commands(self.config))
        commands = [("alert", known["alert_command"])] if "alert_command" in known else []
        if action == "power_limit":
            commands.append(("power_limit", known["power_limit"]))
        elif action == "shutdown":
            commands.append(("shutdown", known["shutdown_command"]))
        for label, command in commands:
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=60, env=environment, check=False)
                if result.returncode != 0:
                    LOG.error("liquid cooling %s command %s failed (exit %d): %s", label, command[0], result.returncode,
                              (result.stderr or result.stdout).strip()[:300])
                else:
                    LOG.warning("liquid cooling %s command %s done", label, command[0])
            except (OSError, subprocess.TimeoutExpired) as exc:
                LOG.error("liquid cooling %s command %s could not run: %s", label, command[0], exc)

    # -- outputs -----------------------------------------------------------------------------------
    def write_metrics(self):
        path = self.config.get("metrics_file")
        if not path:
            return
        # A metric that cannot be written (e.g. a sensor listed twice) is logged, never a reason to fail safe.
        try:
            text = self.metrics_text()
            make_directory(os.path.dirname(path) or ".", 0o755)
            write_textfile(path, text)
        except (OSError, MetricError) as exc:
            LOG.warning("cannot write metrics to %s: %s", path, exc)

    def metrics_text(self):
        """The controller's metrics in the text exposition format."""
        exposition = Exposition()
        temperature = exposition.family("gpufabric_cooling_temperature_celsius", "Temperature read by the cooling controller.")
        sensor_ok = exposition.family("gpufabric_cooling_sensor_ok", "1 when the sensor was read and is fresh.")
        zone_duty = exposition.family("gpufabric_cooling_zone_duty_percent", "Duty the zone's curve asks for.")
        fan_duty = exposition.family("gpufabric_cooling_fan_duty_percent", "Duty written to the fan group.")
        failsafe = exposition.family("gpufabric_cooling_failsafe", "1 while the fan group is in fail-safe.")
        liquid_alarm = exposition.family("gpufabric_cooling_liquid_alarm", "Active liquid-cooling alarms by source and kind.")
        coolant = exposition.family("gpufabric_cooling_coolant_celsius", "Coolant temperature at a connector, supply or return side.")
        flow = exposition.family("gpufabric_cooling_coolant_flow_lpm", "Coolant flow at a connector, litres per minute.")
        last_cycle = exposition.family("gpufabric_cooling_last_cycle_timestamp_seconds", "When the last control cycle finished.")
        for zone, data in sorted(self.snapshot["zones"].items()):
            for reading in data["readings"]:
                labels = {"zone": zone, "backend": reading["backend"], "sensor": reading["sensor"]}
                if reading["value"] is not None:
                    temperature.add(labels, reading["value"])
                sensor_ok.add(labels, reading["ok"])
            zone_duty.add({"zone": zone}, data["duty"])
        for group, data in sorted(self.snapshot["groups"].items()):
            fan_duty.add({"group": group}, data["duty"])
            failsafe.add({"group": group}, data["failsafe"])
        for source, data in sorted(self.snapshot["liquid"].items()):
            for kind in ("leak", "coolant", "telemetry"):
                liquid_alarm.add({"source": source, "kind": kind}, sum(1 for event in data["events"] if event["kind"] == kind))
            for connector in data["readings"].get("connectors", []):
                for key, side in (("supply_temp", "supply"), ("return_temp", "return")):
                    if connector[key] is not None:
                        coolant.add({"source": source, "connector": connector["name"], "side": side}, connector[key])
                if connector["flow_lpm"] is not None:
                    flow.add({"source": source, "connector": connector["name"]}, connector["flow_lpm"])
        last_cycle.add({}, round(self.snapshot["time"], 3))
        return exposition.render()

    def write_state(self):
        path = os.path.join(self.state_dir, "state.json")
        try:
            _atomic_write(path, json.dumps(self.snapshot, indent=1, sort_keys=True, default=str))
        except OSError as exc:
            LOG.warning("cannot write %s: %s", path, exc)

    def run(self, should_stop):
        """Cycle until should_stop() is true; the caller applies the stop action."""
        notified = False
        while not should_stop():
            started = self.clock()
            try:
                snapshot = self.cycle()
                states = ", ".join("%s %.0f%%%s" % (g, d["duty"], " FAIL-SAFE" if d["failsafe"] else "") for g, d in sorted(snapshot["groups"].items()))
                systemd_units.sd_notify("WATCHDOG=1\nSTATUS=%s" % states, LOG)
            except Exception as exc:  # pylint: disable=broad-except
                # Anything unforeseen: make every group safe and keep going rather than leave fans at a low duty.
                LOG.exception("control cycle failed unexpectedly: %s", exc)
                self.stop_action("control cycle error")
            if not notified:
                # Ready once the first cycle has set every fan (or failed safe): systemd then watches WATCHDOG=1.
                systemd_units.sd_notify("READY=1", LOG)
                notified = True
            remaining = self.interval - (self.clock() - started)
            deadline = self.clock() + max(0.0, remaining)
            while not should_stop() and self.clock() < deadline:
                time.sleep(min(0.2, max(0.0, deadline - self.clock())))
