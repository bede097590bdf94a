"""stop-action drives every fan it can reach to full duty whatever else fails (issue 14, cooling).

Each test leaves the fans where a crashed controller leaves them (pwm 77/255, firmware mode 2), breaks one
thing the old stop path depended on, runs the installed command as ExecStopPost does, and reads the pwm
files. The peers are real: ipmi_sim for IPMI, a local TCP server that answers garbage for a broken BMC.
"""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from garbage_bmc import GarbageBMC

ROOT = Path(__file__).resolve().parents[3]
PROFILES = yaml.safe_load((ROOT / "roles" / "cooling" / "vars" / "main.yml").read_text())["__cooling_ipmi_profiles"]


def chip(root, number, name):
    directory = root / "hwmon" / ("hwmon%d" % number)
    directory.mkdir(parents=True)
    (directory / "name").write_text(name + "\n")
    (directory / "pwm1").write_text("77\n")
    (directory / "pwm1_enable").write_text("2\n")
    (directory / "temp1_input").write_text("40000\n")
    return directory


def left_low(*chips):
    """Where a controller killed mid-cycle leaves the fans: a low duty, the firmware's mode."""
    for directory in chips:
        (directory / "pwm1").write_text("77\n")
        (directory / "pwm1_enable").write_text("2\n")


def pwm(directory):
    return int((directory / "pwm1").read_text())


def config_for(tmp_path, groups, bmc=None, profile=None):
    zones = {"cpu": {"sensors": [{"backend": "hwmon", "selector": "fan_a/temp1_input"}], "min_duty": 20,
                     "critical_temp": 85, "curve": [{"temp": 40, "duty": 20}, {"temp": 80, "duty": 100}]}}
    return {"interval": 1, "stale_after": 4, "on_stop": "full", "hwmon_root": str(tmp_path / "hwmon"),
            "state_dir": str(tmp_path / "state"), "metrics_file": "", "bmc": bmc or {}, "ipmi_profile": profile or {},
            "zones": zones, "fan_groups": {name: dict(group, zones=["cpu"]) for name, group in groups.items()}}


def stop_action(cooling_pkg, config_path, record_path, timeout=60):
    env = dict(os.environ, PYTHONPATH=str(cooling_pkg["lib"]))
    return subprocess.run([sys.executable, "-m", "gpufabric_cooling", "stop-action", str(config_path),
                           "--failsafe-record", str(record_path), "--reason", "test"],
                          capture_output=True, text=True, env=env, timeout=timeout, check=False)


def setup(cooling_pkg, tmp_path, groups, **kwargs):
    """Two hwmon chips, a validated config and the record the controller writes when it starts."""
    fan_a, fan_b = chip(tmp_path, 3, "fan_a"), chip(tmp_path, 5, "fan_b")
    config = config_for(tmp_path, groups, **kwargs)
    assert cooling_pkg["cooling_policy"].policy_problems(config) == []
    config_path, record_path = tmp_path / "config.json", tmp_path / "state" / "failsafe.record"
    config_path.write_text(json.dumps(config))
    cooling_pkg["controller"].write_failsafe_record(str(record_path), config)
    assert oct(record_path.stat().st_mode & 0o777) == "0o600"
    return fan_a, fan_b, config, config_path, record_path


HWMON_GROUPS = {"chassis": {"backend": "hwmon", "target": "fan_a/pwm1"}, "gpu_tray": {"backend": "hwmon", "target": "fan_b/pwm1"}}


def test_missing_config_file_still_drives_every_recorded_fan_to_full(cooling_pkg, tmp_path):
    fan_a, fan_b, unused, config_path, record_path = setup(cooling_pkg, tmp_path, HWMON_GROUPS)
    left_low(fan_a, fan_b)
    config_path.unlink()
    result = stop_action(cooling_pkg, config_path, record_path)
    assert (pwm(fan_a), pwm(fan_b)) == (255, 255)
    assert (fan_a / "pwm1_enable").read_text().strip() == "1"
    # Non-zero, after the fans: a stop without its configuration is a fault someone must see.
    assert result.returncode == 1
    assert "configuration %s unusable" % config_path in result.stderr


def test_corrupt_config_file_still_drives_every_recorded_fan_to_full(cooling_pkg, tmp_path):
    fan_a, fan_b, unused, config_path, record_path = setup(cooling_pkg, tmp_path, HWMON_GROUPS)
    left_low(fan_a, fan_b)
    config_path.write_text(config_path.read_text()[:57])  # cut mid-write, as a full disk leaves it
    result = stop_action(cooling_pkg, config_path, record_path)
    assert (pwm(fan_a), pwm(fan_b)) == (255, 255)
    assert result.returncode == 1 and "JSONDecodeError" in result.stderr


