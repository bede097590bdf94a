"""Parsers for ipmitool, Redfish and nvidia-smi outputs, on real captures and the scenario's Redfish mockup."""

import json
from pathlib import Path

import pytest
from fixture_data import read_fixture

from ansible_collections.gpufabric.core.plugins.module_utils.cooling.sensors import (
    SensorError,
    collection_members,
    parse_hwmon_temperature,
    parse_ipmitool_error,
    parse_ipmitool_sdr,
    parse_nvidia_smi_csv,
    parse_redfish_coolant_connector,
    parse_redfish_cooling_unit,
    parse_redfish_leak_detection,
    parse_redfish_leak_detector,
    parse_redfish_pump,
    parse_redfish_thermal,
    parse_redfish_thermal_metrics,
    select_ipmi_reading,
    select_redfish_temperature,
)
from ansible_collections.gpufabric.core.plugins.module_utils.parsers.common import ParseError

MOCKUP = Path(__file__).resolve().parents[3] / "molecule" / "cooling" / "files" / "redfish-mockup"


def mockup(path):
    return json.loads((MOCKUP / path / "index.json").read_text())


def test_ipmi_sim_elist_reads_names_ids_status_entity_and_values(cooling_fixture):
    readings = parse_ipmitool_sdr(cooling_fixture("ipmitool_sdr_elist_ipmi_sim.txt"))
    assert readings == [
        {"name": "CPU Temp", "sensor_id": 1, "status": "ucr", "entity": "3.1", "value": 97.0, "unit": "degrees C", "text": "97 degrees C"},
        {"name": "Inlet Temp", "sensor_id": 2, "status": "ok", "entity": "55.1", "value": 30.0, "unit": "degrees C", "text": "30 degrees C"},
        {"name": "FAN1", "sensor_id": 3, "status": "ok", "entity": "29.1", "value": 500.0, "unit": "RPM", "text": "500 RPM"},
    ]
    assert select_ipmi_reading(readings, "CPU Temp") == 97.0


def test_disabled_sensors_have_no_value_and_selecting_one_says_why(cooling_fixture):
    readings = parse_ipmitool_sdr(cooling_fixture("ipmitool_sdr_elist_disabled_ipmi_sim.txt"))
    assert [r["value"] for r in readings] == [None, None, None]
    with pytest.raises(SensorError, match=r"'CPU Temp' has no reading \(status ns: 'Disabled'\)"):
        select_ipmi_reading(readings, "CPU Temp")


def test_dell_elist_with_empty_discrete_reading(cooling_fixture):
    readings = parse_ipmitool_sdr(cooling_fixture("ipmitool_sdr_elist_dell.txt"))
    assert len(readings) == 11
    by_name = {r["name"]: r for r in readings}
    assert by_name["Intrusion"]["value"] is None and by_name["Intrusion"]["text"] == ""
    assert by_name["SEL"]["status"] == "ns"
    assert by_name["Fan6A RPM"]["sensor_id"] == 0x3A and by_name["Fan6A RPM"]["value"] == 2160.0
    assert select_ipmi_reading(readings, "Inlet Temp") == 23.0
    assert select_ipmi_reading(readings, "Temp@3.2") == 45.0


def test_repeated_names_must_be_qualified_by_entity(cooling_fixture):
    readings = parse_ipmitool_sdr(cooling_fixture("ipmitool_sdr_elist_dell_powered_off.txt"))
    with pytest.raises(SensorError, match=r"ambiguous; select one with name@entity: Temp@3.1, Temp@3.2, Temp@10.1, Temp@10.2"):
        select_ipmi_reading(readings, "Temp")
    with pytest.raises(SensorError, match="no reading"):
        select_ipmi_reading(readings, "Temp@3.2")
    with pytest.raises(SensorError, match=r"'GPU Temp' not found in the SDR \(sensors: Ambient Temp, CMOS Battery, Planar Temp, Temp\)"):
        select_ipmi_reading(readings, "GPU Temp")


def test_sdr_type_temperature_from_sun_and_supermicro(cooling_fixture):
    readings = parse_ipmitool_sdr(cooling_fixture("ipmitool_sdr_type_temperature_sun_supermicro.txt"))
    assert [(r["name"], r["sensor_id"], r["value"]) for r in readings][:2] == [("CPU 0 Temp", 0x90, 44.0), ("CPU 1 Temp", 0x91, 48.0)]
    assert select_ipmi_reading(readings, "System") == 33.0


def test_sdr_list_three_columns():
    readings = parse_ipmitool_sdr("CPU Temp         | 45 degrees C      | ok\nFAN1             | 6000 RPM          | ok\n")
    assert [(r["name"], r["value"], r["status"], r["sensor_id"]) for r in readings] == [("CPU Temp", 45.0, "ok", None), ("FAN1", 6000.0, "ok", None)]


def test_the_ten_column_sensor_table_is_refused_with_a_clear_message(cooling_fixture):
    with pytest.raises(ParseError, match=r"line 1 has 10 columns, expected 5 \(elist\) or 3 \(list\)"):
        parse_ipmitool_sdr(cooling_fixture("ipmitool_sensor_ipmi_sim.txt"))


def test_empty_sdr_output_is_an_error():
    with pytest.raises(ParseError, match="the output is empty"):
        parse_ipmitool_sdr("\n")


def test_refused_raw_command_yields_the_bmc_completion_code(cooling_fixture):
    error = parse_ipmitool_error(cooling_fixture("ipmitool_raw_refused_ipmi_sim.txt"))
    assert error["completion_code"] == "0xc1"
    assert error["message"] == "Invalid command"
    session = parse_ipmitool_error("Error: Unable to establish IPMI v2 / RMCP+ session\n")
    assert session == {"completion_code": None, "message": "Error: Unable to establish IPMI v2 / RMCP+ session",
                       "text": "Error: Unable to establish IPMI v2 / RMCP+ session"}


