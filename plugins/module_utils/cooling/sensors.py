# -*- coding: utf-8 -*-
# Copyright: gpufabric.core contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for the thermal readings the cooling controller consumes.

ipmitool `sdr elist` / `sdr type` / `sdr list` tables and raw-command errors, Redfish Thermal
(deprecated), ThermalSubsystem/ThermalMetrics, Sensor, ThermalEquipment CDUs (coolant connectors,
pumps) and LeakDetection resources, nvidia-smi `--query-gpu ... --format=csv,noheader,nounits` and
hwmon millidegree files. Stdlib only, relative imports only: the role installs this file unchanged
into the controller package on each host.
"""

from __future__ import annotations

import json
import re

from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError, clean_lines

IPMI_COMMAND = "ipmitool sdr elist"
# "45 degrees C", "6000 RPM", "12.10 Volts", "-3.5 degrees C"
_IPMI_READING = re.compile(r"(?P<value>-?\d+(?:\.\d+)?)\s+(?P<unit>\S.*)")
_IPMI_RAW_ERROR = re.compile(r"rsp=(?P<code>0x[0-9a-fA-F]{2})\):\s*(?P<message>.+)\Z")
_NOT_AVAILABLE = ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[GPU is lost]", "")


class SensorError(LookupError):
    """A selector does not name exactly one readable sensor."""


def _ipmi_reading(text):
    match = _IPMI_READING.fullmatch(text.strip())
    if not match:
        return None, None
    return float(match.group("value")), match.group("unit").strip()


def parse_ipmitool_sdr(text):
    """Parse `ipmitool sdr elist|type|list` output into a list of readings.

    Each reading: name, sensor_id (int or None), status (ok, ns, cr, nc, nr, ucr ...), entity
    ("3.1" or None), value (float or None when the BMC gives no number), unit, text (the raw cell).
    Five-column (elist, type) and three-column (list) tables are accepted.
    """
    readings = []
    for number, line in enumerate(clean_lines(text, IPMI_COMMAND), start=1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) == 5:
            name, sensor_id, status, entity, reading = cells
            try:
                sensor_id = int(sensor_id.rstrip("hH"), 16)
            except ValueError:
                raise ParseError(IPMI_COMMAND, "line %d: sensor id %r is not a hex number like 0Fh" % (number, sensor_id)) from None
        elif len(cells) == 3:
            name, reading, status = cells
            sensor_id, entity = None, None
        else:
            raise ParseError(IPMI_COMMAND, "line %d has %d columns, expected 5 (elist) or 3 (list): %r" % (number, len(cells), line))
        if not name:
            raise ParseError(IPMI_COMMAND, "line %d has no sensor name: %r" % (number, line))
        value, unit = _ipmi_reading(reading)
        readings.append(
            {"name": name, "sensor_id": sensor_id, "status": status or None, "entity": entity or None,
             "value": value, "unit": unit, "text": reading}
        )
    return readings


def select_ipmi_reading(readings, selector):
    """The value of the sensor a selector names: "CPU Temp", or "Temp@3.2" where names repeat.

    Raises SensorError when the sensor is missing, ambiguous, or has no numeric reading.
    """
    name, entity = (selector.split("@", 1) + [""])[:2]
    matches = [r for r in readings if r["name"] == name.strip() and (not entity or r["entity"] == entity.strip())]
    if not matches:
        known = ", ".join(sorted({r["name"] for r in readings})) or "none"
        raise SensorError("IPMI sensor %r not found in the SDR (sensors: %s)" % (selector, known))
    if len(matches) > 1:
        entities = ", ".join("%s@%s" % (r["name"], r["entity"]) for r in matches)
        raise SensorError("IPMI sensor name %r is ambiguous; select one with name@entity: %s" % (selector, entities))
    reading = matches[0]
    if reading["value"] is None:
        raise SensorError("IPMI sensor %r has no reading (status %s: %r)" % (selector, reading["status"], reading["text"]))
    return reading["value"]


def parse_ipmitool_error(text):
    """Summarise ipmitool's stderr: the BMC's completion code when there is one, else the last line."""
    lines = [line for line in clean_lines(text or " ", "ipmitool") if line.strip()] if (text or "").strip() else []
    for line in lines:
        match = _IPMI_RAW_ERROR.search(line)
        if match:
            return {"completion_code": match.group("code").lower(), "message": match.group("message").strip(), "text": line.strip()}
    return {"completion_code": None, "message": lines[-1].strip() if lines else "no output", "text": "\n".join(lines)}


def _document(doc, command):
    if isinstance(doc, str):
        try:
            doc = json.loads(doc)
        except ValueError as exc:
            raise ParseError(command, "not JSON: %s" % exc) from None
    if not isinstance(doc, dict):
        raise ParseError(command, "expected a JSON object, got %s" % type(doc).__name__)
    return doc


def _status(item):
    status = item.get("Status") or {}
    return status.get("State"), status.get("Health")


def _excerpt(value):
    """Reading of a Redfish SensorExcerpt ({"Reading": 21.5}) or None."""
    if isinstance(value, dict):
        value = value.get("Reading")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def parse_redfish_thermal(doc):
    """Parse a Chassis Thermal resource (deprecated in Redfish 2020.4 but still what most BMCs serve)."""
    command = "Redfish Thermal"
    doc = _document(doc, command)
    if "Temperatures" not in doc and "Fans" not in doc:
        raise ParseError(command, "no Temperatures or Fans array; is this a Thermal resource? (@odata.type %r)" % doc.get("@odata.type"))
    temperatures = []
    for item in doc.get("Temperatures") or []:
        state, health = _status(item)
        temperatures.append(
            {"name": item.get("Name") or item.get("MemberId"), "value": _excerpt(item.get("ReadingCelsius")),
             "state": state, "health": health, "context": item.get("PhysicalContext")}
        )
    fans = []
    for item in doc.get("Fans") or []:
        state, health = _status(item)
        fans.append(
            {"name": item.get("Name") or item.get("FanName") or item.get("MemberId"), "value": _excerpt(item.get("Reading")),
             "unit": item.get("ReadingUnits"), "state": state, "health": health}
        )
    return {"temperatures": temperatures, "fans": fans}


def parse_redfish_thermal_metrics(doc):
    """Parse ThermalSubsystem/ThermalMetrics: TemperatureReadingsCelsius and TemperatureSummaryCelsius.

    Summary values are named "Summary/Intake", "Summary/Internal" ... so a zone can follow the
    chassis' own intake reading without naming a sensor.
    """
    command = "Redfish ThermalMetrics"
    doc = _document(doc, command)
    if "TemperatureReadingsCelsius" not in doc and "TemperatureSummaryCelsius" not in doc:
        raise ParseError(command, "no TemperatureReadingsCelsius or TemperatureSummaryCelsius (@odata.type %r)" % doc.get("@odata.type"))
    temperatures = []
    for item in doc.get("TemperatureReadingsCelsius") or []:
        uri = item.get("DataSourceUri") or ""
        name = item.get("DeviceName") or uri.rstrip("/").rsplit("/", 1)[-1] or None
        temperatures.append({"name": name, "value": _excerpt(item), "uri": uri or None, "context": item.get("PhysicalContext")})
    for key, value in sorted((doc.get("TemperatureSummaryCelsius") or {}).items()):
        temperatures.append({"name": "Summary/%s" % key, "value": _excerpt(value), "uri": None, "context": key})
    return {"temperatures": temperatures}


def select_redfish_temperature(temperatures, selector):
    """Value of the temperature named selector (Name, DeviceName, or "Summary/Intake")."""
    matches = [t for t in temperatures if t["name"] == selector]
    if not matches:
        known = ", ".join(sorted(str(t["name"]) for t in temperatures)) or "none"
        raise SensorError("Redfish temperature %r not found (temperatures: %s)" % (selector, known))
    if len(matches) > 1:
        raise SensorError("Redfish temperature name %r is not unique (%d sensors)" % (selector, len(matches)))
    found = matches[0]
    if found["value"] is None:
        raise SensorError("Redfish temperature %r has no reading" % selector)
    if found.get("state") in ("Absent", "Disabled", "UnavailableOffline"):
        raise SensorError("Redfish temperature %r is %s" % (selector, found["state"]))
    return found["value"]


def _link(doc, key):
    value = doc.get(key)
    return value.get("@odata.id") if isinstance(value, dict) else None


def parse_redfish_cooling_unit(doc):
    """Parse a ThermalEquipment CDU (CoolingUnit): identity, status and links to what to read next."""
    command = "Redfish CoolingUnit"
    doc = _document(doc, command)
    if "Id" not in doc:
        raise ParseError(command, "no Id (@odata.type %r)" % doc.get("@odata.type"))
    state, health = _status(doc)
    return {
        "id": doc["Id"], "name": doc.get("Name"), "type": doc.get("EquipmentType"), "state": state, "health": health,
        "primary_connectors": _link(doc, "PrimaryCoolantConnectors"),
        "secondary_connectors": _link(doc, "SecondaryCoolantConnectors"),
        "pumps": _link(doc, "Pumps"), "leak_detection": _link(doc, "LeakDetection"),
    }


def parse_redfish_coolant_connector(doc):
    """Parse a CoolantConnector: supply/return/delta temperature (C), flow (L/min), pressures (kPa)."""
    command = "Redfish CoolantConnector"
    doc = _document(doc, command)
    state, health = _status(doc)
    connector = {
        "name": doc.get("Name") or doc.get("Id"), "state": state, "health": health,
        "supply_temp": _excerpt(doc.get("SupplyTemperatureCelsius")),
        "return_temp": _excerpt(doc.get("ReturnTemperatureCelsius")),
        "delta_temp": _excerpt(doc.get("DeltaTemperatureCelsius")),
        "flow_lpm": _excerpt(doc.get("FlowLitersPerMinute")),
        "supply_pressure_kpa": _excerpt(doc.get("SupplyPressurekPa")),
        "return_pressure_kpa": _excerpt(doc.get("ReturnPressurekPa")),
    }
    if connector["delta_temp"] is None and None not in (connector["supply_temp"], connector["return_temp"]):
        connector["delta_temp"] = connector["return_temp"] - connector["supply_temp"]
    if all(connector[key] is None for key in ("supply_temp", "return_temp", "flow_lpm")):
        raise ParseError(command, "no SupplyTemperatureCelsius, ReturnTemperatureCelsius or FlowLitersPerMinute reading")
    return connector


def parse_redfish_pump(doc):
    """Parse a Pump: state, health and speed in percent."""
    doc = _document(doc, "Redfish Pump")
    state, health = _status(doc)
    return {"name": doc.get("Name") or doc.get("Id"), "state": state, "health": health,
            "speed_percent": _excerpt(doc.get("PumpSpeedPercent"))}


def parse_redfish_leak_detector(doc):
    """Parse a LeakDetector: DetectorState is OK, Warning or Critical."""
    command = "Redfish LeakDetector"
    doc = _document(doc, command)
    if "DetectorState" not in doc:
        raise ParseError(command, "no DetectorState (@odata.type %r)" % doc.get("@odata.type"))
    state, health = _status(doc)
    return {"name": doc.get("Name") or doc.get("Id"), "detector_state": doc["DetectorState"], "type": doc.get("LeakDetectorType"),
            "state": state, "health": health}


def parse_redfish_leak_detection(doc):
    """Parse LeakDetection: the detector collection link and the detectors each group summarises."""
    command = "Redfish LeakDetection"
    doc = _document(doc, command)
    detectors = []
    for group in doc.get("LeakDetectorGroups") or []:
        for detector in group.get("Detectors") or []:
            detectors.append({"group": group.get("GroupName"), "name": detector.get("DeviceName"),
                              "uri": detector.get("DataSourceUri"), "detector_state": detector.get("DetectorState")})
    collection = _link(doc, "LeakDetectors")
    if collection is None and not detectors:
        raise ParseError(command, "neither a LeakDetectors link nor LeakDetectorGroups (@odata.type %r)" % doc.get("@odata.type"))
    return {"detectors_uri": collection, "detectors": detectors}


def collection_members(doc):
    """The @odata.id of each member of a Redfish collection."""
    doc = _document(doc, "Redfish collection")
    if "Members" not in doc:
        raise ParseError("Redfish collection", "no Members (@odata.type %r)" % doc.get("@odata.type"))
    return [member["@odata.id"] for member in doc["Members"] if isinstance(member, dict) and "@odata.id" in member]


def parse_nvidia_smi_csv(text, fields):
    """Parse `nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits` into dicts keyed by field.

    Numbers become float, N/A and Not Supported become None, other text stays text.
    """
    command = "nvidia-smi --query-gpu=%s" % ",".join(fields)
    rows = []
    for number, line in enumerate(clean_lines(text, command), start=1):
        if not line.strip():
            continue
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(fields):
            raise ParseError(command, "line %d has %d values for %d fields: %r" % (number, len(cells), len(fields), line))
        row = {}
        for field, cell in zip(fields, cells):
            if cell in _NOT_AVAILABLE:
                row[field] = None
                continue
            try:
                row[field] = float(cell)
            except ValueError:
                row[field] = cell
        rows.append(row)
    return rows


def parse_hwmon_temperature(text, path):
    """A hwmon temp*_input file holds millidegrees Celsius."""
    value = (text or "").strip()
    if not re.fullmatch(r"-?\d+", value):
        raise ParseError(path, "expected millidegrees Celsius as an integer, got %r" % value)
    return int(value) / 1000.0