def test_without_a_record_an_unvalidated_config_with_timeout_5s_still_drives_the_hwmon_fans(cooling_pkg, tmp_path, ipmi_sim):
    fan_a, fan_b, config, config_path, record_path = setup(
        cooling_pkg, tmp_path, dict(HWMON_GROUPS, bmc={"backend": "ipmi_raw", "target": "system"}),
        bmc={"ipmi": ipmi_sim["settings"]}, profile=PROFILES["supermicro"])
    record_path.unlink()
    config["bmc"]["ipmi"]["timeout"] = "5s"  # what the old checks let through; float("5s") crashed the stop path
    config_path.write_text(json.dumps(config))
    left_low(fan_a, fan_b)
    result = stop_action(cooling_pkg, config_path, record_path)
    assert (pwm(fan_a), pwm(fan_b)) == (255, 255)
    assert result.returncode == 1
    assert "fail-safe record %s unreadable" % record_path in result.stderr
    assert "fan group bmc could not be made safe: BackendError: ipmi timeout must be a number, got '5s'" in result.stderr


def test_invalid_bmc_url_costs_only_its_own_group(cooling_pkg, tmp_path):
    fan_a, fan_b, config, config_path, record_path = setup(cooling_pkg, tmp_path, HWMON_GROUPS)
    config["bmc"] = {"redfish": {"base_url": "https://[fe80::1", "auth": "basic"}}
    config["fan_groups"] = {"rack": {"backend": "redfish", "target": "/redfish/v1/Chassis/1/Controls/FanDuty", "zones": ["cpu"]},
                            **config["fan_groups"]}
    config_path.write_text(json.dumps(config))
    record_path.unlink()
    left_low(fan_a, fan_b)
    result = stop_action(cooling_pkg, config_path, record_path)
    assert (pwm(fan_a), pwm(fan_b)) == (255, 255)
    assert result.returncode == 1 and "fan group rack could not be made safe" in result.stderr


def test_bmc_returning_garbage_fails_its_group_and_every_other_fan_goes_full(cooling_pkg, tmp_path):
    garbage = GarbageBMC()
    try:
        bmc = {"redfish": {"base_url": "http://127.0.0.1:%d" % garbage.port, "allow_insecure_http": True, "auth": "basic",
                           "timeout": 2}}
        # The Redfish group first in the file, as the old stop path met it: its crash left the hwmon fans at 77.
        groups = {"rack": {"backend": "redfish", "target": "/redfish/v1/Chassis/1/Controls/FanDuty",
                           "handback_body": {"ControlMode": "Automatic"}}, **HWMON_GROUPS}
        fan_a, fan_b, config, config_path, record_path = setup(cooling_pkg, tmp_path, groups, bmc=bmc)
        config["on_stop"] = "bmc"
        config_path.write_text(json.dumps(config))
        left_low(fan_a, fan_b)
        result = stop_action(cooling_pkg, config_path, record_path)
    finally:
        garbage.close()
    assert (pwm(fan_a), pwm(fan_b)) == (255, 255)
    assert result.returncode == 1
    assert garbage.requests >= 2  # the record's PATCH and the configuration's attempt both reached it
    assert "fail-safe record %s: fan group rack: BadStatusLine" % record_path in result.stderr
    assert "Traceback" not in result.stderr


def test_stopped_ipmi_sim_costs_only_its_group_and_the_record_drives_it_when_it_answers(cooling_pkg, tmp_path, ipmi_sim):
    groups = dict(HWMON_GROUPS, bmc={"backend": "ipmi_raw", "target": "system"})
    fan_a, fan_b, unused, config_path, record_path = setup(cooling_pkg, tmp_path, groups, bmc={"ipmi": ipmi_sim["settings"]},
                                                           profile=PROFILES["supermicro"])
    record = [json.loads(line) for line in record_path.read_text().splitlines() if not line.startswith("#")]
    assert [entry["group"] for entry in record] == ["chassis", "gpu_tray", "bmc"]  # local fans first
    assert record[2]["commands"][1][-7:] == ["raw", "0x30", "0x70", "0x66", "0x01", "0x00", "0x64"]
    assert "lab-secret" not in record_path.read_text()  # the password file's path, never the password
    ipmi_sim["process"].terminate()
    ipmi_sim["process"].wait(timeout=10)
    left_low(fan_a, fan_b)
    started = time.monotonic()
    result = stop_action(cooling_pkg, config_path, record_path)
    assert (pwm(fan_a), pwm(fan_b)) == (255, 255)
    assert result.returncode == 1 and "fan group bmc" in result.stderr
    assert time.monotonic() - started < 30  # ipmitool -N 1 -R 1, twice: bounded, not ipmitool's 20 s defaults


def test_a_corrupt_record_line_costs_only_that_line(cooling_pkg, tmp_path):
    fan_a, fan_b, unused, config_path, record_path = setup(cooling_pkg, tmp_path, HWMON_GROUPS)
    lines = record_path.read_text().splitlines()
    lines[1] = lines[1][:20]
    record_path.write_text("\n".join(lines) + "\n")
    config_path.unlink()
    left_low(fan_a, fan_b)
    result = stop_action(cooling_pkg, config_path, record_path)
    assert pwm(fan_b) == 255
    assert pwm(fan_a) == 77  # its line is gone and there is no configuration: said so, exit 1
    assert result.returncode == 1 and "fan group line 2: JSONDecodeError" in result.stderr


