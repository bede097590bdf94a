"""The installed controller package against real peers: OpenIPMI ipmi_sim, sushy-tools, a hwmon-like file tree.

Nothing here is mocked: ipmitool talks IPMI LAN to ipmi_sim, urllib talks HTTP to sushy, duties are written
to pwm files. Only time is injected where a test needs data to be old.
"""

import json
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROLE_VARS = Path(__file__).resolve().parents[3] / "roles" / "cooling" / "vars" / "main.yml"


@pytest.fixture
def hwmon(tmp_path):
    """A sysfs-like hwmon chip: the fan's firmware mode is 2 (automatic) until the controller takes over."""
    chip = tmp_path / "hwmon" / "hwmon3"
    chip.mkdir(parents=True)
    (chip / "name").write_text("labfan\n")
    (chip / "pwm1").write_text("128\n")
    (chip / "pwm1_enable").write_text("2\n")
    (chip / "temp1_input").write_text("40000\n")
    return chip


def pwm(chip):
    return int((chip / "pwm1").read_text())


def as_deployed(config):
    """config as the role deploys it: the metrics go to node_exporter's textfile directory, where the policy checks
    want them (the controller under test writes them into its temporary directory)."""
    return dict(config, metrics_file="/var/lib/prometheus/node-exporter/gpufabric_cooling.prom")


def make_config(tmp_path, hwmon, ipmi=None, redfish_url=None, **extra):
    bmc = {}
    if ipmi:
        bmc["ipmi"] = ipmi["settings"]
    if redfish_url:
        # sushy-static speaks plain http and has no SessionService: the lab settings say so explicitly.
        bmc["redfish"] = {"base_url": redfish_url, "chassis": "auto", "timeout": 3, "allow_insecure_http": True, "auth": "basic"}
    zones = {"cpu": {"sensors": [{"backend": "ipmi", "selector": "CPU Temp"}], "min_duty": 20, "hysteresis": 2,
                     "curve": [{"temp": 40, "duty": 20}, {"temp": 60, "duty": 50}, {"temp": 80, "duty": 100}], "critical_temp": 85}}
    if redfish_url:
        zones["gpu"] = {"sensors": [{"backend": "redfish", "selector": "GPU Baseboard Inlet"}], "min_duty": 20,
                        "curve": [{"temp": 25, "duty": 20}, {"temp": 45, "duty": 60}, {"temp": 60, "duty": 100}], "critical_temp": 65}
    config = {
        "interval": 1, "stale_after": 5, "on_stop": "full",
        "hwmon_root": str(hwmon.parent), "state_dir": str(tmp_path / "state"), "metrics_file": str(tmp_path / "metrics" / "cooling.prom"),
        "bmc": bmc, "zones": zones,
        "fan_groups": {"chassis": {"backend": "hwmon", "target": "labfan/pwm1", "zones": sorted(zones)}},
    }
    config.update(extra)
    return config