def test_redfish_thermal_from_sushy_emulator(cooling_fixture):
    thermal = parse_redfish_thermal(cooling_fixture("redfish_thermal_sushy_fake.json"))
    assert [(t["name"], t["value"], t["context"]) for t in thermal["temperatures"]] == [("CPU Temp", 41.0, "CPU"), ("Chassis Intake Temp", 25.0, "Intake")]
    assert thermal["fans"][0]["name"] == "BaseBoard System Fan" and thermal["fans"][0]["value"] == 2100.0
    assert select_redfish_temperature(thermal["temperatures"], "Chassis Intake Temp") == 25.0


def test_redfish_thermal_metrics_and_summary():
    metrics = parse_redfish_thermal_metrics(mockup("Chassis/1/ThermalSubsystem/ThermalMetrics"))
    names = {t["name"]: t["value"] for t in metrics["temperatures"]}
    assert names == {"GPU Baseboard Inlet": 31.0, "NVSwitch 0": 52.0, "Summary/Exhaust": 39.5, "Summary/Intake": 24.0, "Summary/Internal": 41.0}
    assert select_redfish_temperature(metrics["temperatures"], "Summary/Intake") == 24.0
    with pytest.raises(SensorError, match="'GPU 9' not found"):
        select_redfish_temperature(metrics["temperatures"], "GPU 9")


def test_redfish_parsers_refuse_the_wrong_resource():
    with pytest.raises(ParseError, match="no Temperatures or Fans array"):
        parse_redfish_thermal(mockup("Chassis/1"))
    with pytest.raises(ParseError, match="not JSON"):
        parse_redfish_thermal("<html>login</html>")
    with pytest.raises(ParseError, match="no DetectorState"):
        parse_redfish_leak_detector(mockup("ThermalEquipment/CDUs/1/Pumps/1"))


def test_cdu_connectors_pumps_and_leak_detection():
    unit = parse_redfish_cooling_unit(mockup("ThermalEquipment/CDUs/1"))
    assert unit["type"] == "CDU" and unit["health"] == "OK"
    assert unit["pumps"] == "/redfish/v1/ThermalEquipment/CDUs/1/Pumps"
    primary = parse_redfish_coolant_connector(mockup("ThermalEquipment/CDUs/1/PrimaryCoolantConnectors/A"))
    assert (primary["supply_temp"], primary["return_temp"], primary["delta_temp"], primary["flow_lpm"]) == (25.0, 33.5, 8.5, 120.0)
    secondary = parse_redfish_coolant_connector(mockup("ThermalEquipment/CDUs/1/SecondaryCoolantConnectors/1"))
    assert secondary["delta_temp"] == 12.0
    pump = parse_redfish_pump(mockup("ThermalEquipment/CDUs/1/Pumps/1"))
    assert pump == {"name": "Pump 1", "state": "Enabled", "health": "OK", "speed_percent": 68.0}
    detection = parse_redfish_leak_detection(mockup("ThermalEquipment/CDUs/1/LeakDetection"))
    assert detection["detectors_uri"].endswith("/LeakDetection/LeakDetectors")
    assert detection["detectors"][0]["detector_state"] == "OK"
    assert collection_members(mockup("ThermalEquipment/CDUs/1/LeakDetection/LeakDetectors")) == [
        "/redfish/v1/ThermalEquipment/CDUs/1/LeakDetection/LeakDetectors/Base"]
    detector = parse_redfish_leak_detector(mockup("ThermalEquipment/CDUs/1/LeakDetection/LeakDetectors/Base"))
    assert detector["detector_state"] == "OK" and detector["type"] == "FloatSwitch"


def test_nvidia_smi_temperatures(cooling_fixture):
    rows = parse_nvidia_smi_csv(cooling_fixture("nvidia_smi_query_temperature.txt"), ["index", "temperature.gpu"])
    assert rows == [{"index": 0.0, "temperature.gpu": 65.0}, {"index": 1.0, "temperature.gpu": 67.0}]
    assert parse_nvidia_smi_csv("0, [N/A]\n", ["index", "temperature.gpu"]) == [{"index": 0.0, "temperature.gpu": None}]
    with pytest.raises(ParseError, match="line 1 has 1 values for 2 fields"):
        parse_nvidia_smi_csv("No devices were found\n", ["index", "temperature.gpu"])


def test_nvidia_smi_thermal_query_of_a_real_h200():
    # One H200 (SXM, no fan of its own): fan.speed is [N/A], clock event reasons print as a hex mask and words.
    fields = ["index", "temperature.gpu", "temperature.memory", "power.draw", "power.limit", "fan.speed",
              "clocks_event_reasons.active", "clocks_event_reasons.sw_thermal_slowdown",
              "clocks_event_reasons.hw_thermal_slowdown"]
    rows = parse_nvidia_smi_csv(read_fixture("nvidia_smi_query/device-h200-vm-thermal.txt"), fields)
    assert rows == [{
        "index": 0.0, "temperature.gpu": 32.0, "temperature.memory": 32.0, "power.draw": 78.13, "power.limit": 700.0,
        "fan.speed": None, "clocks_event_reasons.active": "0x0000000000000001",
        "clocks_event_reasons.sw_thermal_slowdown": "Not Active", "clocks_event_reasons.hw_thermal_slowdown": "Not Active",
    }]


def test_hwmon_millidegrees():
    assert parse_hwmon_temperature("45500\n", "temp1_input") == 45.5
    with pytest.raises(ParseError, match="expected millidegrees"):
        parse_hwmon_temperature("", "temp1_input")