def test_record_cannot_make_the_stop_path_write_outside_the_hwmon_root(cooling_pkg, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    record = tmp_path / "record"
    record.write_text("\n".join(json.dumps(entry) for entry in [
        {"group": "a", "backend": "hwmon", "root": str(tmp_path / "hwmon"), "target": str(tmp_path / "hwmon" / ".." / "victim")},
        {"group": "b", "backend": "hwmon", "root": "/proc", "target": "/proc/sys/vm/pwm1"},
        {"group": "c", "backend": "hwmon", "root": str(tmp_path / "hwmon"), "target": "../victim"},
    ]) + "\n")
    done, failures = cooling_pkg["failsafe"].drive_full(str(record), __import__("logging").getLogger("test"))
    assert done == [] and len(failures) == 3
    assert victim.read_text() == "keep\n"


def test_good_config_exits_zero_after_full_duty(cooling_pkg, tmp_path):
    fan_a, fan_b, unused, config_path, record_path = setup(cooling_pkg, tmp_path, HWMON_GROUPS)
    left_low(fan_a, fan_b)
    result = stop_action(cooling_pkg, config_path, record_path)
    assert result.returncode == 0, result.stderr
    assert (pwm(fan_a), pwm(fan_b)) == (255, 255)
    assert "every fan group is safe" in result.stderr


def test_hwmon_selectors_resolve_under_the_root_only(cooling_pkg, tmp_path):
    fan_a = chip(tmp_path, 3, "fan_a")
    resolve, error = cooling_pkg["backends"].resolve_hwmon, cooling_pkg["backends"].BackendError
    root = str(tmp_path / "hwmon")
    assert resolve(root, "fan_a/pwm1") == str(fan_a / "pwm1")
    for selector in ("/proc/sys/vm/drop_caches", root + "/../victim", root + "/hwmon3/../../victim", "../hwmon3/pwm1",
                     "fan_a/../../victim"):
        with pytest.raises(error):
            resolve(root, selector)
    with pytest.raises(error, match="outside /proc"):
        resolve("/proc", "/proc/sys/pwm1")


def test_hwmon_duty_is_bounded_to_the_pwm_range(cooling_pkg, tmp_path):
    fan_a = chip(tmp_path, 3, "fan_a")
    fan = cooling_pkg["backends"].HwmonFan(str(tmp_path / "hwmon"), "fan_a/pwm1", {})
    fan.write(150)  # a min_duty of 150 once wrote 382 to a 0-255 file; the policy refuses it, the writer bounds it
    assert pwm(fan_a) == 255


def test_check_actions_names_a_program_that_does_not_resolve(cooling_pkg, tmp_path):
    config = config_for(tmp_path, HWMON_GROUPS, bmc={"redfish": {"base_url": "https://192.0.2.10"}})
    config["liquid"] = {"leak_detection_uris": ["/redfish/v1/Chassis/1/ThermalSubsystem/LeakDetection"], "leak_action": "alert",
                        "alert_command": ["/opt/nowhere/page-oncall", "--critical"]}
    assert cooling_pkg["cooling_policy"].policy_problems(config) == []
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    env = dict(os.environ, PYTHONPATH=str(cooling_pkg["lib"]))
    command = [sys.executable, "-m", "gpufabric_cooling", "check-actions", str(path)]
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert result.returncode == 1
    assert "liquid.alert_command: /opt/nowhere/page-oncall is not an executable on this host" in result.stderr
    config["liquid"]["alert_command"] = ["/bin/sh", "-c", "true"]
    path.write_text(json.dumps(config))
    assert subprocess.run(command, capture_output=True, text=True, env=env, check=False).returncode == 0


def test_run_writes_the_record_before_it_lowers_any_fan(cooling_pkg, tmp_path):
    fan_a, fan_b = chip(tmp_path, 3, "fan_a"), chip(tmp_path, 5, "fan_b")
    config = config_for(tmp_path, HWMON_GROUPS)
    config_path, record_path = tmp_path / "config.json", tmp_path / "state" / "failsafe.record"
    config_path.write_text(json.dumps(config))
    env = dict(os.environ, PYTHONPATH=str(cooling_pkg["lib"]))
    process = subprocess.Popen([sys.executable, "-m", "gpufabric_cooling", "run", str(config_path), "--failsafe-record", str(record_path)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while pwm(fan_a) != round(20 * 255 / 100) and time.monotonic() < deadline:
            assert pwm(fan_a) in (77, round(20 * 255 / 100))
            time.sleep(0.1)
        assert pwm(fan_a) == round(20 * 255 / 100)  # 40 C on the curve: 20 %
        groups = [json.loads(line)["group"] for line in record_path.read_text().splitlines() if not line.startswith("#")]
        assert groups == ["chassis", "gpu_tray"]
        assert record_path.stat().st_mtime_ns <= (fan_a / "pwm1").stat().st_mtime_ns
    finally:
        process.terminate()
        unused, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert (pwm(fan_a), pwm(fan_b)) == (255, 255)