def wait_for_ipmi_value(ipmi_sim, text):
    """ipmi_sim polls its value files every second: wait until the BMC reports the new reading."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = subprocess.run(ipmi_sim["ipmitool"] + ["sdr", "elist", "full"], capture_output=True, text=True, check=False).stdout
        if text in out:
            return
        time.sleep(0.3)
    pytest.fail("ipmi_sim never reported %r" % text)


def test_ipmi_sensor_read_over_lan(cooling_pkg, ipmi_sim, tmp_path, hwmon):
    sensors = cooling_pkg["backends"].Sensors(make_config(tmp_path, hwmon, ipmi_sim))
    results = sensors.read([("ipmi", "CPU Temp"), ("ipmi", "Inlet Temp"), ("ipmi", "GPU Temp")])
    assert results[("ipmi", "CPU Temp")] == 45.0
    assert results[("ipmi", "Inlet Temp")] == 30.0
    assert "'GPU Temp' not found in the SDR (sensors: CPU Temp, FAN1, Inlet Temp)" in str(results[("ipmi", "GPU Temp")])


def test_duty_written_follows_the_curve_as_the_bmc_temperature_changes(cooling_pkg, ipmi_sim, sushy_static, tmp_path, hwmon):
    config = make_config(tmp_path, hwmon, ipmi_sim, sushy_static["url"])
    controller = cooling_pkg["controller"].Controller(config)
    snapshot = controller.cycle()
    # cpu 45 C -> 27.5 %, gpu (Redfish ThermalMetrics) 31 C -> 32 %: the group takes the higher.
    assert snapshot["zones"]["cpu"]["duty"] == 27.5
    assert snapshot["zones"]["gpu"]["duty"] == 32.0
    assert pwm(hwmon) == round(32 * 255 / 100)
    assert (hwmon / "pwm1_enable").read_text().strip() == "1"
    ipmi_sim["values"]["cpu_temp"].write_text("70\n")
    wait_for_ipmi_value(ipmi_sim, "70 degrees C")
    snapshot = controller.cycle()
    assert snapshot["groups"]["chassis"] == {"duty": 75.0, "target": 75.0, "failsafe": False, "written": True, "reasons": []}
    assert pwm(hwmon) == round(75 * 255 / 100)
    metrics = Path(config["metrics_file"]).read_text()
    assert 'gpufabric_cooling_temperature_celsius{zone="cpu",backend="ipmi",sensor="CPU Temp"} 70' in metrics
    assert 'gpufabric_cooling_temperature_celsius{zone="gpu",backend="redfish",sensor="GPU Baseboard Inlet"} 31' in metrics
    assert 'gpufabric_cooling_fan_duty_percent{group="chassis"} 75' in metrics
    assert 'gpufabric_cooling_failsafe{group="chassis"} 0' in metrics


def test_stopped_bmc_drives_full_duty_and_says_why(cooling_pkg, ipmi_sim, tmp_path, hwmon, caplog):
    controller = cooling_pkg["controller"].Controller(make_config(tmp_path, hwmon, ipmi_sim))
    controller.cycle()
    assert pwm(hwmon) < 255
    ipmi_sim["process"].terminate()
    ipmi_sim["process"].wait(timeout=10)
    started = time.monotonic()
    with caplog.at_level(logging.ERROR, logger="gpufabric-cooling"):
        snapshot = controller.cycle()
    assert time.monotonic() - started < 5  # ipmitool -N 1 -R 1 gives up in about 2 s: well inside stale_after
    assert pwm(hwmon) == 255
    group = snapshot["groups"]["chassis"]
    assert group["failsafe"] is True and group["duty"] == 100.0
    assert "sensor ipmi:CPU Temp unreadable" in group["reasons"][0]
    assert "FAIL-SAFE 100 %: sensor ipmi:CPU Temp unreadable" in caplog.text
    assert 'gpufabric_cooling_failsafe{group="chassis"} 1' in Path(controller.config["metrics_file"]).read_text()


def test_stale_data_drives_full_duty(cooling_pkg, ipmi_sim, tmp_path, hwmon):
    # A BMC that answers only after longer than stale_after gave data that is already too old.
    # Per cycle the clock is read when the read starts, when it ends, and before the writes.
    ticks = iter([0.0, 0.1, 0.2, 100.0, 106.0, 106.1])
    controller = cooling_pkg["controller"].Controller(make_config(tmp_path, hwmon, ipmi_sim), clock=lambda: next(ticks))
    assert controller.cycle()["groups"]["chassis"]["failsafe"] is False
    snapshot = controller.cycle()
    assert snapshot["groups"]["chassis"]["failsafe"] is True
    assert snapshot["zones"]["cpu"]["reason"] == "sensor ipmi:CPU Temp data is 6.0 s old (stale_after 5.0 s)"
    assert pwm(hwmon) == 255


def test_raw_command_refused_by_the_bmc_is_logged_and_fails_safe(cooling_pkg, ipmi_sim, tmp_path, hwmon, caplog):
    import yaml

    profile = yaml.safe_load(ROLE_VARS.read_text())["__cooling_ipmi_profiles"]["supermicro"]
    config = make_config(tmp_path, hwmon, ipmi_sim, ipmi_profile=profile)
    config["fan_groups"]["bmc"] = {"backend": "ipmi_raw", "target": "system", "zones": ["cpu"]}
    assert cooling_pkg["cooling_policy"].policy_problems(as_deployed(config)) == []
    controller = cooling_pkg["controller"].Controller(config)
    with caplog.at_level(logging.WARNING, logger="gpufabric-cooling"):
        snapshot = controller.cycle()
    group = snapshot["groups"]["bmc"]
    assert group["failsafe"] is True and group["written"] is False
    assert "BMC refused ipmitool raw 0x30 0x45 0x01 0x01: completion code 0xc1 (Invalid command)" in group["reasons"][0]
    assert "hand-back to the BMC refused too" in caplog.text
    # The other group is unaffected and the service keeps cycling.
    assert snapshot["groups"]["chassis"]["failsafe"] is False
    # Within WRITE_RETRY_S the refusing BMC is not asked again; the group stays in fail-safe and says so.
    again = controller.cycle()["groups"]["bmc"]
    assert again["failsafe"] is True and again["written"] is False
    assert again["reasons"][0].startswith("writing the duty of fan group bmc failed: BMC refused") and "(retrying in" in again["reasons"][0]


def test_leak_and_coolant_out_of_range_trigger_the_configured_action_once(cooling_pkg, sushy_static, tmp_path, hwmon, caplog):
    record = tmp_path / "actions.log"
    config = make_config(tmp_path, hwmon, None, sushy_static["url"])
    config["zones"] = {"gpu": config["zones"]["gpu"]}
    config["fan_groups"]["chassis"]["zones"] = ["gpu"]
    config["liquid"] = {
        "cdus": {"1": {"supply_temp_max": 40, "flow_min_lpm": 50, "action": "alert"}},
        "leak_detection_uris": ["/redfish/v1/Chassis/1/ThermalSubsystem/LeakDetection"],
        "leak_action": "alert",
        "alert_command": ["/bin/sh", "-c", 'echo "$GPUFABRIC_COOLING_EVENT|$GPUFABRIC_COOLING_ACTION|$GPUFABRIC_COOLING_READING" >> ' + str(record)],
    }
    assert cooling_pkg["cooling_policy"].policy_problems(as_deployed(config)) == []
    controller = cooling_pkg["controller"].Controller(config)
    snapshot = controller.cycle()
    assert snapshot["liquid"]["cdu:1"]["events"] == []
    assert snapshot["liquid"]["cdu:1"]["readings"]["connectors"][0]["flow_lpm"] == 120.0
    assert not record.exists()
    detector = sushy_static["mockup"] / "ThermalEquipment/CDUs/1/LeakDetection/LeakDetectors/Base/index.json"
    doc = json.loads(detector.read_text())
    doc["DetectorState"] = "Critical"
    detector.write_text(json.dumps(doc))
    connector = sushy_static["mockup"] / "ThermalEquipment/CDUs/1/SecondaryCoolantConnectors/1/index.json"
    doc = json.loads(connector.read_text())
    doc["FlowLitersPerMinute"]["Reading"] = 12.5
    connector.write_text(json.dumps(doc))
    with caplog.at_level(logging.CRITICAL, logger="gpufabric-cooling"):
        controller.cycle()
        controller.cycle()
    lines = record.read_text().splitlines()
    assert lines == [
        "coolant|alert|CDU 1 Rack manifold: flow 12.5 L/min below 50.0 L/min",
        "leak|alert|CDU 1 leak detector CDU base pan DetectorState=Critical",
    ]
    assert "liquid cooling LEAK: CDU 1 leak detector CDU base pan DetectorState=Critical; action alert" in caplog.text
    metrics = Path(config["metrics_file"]).read_text()
    assert 'gpufabric_cooling_liquid_alarm{source="cdu:1",kind="leak"} 1' in metrics
    assert 'gpufabric_cooling_coolant_flow_lpm{source="cdu:1",connector="Rack manifold"} 12.5' in metrics


def test_redfish_fan_group_patches_the_duty_and_hands_back(cooling_pkg, sushy_static, tmp_path, hwmon):
    config = make_config(tmp_path, hwmon, None, sushy_static["url"])
    config["zones"] = {"gpu": config["zones"]["gpu"]}
    config["fan_groups"] = {"rack": {"backend": "redfish", "target": "/redfish/v1/Chassis/1/Controls/FanDuty",
                                     "zones": ["gpu"], "handback_body": {"ControlMode": "Automatic"}}}
    config["on_stop"] = "bmc"
    assert cooling_pkg["cooling_policy"].policy_problems(as_deployed(config)) == []
    controller = cooling_pkg["controller"].Controller(config)
    assert controller.cycle()["groups"]["rack"] == {"duty": 32.0, "target": 32.0, "failsafe": False, "written": True, "reasons": []}
    controller.stop_action("test stop")
    log = sushy_static["log"].read_text()
    assert """Data: b'{"SetPoint": 32.0}'""" in log
    assert """Data: b'{"ControlMode": "Automatic"}'""" in log


def test_stop_action_hands_hwmon_back_to_its_saved_mode_and_full_otherwise(cooling_pkg, tmp_path, hwmon):
    config = make_config(tmp_path, hwmon)
    config["zones"]["cpu"]["sensors"] = [{"backend": "hwmon", "selector": "labfan/temp1_input"}]
    controller = cooling_pkg["controller"].Controller(dict(config, on_stop="bmc"))
    assert controller.cycle()["zones"]["cpu"]["temperature"] == 40.0
    assert (hwmon / "pwm1_enable").read_text().strip() == "1"
    # A new process (ExecStopPost after a crash) finds the saved firmware mode on disk.
    cooling_pkg["controller"].Controller(dict(config, on_stop="bmc")).stop_action("test stop")
    assert (hwmon / "pwm1_enable").read_text().strip() == "2"
    cooling_pkg["controller"].Controller(config).stop_action("test stop")
    assert pwm(hwmon) == 255


def test_metrics_carry_a_hostile_zone_name_and_a_sensor_listed_twice_never_fails_safe(cooling_pkg, tmp_path, hwmon, caplog):
    from prometheus_client.parser import text_string_to_metric_families

    config = make_config(tmp_path, hwmon)
    zone = 'cpu "0"\\\nrack'
    config["zones"] = {zone: dict(config["zones"]["cpu"], sensors=[{"backend": "hwmon", "selector": "labfan/temp1_input"}])}
    config["fan_groups"]["chassis"]["zones"] = [zone]
    controller = cooling_pkg["controller"].Controller(config)
    assert controller.cycle()["groups"]["chassis"]["failsafe"] is False
    families = {family.name: family for family in text_string_to_metric_families(Path(config["metrics_file"]).read_text())}
    [sample] = families["gpufabric_cooling_temperature_celsius"].samples
    assert sample.labels["zone"] == zone and sample.value == 40.0
    # The same sensor twice in a zone is one label set twice: the metrics are not written (and say why), the fans
    # keep their curve.
    config["zones"][zone]["sensors"] *= 2
    controller = cooling_pkg["controller"].Controller(config)
    with caplog.at_level(logging.WARNING):
        assert controller.cycle()["groups"]["chassis"]["failsafe"] is False
    assert "cannot write metrics" in caplog.text and "given twice" in caplog.text


def test_cli_check_config_accepts_good_and_names_bad_keys(cooling_pkg, tmp_path, hwmon):
    config = make_config(tmp_path, hwmon)
    config["zones"]["cpu"]["sensors"] = [{"backend": "hwmon", "selector": "labfan/temp1_input"}]
    good = tmp_path / "good.json"
    good.write_text(json.dumps(dict(config, metrics_file="")))
    env = dict(os.environ, PYTHONPATH=str(cooling_pkg["lib"]))
    result = subprocess.run([sys.executable, "-m", "gpufabric_cooling", "check-config", str(good)], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert "1 zones, 1 fan groups: OK" in result.stdout
    config["zones"]["cpu"]["curve"][2]["duty"] = 140
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(config))
    result = subprocess.run([sys.executable, "-m", "gpufabric_cooling", "check-config", str(bad)], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 1
    assert "zones.cpu.curve[2].duty: 140 is outside 0-100 %" in result.stderr
    result = subprocess.run([sys.executable, "-m", "gpufabric_cooling", "once", str(good)], capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["groups"]["chassis"]["duty"] == 20.0


def test_redfish_deprecated_thermal_from_sushy_emulator(cooling_pkg, tmp_path):
    binary = Path(sys.executable).parent / "sushy-emulator"
    if not binary.exists():
        pytest.skip("sushy-tools not installed")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen([str(binary), "--fake", "-i", "127.0.0.1", "-p", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        redfish = cooling_pkg["backends"].Redfish({"base_url": "http://127.0.0.1:%d" % port, "timeout": 2, "allow_insecure_http": True})
        deadline = time.monotonic() + 30
        while True:
            try:
                temperatures = redfish.temperatures()
                break
            except cooling_pkg["backends"].BackendError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert {t["name"]: t["value"] for t in temperatures} == {"CPU Temp": 41.0, "Chassis Intake Temp": 25.0}
        with pytest.raises(cooling_pkg["backends"].BackendError, match="HTTP 405"):
            redfish.patch(redfish.chassis_uri() + "/Thermal", {"Fans": [{"Reading": 50}]})
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_property_unreadable_sensor_always_means_full_duty(cooling_pkg):
    """For any sequence of readings and read failures, a failed cycle writes 255 and a good one stays in bounds."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=60, deadline=None)
    @given(st.lists(st.one_of(st.none(), st.integers(min_value=-10, max_value=120)), min_size=1, max_size=12))
    def run(sequence):
        with tempfile.TemporaryDirectory() as directory:
            root = Path(directory)
            chip = root / "hwmon" / "hwmon0"
            chip.mkdir(parents=True)
            (chip / "name").write_text("labfan\n")
            (chip / "pwm1").write_text("0\n")
            (chip / "pwm1_enable").write_text("2\n")
            config = make_config(root, chip)
            config["zones"]["cpu"]["sensors"] = [{"backend": "hwmon", "selector": "labfan/temp1_input"}]
            config["fan_groups"]["chassis"].update(max_step_up=15, max_step_down=5)
            controller = cooling_pkg["controller"].Controller(config)
            for temp in sequence:
                sensor = chip / "temp1_input"
                if temp is None:
                    if sensor.exists():
                        sensor.unlink()
                else:
                    sensor.write_text("%d\n" % (temp * 1000))
                group = controller.cycle()["groups"]["chassis"]
                if temp is None:
                    assert group["failsafe"] and pwm(chip) == 255
                else:
                    assert not group["failsafe"] and 20 <= group["duty"] <= 100
                    assert pwm(chip) == round(group["duty"] * 255 / 100)

    run()
